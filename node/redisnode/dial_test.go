package redisnode_test

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/fakeresp"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// Nodes built from a list, a file and REDLOCK_NODES lock on real servers,
// with the safe settings on every client.
func TestDialLocksOnRealNodes(t *testing.T) {
	c := redistest.StartT(t, 3)
	list := strings.Join(c.Addrs(), ",")
	file := filepath.Join(t.TempDir(), "nodes")
	content := "# lock nodes\n" + strings.Join(c.Addrs(), "\n") + "\n\n"
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("REDLOCK_NODES", " "+strings.ReplaceAll(list, ",", " , ")+" ")
	for name, dial := range map[string]func() (redisnode.Nodes, error){
		"list": func() (redisnode.Nodes, error) { return redisnode.Dial(list) },
		"file": func() (redisnode.Nodes, error) { return redisnode.DialFile(file) },
		"env":  func() (redisnode.Nodes, error) { return redisnode.DialEnv() },
	} {
		t.Run(name, func(t *testing.T) {
			nodes, err := dial()
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := nodes.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}()
			if len(nodes) != 3 {
				t.Fatalf("%d nodes, want 3", len(nodes))
			}
			for i, n := range nodes {
				if n.Name() != c.Addrs()[i] {
					t.Errorf("node %d is %s, want %s", i, n.Name(), c.Addrs()[i])
				}
				o := n.(*redisnode.Node).Client().(*redis.Client).Options()
				if o.MaxRetries != 0 || o.DialerRetries != 1 || !o.ContextTimeoutEnabled || o.Dialer == nil {
					t.Errorf("node %s: MaxRetries %d, DialerRetries %d, ContextTimeoutEnabled %v, Dialer set %v; want 0 (none), 1, true, true",
						n.Name(), o.MaxRetries, o.DialerRetries, o.ContextTimeoutEnabled, o.Dialer != nil)
				}
			}
			locks, err := redlock.New(nodes)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = locks.Close() }()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang guard
			defer cancel()
			l, err := locks.Acquire(ctx, "dial-"+name, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Empty lists, one node, malformed and repeated addresses are refused with
// the sentinel of each case, and no message shows a password.
func TestDialRefusesBadLists(t *testing.T) {
	for _, tc := range []struct {
		list string
		want error
	}{
		{"", redisnode.ErrNoNodes},
		{" , ,", redisnode.ErrNoNodes},
		{"127.0.0.1:6379", redisnode.ErrSingleNode},
		{"127.0.0.1:1,localhost", redisnode.ErrBadAddress},
		{"127.0.0.1:1,127.0.0.1:", redisnode.ErrBadAddress},
		{"127.0.0.1:1,127.0.0.1:http", redisnode.ErrBadAddress},
		{"127.0.0.1:1,127.0.0.1:70000", redisnode.ErrBadAddress},
		{"127.0.0.1:1,127.0.0.1:1", redisnode.ErrBadAddress},
		{"127.0.0.1:1,redis://[::1", redisnode.ErrBadAddress},
		{"127.0.0.1:1,user:s3cret@127.0.0.1:2", redisnode.ErrBadAddress},
		{"127.0.0.1:1,redis://user:s3cret@127.0.0.1:2/notanumber", redisnode.ErrBadAddress},
		{"127.0.0.1:1 127.0.0.1:2", redisnode.ErrBadAddress}, // spaces do not separate
	} {
		nodes, err := redisnode.Dial(tc.list)
		if !errors.Is(err, tc.want) || nodes != nil {
			t.Errorf("Dial(%q) = %d nodes, %v; want %v", tc.list, len(nodes), err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Dial(%q): %q shows the password", tc.list, err)
		}
	}
	nodes, err := redisnode.Dial("127.0.0.1:6379", redisnode.AllowSingleNode())
	if err != nil || len(nodes) != 1 {
		t.Errorf("one node with AllowSingleNode: %d nodes, %v", len(nodes), err)
	}
	_ = nodes.Close()

	t.Setenv("REDLOCK_NODES", "")
	if _, err := redisnode.DialEnv(); !errors.Is(err, redisnode.ErrNoNodes) || !strings.Contains(err.Error(), "REDLOCK_NODES") {
		t.Errorf("DialEnv without REDLOCK_NODES: %v, want ErrNoNodes naming the variable", err)
	}
	empty := filepath.Join(t.TempDir(), "nodes")
	if err := os.WriteFile(empty, []byte("# none yet\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := redisnode.DialFile(empty); !errors.Is(err, redisnode.ErrNoNodes) {
		t.Errorf("DialFile of a file without nodes: %v, want ErrNoNodes", err)
	}
	if _, err := redisnode.DialFile(empty + ".missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("DialFile of a missing file: %v, want fs.ErrNotExist", err)
	}
}

// With every node refusing connections, Acquire gives up after the lock's
// own attempts: go-redis adds no dials (nor backoff) of its own.
func TestDialedNodesGiveUpWithTheLock(t *testing.T) {
	var addrs []string
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, ln.Addr().String())
		_ = ln.Close() // nothing listens: connections are refused
	}
	var mu sync.Mutex
	dials := map[string]int{}
	nodes, err := redisnode.Dial(strings.Join(addrs, ","), redisnode.WithDialHook(func(addr string) {
		mu.Lock()
		dials[addr]++
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = nodes.Close() }()
	const retries = 4
	locks, err := redlock.New(nodes, redlock.WithRetry(retry.Constant(retries, 10*time.Millisecond, 0)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = locks.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // hang guard
	defer cancel()
	_, err = locks.Acquire(ctx, "refused", time.Second)
	if !errors.Is(err, redlock.ErrQuorumUnreachable) {
		t.Fatalf("Acquire = %v, want ErrQuorumUnreachable", err)
	}
	mu.Lock()
	defer mu.Unlock()
	// Each attempt asks each node once, and each request dials once; the
	// client also asks each node who it is and subscribes to its releases
	// (13 dials in all here). go-redis's own retries would dial 4 to 5
	// times per request (56 here).
	limit := 3 * (retries + 1)
	for _, a := range addrs {
		if dials[a] == 0 || dials[a] > limit {
			t.Errorf("node %s dialled %d times; want 1 to %d (about one per request of the lock's %d attempts)", a, dials[a], limit, retries+1)
		}
	}
}

// A node that announces a huge reply fails alone: the process survives and
// the other nodes carry the lock.
func TestDialedNodesBoundReplies(t *testing.T) {
	c := redistest.StartT(t, 2)
	srv, err := fakeresp.Start(fakeresp.Lying("", fakeresp.Fault{Reply: []byte("$100000000000000\r\n")}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	nodes, err := redisnode.Dial(strings.Join(append(c.Addrs(), srv.Addr()), ","))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = nodes.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang guard
	defer cancel()
	_, err = nodes[2].(*redisnode.Node).Inspect(ctx, "lock:{k}")
	if !errors.Is(err, node.ErrReplyTooLong) {
		t.Fatalf("the lying node's Inspect = %v, want ErrReplyTooLong", err)
	}
}

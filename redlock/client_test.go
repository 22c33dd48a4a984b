package redlock_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/redis/go-redis/v9"
)

// silentListener accepts connections and never reads or answers them: a
// node that is up at the TCP level and silent above it. It closes them at
// the test's end.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// readmeNode is a node over a go-redis client set up as the README shows.
func readmeNode(t *testing.T, addr string) node.Node {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		Dialer:                redisnode.BoundedDialer(nil, nil),
	})
	t.Cleanup(func() { _ = rdb.Close() })
	return redisnode.New(rdb)
}

// Close returns within about the node timeout whatever a node does: a
// node that accepts connections and never answers holds neither the
// first-contact identity check nor the release subscription past it.
func TestCloseIsNotHeldBySilentNode(t *testing.T) {
	const nodeTimeout = 200 * time.Millisecond
	const bound = 1500 * time.Millisecond // the silent node held Close 2s to 5s
	cases := []struct {
		name string
		use  func(t *testing.T, c *redlock.Client, key string)
	}{
		{"after first contact", func(t *testing.T, c *redlock.Client, key string) {
			l, err := c.Acquire(ctxFor(t), key, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Release(ctxFor(t)); err != nil {
				t.Fatal(err)
			}
		}},
		{"after Released", func(t *testing.T, c *redlock.Client, key string) {
			ctx, cancel := context.WithCancel(ctxFor(t))
			defer cancel()
			if _, err := c.Released(ctx, key); err != nil {
				t.Fatal(err)
			}
		}},
		{"with a waiting Acquire", func(t *testing.T, c *redlock.Client, key string) {
			l, err := c.Acquire(ctxFor(t), key, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = l.Release(ctxFor(t)) }()
			ctx, cancel := context.WithTimeout(ctxFor(t), 300*time.Millisecond)
			defer cancel()
			if _, err := c.Acquire(ctx, key, 5*time.Second); err == nil {
				t.Fatal("a second Acquire got a held lock")
			}
		}},
	}
	cl := startCluster(t, 2)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nodes := []node.Node{readmeNode(t, cl.Nodes()[0].Addr()), readmeNode(t, cl.Nodes()[1].Addr()), readmeNode(t, silentListener(t))}
			c, err := redlock.New(nodes, redlock.WithNodeTimeout(nodeTimeout))
			if err != nil {
				t.Fatal(err)
			}
			tc.use(t, c, uniqueKey(t))
			began := time.Now()
			done := make(chan struct{})
			go func() {
				defer close(done)
				_ = c.Close()
			}()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatal("Close hung for a minute")
			}
			took := time.Since(began)
			t.Logf("Close took %v", took)
			if took > bound {
				t.Errorf("Close took %v with a silent node and node timeout %v; want under %v", took, nodeTimeout, bound)
			}
		})
	}
}

// NewLocal is a single memory node and says so once in the log.
func TestNewLocalWarnsOnce(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	c, err := redlock.NewLocal(redlock.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t)
	for i := 0; i < 3; i++ {
		if _, err := c.TryDo(ctx, uniqueKey(t), time.Second, func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Count(buf.String(), "local mode"); got != 1 || !strings.Contains(buf.String(), "level=WARN") {
		t.Fatalf("log %q: want one warning", buf.String())
	}
	if len(c.Nodes()) != 1 {
		t.Fatalf("%d nodes", len(c.Nodes()))
	}
}

package rueidisnode_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/rueidisnode"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newRueidis is a rueidis client to one node, closed with the test.
func newRueidis(t testing.TB, addr string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{addr},
		ForceSingleClient: true,
		DisableCache:      true,
		Dialer:            rueidisDialer(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func rueidisDialer() (d net.Dialer) {
	d.Timeout = 500 * time.Millisecond
	return d
}

// nodesOf is one rueidis Node per server of cl.
func nodesOf(t *testing.T, cl *redistest.Cluster) []redlock.Node {
	t.Helper()
	var nodes []redlock.Node
	for _, a := range cl.Addrs() {
		nodes = append(nodes, rueidisnode.New(newRueidis(t, a)))
	}
	return nodes
}

// newClient is a redlock Client over nodes, closed with the test.
func newClient(t *testing.T, nodes []redlock.Node, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var keySeq atomic.Int64

func uniqueKey(t *testing.T) string {
	return fmt.Sprintf("rueidisnode:%s:%d:%d", t.Name(), time.Now().UnixNano(), keySeq.Add(1))
}

// await polls cond until it holds or the deadline passes.
func await(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// eventCounter counts a Client's events by kind.
type eventCounter struct {
	mu     sync.Mutex
	counts map[redlock.EventKind]int
}

func (e *eventCounter) Observe(ev redlock.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counts == nil {
		e.counts = map[redlock.EventKind]int{}
	}
	e.counts[ev.Kind]++
}

func (e *eventCounter) get(k redlock.EventKind) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.counts[k]
}

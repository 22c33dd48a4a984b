package rueidisnode_test

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/internal/fakeresp"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/rueidisnode"
)

// Two real nodes and one that answers every lock command badly, in each
// way of fakeresp (a reply too many among them): every cycle acquires and
// releases on the majority, the liar fails alone with a node error, and
// rueidis never panics on its own goroutine, which would end the process.
func TestLyingNodeFailsAlone(t *testing.T) {
	real := redistest.StartT(t, 2)
	for _, f := range fakeresp.Faults {
		t.Run(f.Name, func(t *testing.T) {
			srv, err := fakeresp.Start(fakeresp.Lying("liar-"+f.Name, f))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Close() })
			liar := rueidisnode.New(boundedRueidis(t, srv.Addr()))
			seen := &nodeFailures{}
			c := newClient(t, append(nodesOf(t, real), node.Node(liar)), redlock.WithObserver(seen))
			ctx := ctxFor(t)
			for range 3 {
				l, err := c.Acquire(ctx, lockKey(t), 10*time.Second)
				if err != nil {
					t.Fatalf("acquire: %v", err)
				}
				if err := l.Release(ctx); err != nil {
					t.Fatalf("release: %v", err)
				}
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if seen.of(liar.Name()) == 0 {
				t.Errorf("no node error reported for a node that answers %q", f.Name)
			}
		})
	}
}

// boundedRueidis is a rueidis client to addr dialing with BoundedDial,
// closed with the test.
func boundedRueidis(t testing.TB, addr string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{addr},
		ForceSingleClient: true,
		DisableCache:      true,
		DisableRetry:      true,
		Dialer:            net.Dialer{Timeout: 5 * time.Second},
		DialCtxFn:         rueidisnode.BoundedDial,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// nodeFailures counts the per-node errors a client reports, by node name.
type nodeFailures struct {
	mu   sync.Mutex
	errs map[string]int
}

func (n *nodeFailures) Observe(e observe.Event) {
	if e.Kind != observe.Node || e.Err == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.errs == nil {
		n.errs = map[string]int{}
	}
	n.errs[e.Node]++
}

func (n *nodeFailures) of(name string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.errs[name]
}

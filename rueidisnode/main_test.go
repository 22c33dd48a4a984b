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

	"github.com/quorumlock/quorumlock/internal/defaults"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/rueidisnode"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newRueidis is a rueidis client to one node, closed with the test. It
// dials with BoundedDial, so that every test checks that the bound never
// refuses what a real server sends.
func newRueidis(t testing.TB, addr string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{addr},
		ForceSingleClient: true,
		DisableCache:      true,
		Dialer:            net.Dialer{Timeout: 500 * time.Millisecond},
		DialCtxFn:         rueidisnode.BoundedDial,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func ctxFor(t *testing.T) context.Context { return ctxWithin(t, 30*time.Second) }

// ctxWithin is the test's context with the hang guard d.
func ctxWithin(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

var keySeq atomic.Int64

func uniqueKey(t *testing.T) string {
	return fmt.Sprintf("rueidisnode:{%s:%d:%d}", t.Name(), time.Now().UnixNano(), keySeq.Add(1))
}

// await polls cond until it holds or the hang guard d passes.
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

// nodesOf is one rueidis node per server of cl, each over a client of its
// own closed with the test.
func nodesOf(t *testing.T, cl *redistest.Cluster) []node.Node {
	t.Helper()
	var nodes []node.Node
	for _, a := range cl.Addrs() {
		nodes = append(nodes, rueidisnode.New(newRueidis(t, a)))
	}
	return nodes
}

// newClient is a redlock Client over nodes, closed with the test: every
// Acquire opens release subscriptions, and goleak checks that Close ended
// them. Node timeouts are generous, so that a busy machine does not fail
// an operation that only needs to succeed (callers pass TTLs of 10 s or
// more when the TTL does not matter).
func newClient(t *testing.T, nodes []node.Node, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.New(nodes, append([]redlock.Option{redlock.WithNodeTimeout(2 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// lockKey is a key for a redlock Client, unique per call; the client names
// it defaults.KeyPrefix + "{" + key + "}" on the nodes (keyName).
func lockKey(t *testing.T) string {
	return fmt.Sprintf("rueidisnode:%s:%d:%d", t.Name(), time.Now().UnixNano(), keySeq.Add(1))
}

// keyName is the name a Client with the default prefix gives key on the
// nodes.
func keyName(key string) string { return defaults.KeyPrefix + "{" + key + "}" }

// tokensOn reads the value of name on every server of cl straight from
// Redis ("" where it is absent).
func tokensOn(t *testing.T, ctx context.Context, cl *redistest.Cluster, name string) []string {
	t.Helper()
	out := make([]string, 0, len(cl.Nodes()))
	for _, rc := range cl.Clients() {
		vals, err := rc.MGet(ctx, name).Result() // nil for a missing key, no redis.Nil
		if err != nil {
			t.Fatal(err)
		}
		v, _ := vals[0].(string)
		out = append(out, wire.ParseLockValue(v).Token)
	}
	return out
}

// eventCounter counts a Client's events by kind.
type eventCounter struct {
	mu     sync.Mutex
	counts map[observe.Kind]int
}

func (e *eventCounter) Observe(ev observe.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counts == nil {
		e.counts = map[observe.Kind]int{}
	}
	e.counts[ev.Kind]++
}

func (e *eventCounter) get(k observe.Kind) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.counts[k]
}

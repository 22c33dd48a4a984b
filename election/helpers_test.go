package election_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/election"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
)

// hangGuard bounds a test's waits: a hang guard only, never a verdict on
// speed.
const hangGuard = 3 * time.Minute

func ctxFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

func nodesOf(cl *redistest.Cluster) []node.Node {
	var nodes []node.Node
	for _, rc := range cl.Clients() {
		nodes = append(nodes, redisnode.New(rc))
	}
	return nodes
}

// newClient is a redlock client closed with the test. Node timeouts are
// generous: the machine is busy, and speed is not what is tested.
func newClient(t *testing.T, nodes []node.Node, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.New(nodes, append([]redlock.Option{redlock.WithNodeTimeout(500 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func newElection(t *testing.T, c *redlock.Client, name string, opts ...election.Option) *election.Election {
	t.Helper()
	e, err := election.New(c, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var seq atomic.Int64

func uniqueName(t *testing.T) string { return fmt.Sprintf("%s-%d", t.Name(), seq.Add(1)) }

// nextLeader reads ch until it reports a leader (skipping "none"), or fails
// the test when ch closes.
func nextLeader(t *testing.T, ch <-chan election.Leader) election.Leader {
	t.Helper()
	for l := range ch {
		if l.ID != "" {
			return l
		}
	}
	t.Fatal("Observe's channel closed before reporting a leader")
	return election.Leader{}
}

// Node is a node with every optional capability: the tests' wrappers embed
// it, so that they forward the capabilities of the node they wrap.
type Node interface {
	node.Node
	node.Inspector
	node.ForceReleaser
	node.Subscriber
}

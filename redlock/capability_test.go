package redlock_test

import (
	"errors"
	"testing"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
)

// bareNode has only the calls every lock needs: none of the optional
// capabilities of package node.
type bareNode struct{ node.Node }

// A node without Inspector, ForceReleaser or Subscriber still takes and
// releases locks; the administrative calls that need a capability fail
// with a per-node error wrapping errors.ErrUnsupported, never a panic.
func TestNodeWithoutCapabilitiesGetsTypedErrors(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	var nodes []node.Node
	for _, n := range nodesOf(cl) {
		nodes = append(nodes, bareNode{n})
	}
	c := newClient(t, nodes, redlock.WithNodeTimeout(testNodeTimeout))
	ctx := ctxFor(t)
	key := uniqueKey(t)

	l, err := c.TryAcquire(ctx, key, testNodeTimeout*3)
	if err != nil {
		t.Fatalf("acquire on nodes without capabilities: %v", err)
	}
	wantUnsupported := func(call string, err error) {
		t.Helper()
		var ne *redlock.NodeError
		if !errors.Is(err, errors.ErrUnsupported) || !errors.As(err, &ne) {
			t.Errorf("%s on nodes without the capability: %v, want a *NodeError wrapping errors.ErrUnsupported", call, err)
		}
	}
	_, err = c.Inspect(ctx, key)
	wantUnsupported("Inspect", err)
	_, err = c.ForceRelease(ctx, key, "")
	wantUnsupported("ForceRelease", err)
	listed := 0
	for _, err := range c.Locks(ctx, "*") {
		wantUnsupported("Locks", err)
		listed++
		break
	}
	if listed == 0 {
		t.Error("Locks on nodes without Inspector yielded nothing, want its error")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release on nodes without capabilities: %v", err)
	}
}

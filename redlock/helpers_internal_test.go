package redlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
)

// Node is a node with every optional capability: the tests' wrappers embed
// it, so that they forward the capabilities of the node they wrap.
type Node interface {
	node.Node
	node.Inspector
	node.ForceReleaser
	node.Subscriber
}

// stuck answers nothing until released, whatever the context says: a
// server that went silent behind a client that ignores deadlines.
type stuck struct {
	Node
	release chan struct{}
}

func (s stuck) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	<-s.release
	return node.AcquireReply{}, errors.New("released late")
}

func (s stuck) Release(ctx context.Context, a node.ReleaseArgs) (bool, error) {
	<-s.release
	return false, errors.New("released late")
}

// late delays every request by delay: a node far away.
type late struct {
	Node
	delay time.Duration
}

func (l late) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	time.Sleep(l.delay)
	return l.Node.Acquire(ctx, a)
}

func memNodes(n int) []*memnode.Node {
	out := make([]*memnode.Node, n)
	for i := range out {
		out[i] = memnode.New(string(rune('a' + i)))
	}
	return promoteMem(out...)
}

func asNodes(ms []*memnode.Node) []node.Node {
	out := make([]node.Node, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

func mustNew(t *testing.T, nodes []node.Node, opts ...Option) *Client {
	t.Helper()
	c, err := New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// promoteMem makes memory nodes vote, as nodes of a deployment that ran
// before the test (a new one learns until every node answered a round).
func promoteMem(ms ...*memnode.Node) []*memnode.Node {
	for _, m := range ms {
		s, _ := m.Learn(context.Background(), node.LearnArgs{Name: "x", Recovery: time.Hour})
		_, _ = m.Learn(context.Background(), node.LearnArgs{Name: "x", Recovery: time.Hour, Promote: s.ID})
	}
	return ms
}

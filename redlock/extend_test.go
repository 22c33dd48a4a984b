package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
)

var errExtendFails = errors.New("extend fails on this node")

// failingExtend is a real node whose extensions fail at once.
type failingExtend struct{ *redisnode.Node }

func (failingExtend) Extend(context.Context, []node.ExtendArgs) ([]node.ExtendResult, error) {
	return nil, errExtendFails
}

// laterExtend is a real node whose extensions are sent a moment late, so
// that the failing nodes' answers come first.
type laterExtend struct{ *redisnode.Node }

func (n laterExtend) Extend(ctx context.Context, ops []node.ExtendArgs) ([]node.ExtendResult, error) {
	select {
	case <-time.After(50 * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return n.Node.Extend(ctx, ops)
}

// TestEvictedHolderLearnsDespiteFailingMinority: after ForceRelease, the
// evicted holder's next Extend returns ErrLockLost when a majority refuses
// its token, also when the other nodes fail, and fail first: two failures of
// five are not "too many nodes failed", and the loss is final at once.
func TestEvictedHolderLearnsDespiteFailingMinority(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 5)
	var nodes []node.Node
	for i, rc := range cl.Clients() {
		if i < 3 {
			nodes = append(nodes, laterExtend{redisnode.New(rc)})
		} else {
			nodes = append(nodes, failingExtend{redisnode.New(rc)})
		}
	}
	c := newClient(t, nodes, redlock.WithNodeTimeout(testNodeTimeout))
	ctx := ctxFor(t)
	for range 3 {
		key := uniqueKey(t)
		l, err := c.TryAcquire(ctx, key, 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ForceRelease(ctx, key, ""); err != nil {
			t.Fatal(err)
		}
		err = l.Extend(ctx, 20*time.Second)
		if !errors.Is(err, redlock.ErrLockLost) || errors.Is(err, redlock.ErrQuorumUnreachable) {
			t.Fatalf("extend of the evicted holder: %v, want ErrLockLost (3 of 5 refuse its token)", err)
		}
		select {
		case <-l.Done():
		default:
			t.Fatal("Done is open after the extension found the lock lost")
		}
	}
}

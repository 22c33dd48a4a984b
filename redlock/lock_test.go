package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/redlock"
)

// Hold keeps fn's error, the loss and the release's failure apart, so a
// caller can log a failed release without failing the work.
func TestHoldReportsReleaseFailureApart(t *testing.T) {
	t.Parallel()
	nodes := []*memnode.Node{memnode.New("a"), memnode.New("b"), memnode.New("c")}
	c := newClient(t, []node.Node{nodes[0], nodes[1], nodes[2]})
	ctx := context.Background()
	l, err := c.Acquire(ctx, "hold", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := errors.New("work failed")
	fnErr, lostErr, releaseErr := l.Hold(ctx, func(ctx context.Context) error {
		if got, ok := redlock.LockFromContext(ctx); !ok || got != l {
			t.Error("fn's context does not carry the lock")
		}
		for _, n := range nodes[:2] {
			n.SetDown(true, false) // the release will not reach a majority
		}
		return want
	})
	if fnErr != want || lostErr != nil || !errors.Is(releaseErr, redlock.ErrQuorumUnreachable) {
		t.Fatalf("Hold = (%v, %v, %v); want fn's error, no loss, ErrQuorumUnreachable", fnErr, lostErr, releaseErr)
	}
	if err, _, _ := l.Hold(ctx, nil); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("Hold(nil fn) = %v", err)
	}
}

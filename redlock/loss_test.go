package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/extend"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/redlock"
)

// Once the lock was declared lost, Extend fails with
// ErrLockLost and does not move ValidUntil. Loss is final.
func TestExtendAfterLossFails(t *testing.T) {
	t.Parallel()
	_, c := start(t, 3, redlock.WithKeepAlive(extend.WithMaxHold(300*time.Millisecond)))
	ctx := ctxFor(t)
	l, err := c.TryAcquire(ctx, uniqueKey(t), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l.KeepAlive()
	<-l.Done() // the hold cap declares it lost while the nodes still hold it
	if !errors.Is(l.Err(), redlock.ErrLockLost) {
		t.Fatalf("Err = %v", l.Err())
	}
	vu := l.ValidUntil()
	if err := l.Extend(ctx, 10*time.Second); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Extend after loss = %v, want ErrLockLost", err)
	}
	if !l.ValidUntil().Equal(vu) || l.Remaining() != 0 {
		t.Fatalf("Extend after loss moved the validity: %s left", l.Remaining())
	}
	if err := l.Release(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Release after loss = %v, want ErrLockLost", err)
	}
}

// A lock that is only held (not kept) ends when its validity runs out: Done
// closes, Err wraps ErrLockLost, and Extend moves the end.
func TestDoneClosesWhenValidityEnds(t *testing.T) {
	t.Parallel()
	c := newClient(t, []node.Node{memnode.New("a"), memnode.New("b"), memnode.New("c")})
	ctx := ctxFor(t)
	l, err := c.TryAcquire(ctx, uniqueKey(t), 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	lctx, cancel := l.Context(ctx)
	defer cancel()
	time.Sleep(100 * time.Millisecond)
	if err := l.Extend(ctx, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	extended := l.ValidUntil()
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done never closed")
	}
	if time.Now().Before(extended) {
		t.Fatalf("Done closed %s before the extended validity ended", time.Until(extended))
	}
	if !errors.Is(l.Err(), redlock.ErrLockLost) {
		t.Fatalf("Err = %v, want ErrLockLost", l.Err())
	}
	<-lctx.Done()
	if !errors.Is(context.Cause(lctx), redlock.ErrLockLost) {
		t.Fatalf("context cause %v", context.Cause(lctx))
	}
}

// KeepAlive on memory nodes: the lock outlives its TTL; after a majority of
// nodes fail, Done closes a safety margin before the validity ends. On
// synctest's clock: on real time a starved watchdog let the 300ms TTL lapse.
func TestKeepAliveMemoryNodes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		nodes := []*memnode.Node{memnode.New("a"), memnode.New("b"), memnode.New("c")}
		c := newClient(t, []node.Node{nodes[0], nodes[1], nodes[2]}, redlock.WithKeepAlive(extend.WithSafetyMargin(50*time.Millisecond)))
		ctx := ctxFor(t)
		l, err := c.TryAcquire(ctx, uniqueKey(t), 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		stop := l.KeepAlive()
		defer stop()
		time.Sleep(time.Second)
		if l.Err() != nil || l.Remaining() == 0 {
			t.Fatalf("kept lock ended: %v", l.Err())
		}
		nodes[0].SetDown(true, false)
		nodes[1].SetDown(true, false)
		var vu time.Time
		for {
			select {
			case <-l.Done():
			default:
				vu = l.ValidUntil()
				time.Sleep(time.Millisecond)
				continue
			}
			break
		}
		if left := time.Until(vu); left <= 0 {
			t.Fatalf("Done closed %s after the validity ended", -left)
		}
		// One sentinel: a loss caused by failing nodes is a loss (the failure
		// is in the text), so a switch on errors.Is cannot misfile it.
		if !errors.Is(l.Err(), redlock.ErrLockLost) || errors.Is(l.Err(), redlock.ErrQuorumUnreachable) ||
			!strings.Contains(l.Err().Error(), "unreachable") {
			t.Fatalf("Err = %v, want ErrLockLost (only) naming the last failure", l.Err())
		}
		if err := l.Release(ctx); !errors.Is(err, redlock.ErrLockLost) && !errors.Is(err, redlock.ErrQuorumUnreachable) {
			t.Fatalf("Release of a lost lock: %v", err)
		}
	})
}

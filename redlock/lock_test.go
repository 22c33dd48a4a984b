package redlock_test

import (
	"context"
	"errors"
	"reflect"
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

// A lock's handle is safe to share: concurrent Extend, Release and reads
// race only in the way the API promises (exactly one Release wins).
func TestLockHandleIsSafeToShare(t *testing.T) {
	t.Parallel()
	_, c := start(t, 3)
	ctx := context.Background()
	l, err := c.TryAcquire(ctx, uniqueKey(t), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			_ = l.ValidUntil()
			_ = l.Remaining()
			if i%2 == 0 {
				_ = l.Extend(ctx, 5*time.Second)
				errs <- nil
				return
			}
			errs <- l.Release(ctx)
		}()
	}
	released := 0
	for range 16 {
		if err := <-errs; err == nil {
			released++
		} else if !errors.Is(err, redlock.ErrLockLost) {
			t.Fatal(err)
		}
	}
	if released != 8+1 { // 8 extends report nil, exactly one of 8 releases wins
		t.Fatalf("%d nil results, want 9 (8 extends + 1 release)", released)
	}
}

// TestHoldDoesNotRunFnOnAnEndedLock: Hold runs fn only while the lock is
// held. On a lock already released, or already expired, fn does not run,
// and the errors say why (ErrLockLost).
func TestHoldDoesNotRunFnOnAnEndedLock(t *testing.T) {
	t.Parallel()
	_, c := start(t, 3)
	ctx := ctxFor(t)

	released, err := c.TryAcquire(ctx, uniqueKey(t), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := released.Release(ctx); err != nil {
		t.Fatal(err)
	}
	expired, err := c.TryAcquire(ctx, uniqueKey(t), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	<-expired.Done() // not kept alive: it ends at its validity

	for name, l := range map[string]*redlock.Lock{"released": released, "expired": expired} {
		ran := false
		fnErr, lostErr, releaseErr := l.Hold(ctx, func(context.Context) error { ran = true; return nil })
		if ran {
			t.Errorf("%s: fn ran on a lock that had ended", name)
		}
		if err := errors.Join(fnErr, lostErr, releaseErr); !errors.Is(err, redlock.ErrLockLost) {
			t.Errorf("%s: Hold = (%v, %v, %v), want ErrLockLost", name, fnErr, lostErr, releaseErr)
		}
	}
}

// TestHoldAtLeastLeavesTheKeyUntilTheHoldEnds: a Release before the hold
// ends leaves the key on the nodes with the hold left as its TTL (not the
// lock's longer TTL), so another replica's attempt finds it held; the
// holder's lock has ended as released. Without a hold, Release frees the
// key at once.
func TestHoldAtLeastLeavesTheKeyUntilTheHoldEnds(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3)
	other := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(testNodeTimeout))
	ctx, key := ctxFor(t), uniqueKey(t)
	const ttl, hold = 10 * time.Minute, 5 * time.Minute
	l, err := c.Acquire(ctx, key, ttl)
	if err != nil {
		t.Fatal(err)
	}
	l.HoldAtLeast(hold)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(l.Err(), redlock.ErrReleased) {
		t.Fatalf("after Release the lock's Err is %v", l.Err())
	}
	info, err := c.Inspect(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Held || info.Remaining > hold || info.Remaining <= 0 {
		t.Fatalf("after an early Release: held %v, remaining %s (hold %s, ttl %s)", info.Held, info.Remaining, hold, ttl)
	}
	if _, err := other.TryAcquire(ctx, key, ttl); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("another client's attempt during the hold: %v", err)
	}
	if err := l.Release(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("a second Release: %v", err)
	}

	l2, err := c.Acquire(ctx, key+"-plain", ttl)
	if err != nil {
		t.Fatal(err)
	}
	l2.HoldAtLeast(hold)
	l2.HoldAtLeast(0) // turned off again
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	o, err := other.TryAcquire(ctx, key+"-plain", ttl)
	if err != nil {
		t.Fatalf("without a hold the key is free after Release: %v", err)
	}
	_ = o.Release(ctx)
}

// nilLockArg is the argument a nil *Lock's method gets for a parameter of
// type t; a new parameter type fails the test until it is added here.
func nilLockArg(t *testing.T, method string, typ reflect.Type) reflect.Value {
	t.Helper()
	switch typ {
	case reflect.TypeFor[context.Context]():
		return reflect.ValueOf(context.Background())
	case reflect.TypeFor[time.Duration]():
		return reflect.ValueOf(time.Second)
	case reflect.TypeFor[func(context.Context) error]():
		return reflect.ValueOf(func(context.Context) error {
			t.Errorf("%s ran fn on a nil *Lock", method)
			return nil
		})
	}
	t.Fatalf("%s: no argument for a %v; add one to nilLockArg", method, typ)
	return reflect.Value{}
}

// Every exported method of a nil *Lock (what a failed Acquire returns)
// returns an error wrapping ErrLockLost or a zero value, never panics: a
// Release deferred before Acquire's error is checked is harmless. The
// methods are found by reflection, so a new one without the guard fails.
func TestNilLockMethodsDoNotPanic(t *testing.T) {
	t.Parallel()
	var l *redlock.Lock
	v := reflect.ValueOf(l)
	typ := v.Type()
	if typ.NumMethod() < 15 {
		t.Fatalf("found %d methods of *Lock; want every exported one", typ.NumMethod())
	}
	testOnly := map[string]bool{"Token": true, "Unanswered": true} // export_test.go's
	for i := range typ.NumMethod() {
		m := typ.Method(i)
		if testOnly[m.Name] {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			var args []reflect.Value
			for j := 1; j < m.Type.NumIn(); j++ { // 0 is the receiver
				args = append(args, nilLockArg(t, m.Name, m.Type.In(j)))
			}
			var out []reflect.Value
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("%s on a nil *Lock panicked: %v", m.Name, p)
					}
				}()
				out = v.Method(i).Call(args)
			}()
			for k, o := range out {
				switch x := o.Interface().(type) {
				case error:
					if !errors.Is(x, redlock.ErrLockLost) && !(m.Name == "Hold" && k != 1) {
						t.Errorf("%s result %d = %v; want an error wrapping ErrLockLost", m.Name, k, x)
					}
				case <-chan struct{}:
					select {
					case <-x:
					default:
						t.Errorf("%s: channel not closed", m.Name)
					}
				case context.Context:
					if !errors.Is(context.Cause(x), redlock.ErrLockLost) {
						t.Errorf("%s: context's cause %v; want ErrLockLost", m.Name, context.Cause(x))
					}
				case context.CancelFunc:
					x()
				case func():
					x()
				case nil:
				default:
					if !o.IsZero() {
						t.Errorf("%s result %d = %v; want the zero value", m.Name, k, x)
					}
				}
			}
		})
	}
}

// Rules 6 and 7: a lock taken over by another holder can be neither
// extended nor released, and the other holder's keys stay.
func TestRuleTakenOverLockIsLost(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3, redlock.WithNodeTimeout(time.Second)) // a loaded machine meets it
	ctx := ctxFor(t)
	key := uniqueKey(t)
	a, err := c.TryAcquire(ctx, key, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	<-a.Done()                            // no keep-alive: it ends at its validity
	eventuallyFree(t, cl, c.KeyName(key)) // its keys expire soon after, on every node
	b, err := c.TryAcquire(ctx, key, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	settled(t, cl, c.KeyName(key), b.Token())
	if err := a.Extend(ctx, 5*time.Second); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("extend of taken-over lock: %v", err)
	}
	if err := a.Release(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("release of taken-over lock: %v", err)
	}
	if h := holders(t, cl, c.KeyName(key)); countEqual(h, b.Token()) != 3 {
		t.Fatalf("the new holder's keys were touched: %v", h)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Rule 7: a lock that ended before Release is lost, even when too many
// nodes fail for the cleanup to reach a majority (the answer must not turn
// into ErrQuorumUnreachable, which invites a retry of a lock that is gone).
func TestReleaseOfEndedLockWithFailingNodesIsLost(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3, redlock.WithNodeTimeout(2*time.Second)) // a loaded machine meets it
	ctx := ctxFor(t)
	l, err := c.TryAcquire(ctx, uniqueKey(t), 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	<-l.Done() // no keep-alive: it ends at its validity
	for _, n := range cl.Nodes()[:2] {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	err = l.Release(ctx)
	if !errors.Is(err, redlock.ErrLockLost) || errors.Is(err, redlock.ErrQuorumUnreachable) {
		t.Fatalf("release of an ended lock with 2 of 3 nodes down: %v, want ErrLockLost only", err)
	}
}

// Rule 7: release is not repeatable and says so.
func TestRuleReleaseTwiceIsLost(t *testing.T) {
	t.Parallel()
	_, c := start(t, 3, redlock.WithNodeTimeout(5*time.Second)) // a loaded machine meets it
	ctx := ctxFor(t)
	l, err := c.TryAcquire(ctx, uniqueKey(t), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("second release: %v, want ErrLockLost", err)
	}
	if err := l.Extend(ctx, 30*time.Second); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("extend after release: %v, want ErrLockLost", err)
	}
}

// Rule 7: with too few nodes reachable, release says which failed.
func TestRuleReleaseUnreachable(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3)
	ctx := ctxFor(t)
	l, err := c.TryAcquire(ctx, uniqueKey(t), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = cl.Nodes()[1].Kill()
	_ = cl.Nodes()[2].Kill()
	err = l.Release(ctx)
	var ne *redlock.NodeError
	if !errors.Is(err, redlock.ErrQuorumUnreachable) || !errors.As(err, &ne) || ne.Op != "release" {
		t.Fatalf("release with 2 of 3 nodes dead: %v, want ErrQuorumUnreachable with NodeError", err)
	}
}

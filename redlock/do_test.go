package redlock_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/extend"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// Do keeps the lock for twice its TTL while fn runs; another client
// cannot take it meanwhile, and it is free once Do returns.
func TestDoKeepsLockAliveBeyondTTL(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3)
	other := newClient(t, nodesOf(cl), redlock.WithRetry(retry.Never()))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	const ttl = 3 * time.Second
	var stolen, tries int
	err := c.Do(ctx, key, ttl, func(ctx context.Context) error {
		l, ok := redlock.LockFromContext(ctx)
		if !ok || l.Fence() == 0 {
			return errors.New("no lock in fn's context")
		}
		deadline := time.Now().Add(2 * ttl)
		for time.Now().Before(deadline) {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			tries++
			if ol, err := other.TryAcquire(ctx, key, ttl); err == nil {
				stolen++
				_ = ol.Release(ctx)
			}
			time.Sleep(50 * time.Millisecond)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if stolen > 0 || tries < 20 {
		t.Fatalf("other client took the lock %d times in %d tries during Do", stolen, tries)
	}
	if h := eventuallyFree(t, cl, c.KeyName(key)); countEqual(h, "") != 3 {
		t.Fatalf("after Do the nodes hold %v", h)
	}
	if n := c.KeptLocks(); n != 0 {
		t.Fatalf("%d locks still kept after Do", n)
	}
}

// Do cancels fn's context with cause ErrLockLost when a majority of nodes
// goes away, before the lock's validity ends.
func TestDoCancelsOnMajorityLoss(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"killed", "restarted-empty"} {
		t.Run(mode, func(t *testing.T) {
			cl, c := start(t, 3)
			ctx := ctxFor(t)
			key := uniqueKey(t)
			const ttl = 5 * time.Second
			type seen struct {
				cancelled  time.Time
				validUntil time.Time // the last one seen before the loss
				cause      error
			}
			var s seen
			err := c.Do(ctx, key, ttl, func(ctx context.Context) error {
				l, _ := redlock.LockFromContext(ctx)
				settled(t, cl, c.KeyName(key), l.Token())
				for _, i := range []int{0, 1} {
					var err error
					if mode == "killed" {
						err = cl.Nodes()[i].Kill()
					} else {
						err = cl.Nodes()[i].Restart(ctx)
					}
					if err != nil {
						return err
					}
				}
				tick := time.NewTicker(2 * time.Millisecond)
				defer tick.Stop()
				for {
					// The lock cuts its validity short once lost; read it
					// only while it is not known lost.
					if vu := l.ValidUntil(); l.Err() == nil {
						s.validUntil = vu
					}
					select {
					case <-ctx.Done():
						s.cancelled, s.cause = time.Now(), context.Cause(ctx)
						return ctx.Err()
					case <-tick.C:
					case <-time.After(3 * ttl):
						return errors.New("fn's context was never cancelled")
					}
				}
			})
			if !errors.Is(s.cause, redlock.ErrLockLost) {
				t.Fatalf("cause %v, want ErrLockLost", s.cause)
			}
			if !s.cancelled.Before(s.validUntil) {
				t.Fatalf("cancelled %s after the validity ended", s.cancelled.Sub(s.validUntil))
			}
			t.Logf("cancelled %s before the validity ended; cause: %v", s.validUntil.Sub(s.cancelled), s.cause)
			if !errors.Is(err, redlock.ErrLockLost) || !errors.Is(err, context.Canceled) {
				t.Fatalf("Do = %v, want the loss joined with fn's error", err)
			}
		})
	}
}

// Do releases the lock when fn panics, then panics again with the value.
func TestDoReleasesOnPanic(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want the panic of fn", r)
			}
		}()
		_ = c.Do(ctx, key, 5*time.Second, func(ctx context.Context) error {
			// Acquire returns at a majority; let the last node's write land
			// first, so that what is checked below is Do's release.
			l, _ := redlock.LockFromContext(ctx)
			settled(t, cl, c.KeyName(key), l.Token())
			panic("boom")
		})
		t.Fatal("Do returned after fn panicked")
	}()
	if h := eventuallyFree(t, cl, c.KeyName(key)); countEqual(h, "") != 3 {
		t.Fatalf("after the panic the nodes hold %v", h)
	}
	if n := c.KeptLocks(); n != 0 {
		t.Fatalf("%d locks still kept", n)
	}
}

// TryDo runs fn once, and returns (false, nil) while someone else holds it.
func TestTryDoReturnsFalseWhenHeld(t *testing.T) {
	t.Parallel()
	_, c := start(t, 3)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	l, err := c.TryAcquire(ctx, key, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ran, err := c.TryDo(ctx, key, 5*time.Second, func(context.Context) error {
		t.Error("fn ran while the lock was held")
		return nil
	})
	if ran || err != nil {
		t.Fatalf("TryDo = (%v, %v), want (false, nil)", ran, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	want := errors.New("job failed")
	ran, err = c.TryDo(ctx, key, 5*time.Second, func(context.Context) error { return want })
	if !ran || !errors.Is(err, want) {
		t.Fatalf("TryDo = (%v, %v), want (true, fn's error)", ran, err)
	}
}

// Auto-extension stops when Release returns: an extension that lands later
// would re-create the key (the extend script re-asserts missing keys). Many
// locks are extended continuously and released at random points of their
// rounds; afterwards no node holds any of them.
func TestNoExtensionAfterRelease(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	var nodes []node.Node
	for _, n := range nodesOf(cl) {
		nodes = append(nodes, delayedBatchNode{n.(*redisnode.Node), 15 * time.Millisecond})
	}
	// A threshold just under the TTL: every lock is extended on every tick.
	// The node timeout and TTL leave room for a loaded machine.
	c := newClient(t, nodes, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithKeepAlive(extend.WithThreshold(4950*time.Millisecond)),
		redlock.WithKeepAlive(extend.WithSafetyMargin(100*time.Millisecond)), redlock.WithKeepAlive(extend.WithTick(5*time.Millisecond)))
	ctx := ctxFor(t)
	const n = 200
	locks := make([]*redlock.Lock, n)
	for i := range locks {
		l, err := c.TryAcquire(ctx, uniqueKey(t), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		l.KeepAlive()
		locks[i] = l
	}
	time.Sleep(300 * time.Millisecond) // rounds are now in flight all the time
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, l := range locks {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			time.Sleep(time.Duration(i%37) * time.Millisecond)
			if err := l.Release(ctx); err != nil {
				t.Errorf("release: %v", err)
				return
			}
			// Release returns once a majority deleted (and a short linger
			// for the rest); a straggler's delete lands just after.
			if h := eventuallyFree(t, cl, c.KeyName(l.Key())); countEqual(h, "") != 3 {
				t.Errorf("after Release the nodes hold %v", h)
			}
			if l.Err() != redlock.ErrReleased {
				t.Errorf("Err after Release = %v", l.Err())
			}
		})
	}
	wg.Wait()
	time.Sleep(200 * time.Millisecond) // any straggling extension would have landed
	for _, l := range locks {
		if h := holders(t, cl, c.KeyName(l.Key())); countEqual(h, "") != 3 {
			t.Fatalf("an extension re-created %s after Release: %v", l.Key(), h)
		}
	}
	if k := c.KeptLocks(); k != 0 {
		t.Fatalf("%d locks still kept", k)
	}
}

// delayedBatchNode makes each batch slow, so that releases meet rounds in
// flight.
type delayedBatchNode struct {
	*redisnode.Node
	delay time.Duration
}

func (d delayedBatchNode) Extend(ctx context.Context, ops []node.ExtendArgs) ([]node.ExtendResult, error) {
	time.Sleep(d.delay)
	return d.Node.Extend(ctx, ops)
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

// WithMaxHold ends a kept lock at the cap even though it could be extended.
func TestDoMaxHold(t *testing.T) {
	t.Parallel()
	c := newClient(t, []node.Node{memnode.New("a")}, redlock.WithKeepAlive(extend.WithMaxHold(400*time.Millisecond)))
	ctx := ctxFor(t)
	began := time.Now()
	err := c.Do(ctx, uniqueKey(t), 300*time.Millisecond, func(ctx context.Context) error {
		<-ctx.Done()
		return nil
	})
	if !errors.Is(err, redlock.ErrLockLost) || !errors.Is(err, extend.ErrMaxHold) {
		t.Fatalf("Do = %v, want ErrLockLost and ErrMaxHold", err)
	}
	if held := time.Since(began); held < 400*time.Millisecond {
		t.Fatalf("ended after %s, before the cap", held)
	}
}

// NewLocal is a single memory node and says so once in the log.
func TestNewLocalWarnsOnce(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	c, err := redlock.NewLocal(redlock.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t)
	for i := 0; i < 3; i++ {
		if _, err := c.TryDo(ctx, uniqueKey(t), time.Second, func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Count(buf.String(), "local mode"); got != 1 || !strings.Contains(buf.String(), "level=WARN") {
		t.Fatalf("log %q: want one warning", buf.String())
	}
	if len(c.Nodes()) != 1 {
		t.Fatalf("%d nodes", len(c.Nodes()))
	}
}

func TestExtendOptionsValidated(t *testing.T) {
	t.Parallel()
	for name, opt := range map[string]redlock.Option{
		"negative threshold": redlock.WithKeepAlive(extend.WithThreshold(-time.Second)),
		"negative margin":    redlock.WithKeepAlive(extend.WithSafetyMargin(-time.Second)),
		"negative tick":      redlock.WithKeepAlive(extend.WithTick(-time.Second)),
		"negative max hold":  redlock.WithKeepAlive(extend.WithMaxHold(-time.Second)),
	} {
		if _, err := redlock.New([]node.Node{memnode.New("a")}, opt); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	_, err := redlock.New([]node.Node{memnode.New("a")},
		redlock.WithKeepAlive(extend.WithThreshold(time.Second)), redlock.WithKeepAlive(extend.WithSafetyMargin(2*time.Second)))
	if !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("margin above threshold: %v", err)
	}
	c := newClient(t, []node.Node{memnode.New("a")})
	if err := c.Do(ctxFor(t), "k", time.Second, nil); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("nil fn: %v", err)
	}
}

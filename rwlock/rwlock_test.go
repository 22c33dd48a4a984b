package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
	"github.com/quorumlock/quorumlock/rwlock"
)

const ttl = 10 * time.Second

// Readers share; a writer is refused while they hold, gets in after, and
// then refuses readers and writers. Real nodes.
func TestReadersShareWriterExcludes(t *testing.T) {
	_, c := start(t, 3)
	ctx, key := ctxFor(t), uniqueKey(t)
	r1 := mustLock(t)(c.TryRLock(ctx, key, ttl))
	r2 := mustLock(t)(c.TryRLock(ctx, key, ttl))
	if _, err := c.TryLock(ctx, key, ttl); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock while two readers hold: %v, want ErrNotAcquired", err)
	}
	for _, r := range []*redlock.Lock{r1, r2} {
		if err := r.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	w := mustLock(t)(c.TryLock(ctx, key, ttl))
	if _, err := c.TryRLock(ctx, key, ttl); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryRLock while a writer holds: %v, want ErrNotAcquired", err)
	}
	if _, err := c.TryLock(ctx, key, ttl); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("second TryLock while a writer holds: %v, want ErrNotAcquired", err)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := mustLock(t)(c.TryRLock(ctx, key, ttl))
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Release(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("second release of a reader: %v, want ErrLockLost", err)
	}
}

// mustLock adapts an acquisition's (lock, error) for one-line checks.
func mustLock(t *testing.T) func(*redlock.Lock, error) *redlock.Lock {
	return func(l *redlock.Lock, err error) *redlock.Lock {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
}

// Writers' fences grow; a reader's fence is at least the last writer's
// (more when a node that answered the writer late counted higher: the
// documented limit); the next writer's is above every reader's. Real nodes.
func TestFences(t *testing.T) {
	_, c := start(t, 3)
	ctx, key := ctxFor(t), uniqueKey(t)
	var last uint64 // the last writer's fence, then the largest reader's
	for range 3 {
		w := mustLock(t)(c.Lock(ctx, key, ttl))
		if w.Fence() <= last {
			t.Fatalf("writer fence %d, want above %d (the readers' and writers' before it)", w.Fence(), last)
		}
		last = w.Fence()
		_ = w.Release(ctx)
		r1 := mustLock(t)(c.RLock(ctx, key, ttl))
		r2 := mustLock(t)(c.RLock(ctx, key, ttl))
		if r1.Fence() < last || r2.Fence() < last {
			t.Fatalf("reader fences %d and %d, want at least the last writer's %d", r1.Fence(), r2.Fence(), last)
		}
		last = max(r1.Fence(), r2.Fence())
		_, _ = r1.Release(ctx), r2.Release(ctx)
	}
}

// The safety check on real nodes: clients of their own run readers and
// writers at random on one key; inside their critical sections no reader
// meets a writer, no two writers meet, writers' fences grow, and each
// reader's fence is at least the fence of the last writer that finished
// before it and below the fence of every writer that enters after it.
func TestNoReaderMeetsWriter(t *testing.T) {
	cl := startCluster(t, 3)
	ctx, key := ctxFor(t), uniqueKey(t)
	var (
		mu         sync.Mutex
		readers    int
		writers    int
		lastWriter uint64 // fence of the last writer that finished
		lastReader uint64 // largest fence of the readers that finished
		grants     [2]int
	)
	var errs []error
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, fmt.Errorf(format, args...))
	}
	enter := func(write bool, fence uint64) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case write && (readers > 0 || writers > 0):
			errs = append(errs, fmt.Errorf("writer (fence %d) entered with %d readers and %d writers", fence, readers, writers))
		case write && (fence <= lastWriter || fence <= lastReader):
			errs = append(errs, fmt.Errorf("writer fence %d not above the last writer's %d and the readers' %d", fence, lastWriter, lastReader))
		case !write && writers > 0:
			errs = append(errs, fmt.Errorf("reader entered with a writer"))
		case !write && fence < lastWriter:
			errs = append(errs, fmt.Errorf("reader fence %d, below the last writer's %d", fence, lastWriter))
		}
		if write {
			writers++
			grants[1]++
		} else {
			readers++
			grants[0]++
		}
	}
	leave := func(write bool, fence uint64) {
		mu.Lock()
		defer mu.Unlock()
		if write {
			writers--
			lastWriter = fence
		} else {
			readers--
			lastReader = max(lastReader, fence)
		}
	}
	const workers, rounds = 6, 15
	var wg sync.WaitGroup
	for i := range workers {
		c := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRetry(retry.Constant(1000, 5*time.Millisecond, 5*time.Millisecond)))
		wg.Go(func() {
			for j := range rounds {
				write := (i+j)%3 == 0
				do := c.RDo
				if write {
					do = c.Do
				}
				err := do(ctx, key, ttl, func(ctx context.Context) error {
					l, _ := redlock.LockFromContext(ctx)
					enter(write, l.Fence())
					time.Sleep(time.Duration(rand.N(3)) * time.Millisecond)
					leave(write, l.Fence())
					return nil
				})
				if err != nil {
					fail("worker %d round %d: %v", i, j, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if grants[0] == 0 || grants[1] == 0 {
		t.Fatalf("grants %v: want both readers and writers", grants)
	}
	t.Logf("%d reader and %d writer critical sections", grants[0], grants[1])
}

// Writer preference, counted: readers take turns hand over hand (each
// takes its next read lock before it drops the current one, so without
// writer preference some reader always holds the lock). Once the writer's
// first attempt was refused (its intent is then on a majority), a reader
// gets in only with an attempt already in flight, so the readers take at
// most a few more turns before the writer gets in. Counted from the
// writer's first refusal (seen through its Observer), never timed.
func TestWriterNotStarvedByReaders(t *testing.T) {
	cl := startCluster(t, 3)
	ctx, key := ctxFor(t), uniqueKey(t)
	opts := []redlock.Option{redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRetry(retry.Constant(100000, 5*time.Millisecond, 5*time.Millisecond))}
	// maxTurns: far above the readers' attempts in flight (one each), far
	// below what a stream of readers takes without writer preference.
	const readers, maxTurns = 4, 100
	var turns atomic.Int64 // reader acquisitions since the writer's first refusal
	var refused, stop atomic.Bool
	var started atomic.Int32 // readers holding their first lock
	var wg sync.WaitGroup
	for range readers {
		c := newClient(t, nodesOf(cl), opts...)
		wg.Go(func() {
			cur, err := c.RLock(ctx, key, ttl)
			if err != nil {
				t.Error(err) // not Fatal: another goroutine than the test's
				started.Add(1)
				return
			}
			started.Add(1)
			for !stop.Load() {
				next, err := c.TryRLock(ctx, key, ttl)
				if err != nil { // a writer holds or waits: let go, then wait our turn
					_ = cur.Release(ctx)
					next, err = c.RLock(ctx, key, ttl)
					if err != nil {
						t.Error(err)
						return
					}
				} else {
					_ = cur.Release(ctx)
				}
				if refused.Load() && turns.Add(1) > maxTurns {
					t.Errorf("the writer starved: %d reader turns after its first refusal", maxTurns)
					stop.Store(true)
				}
				cur = next
			}
			_ = cur.Release(ctx)
		})
	}
	w := newClient(t, nodesOf(cl), append(opts, redlock.WithObserver(observe.Func(func(e observe.Event) {
		if e.Kind == observe.Contended {
			refused.Store(true)
		}
	})))...)
	for started.Load() < readers { // from here on some reader always holds the lock
		time.Sleep(time.Millisecond)
	}
	l, err := w.Lock(ctx, key, ttl)
	got := turns.Load()
	stop.Store(true)
	if err != nil {
		wg.Wait()
		t.Fatalf("writer: %v after %d reader turns", err, got)
	}
	if !refused.Load() {
		t.Error("the writer was never refused, although readers held the lock")
	}
	_ = l.Release(ctx) // before the readers stop: they may be waiting for it
	wg.Wait()
	t.Logf("the writer got in %d reader turns after its first refusal (%d readers)", got, readers)
}

// Each reader and writer has its own expiry and keep-alive: held through
// Do/RDo until the watchdog extended it, each excludes the other side all
// along, and the work's context is not cancelled. Real nodes, with the
// tests' long node timeout; TestDoKeepsAliveMemory runs several TTLs on
// synctest's clock.
func TestDoKeepsAlive(t *testing.T) {
	_, c := start(t, 3)
	ctx, key := ctxFor(t), uniqueKey(t)
	checkKeptAlive(t, c, ctx, key, 5*time.Second, 1, func(time.Duration) { time.Sleep(20 * time.Millisecond) })
}

func TestDoKeepsAliveMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newClient(t, memoryNodes())
		checkKeptAlive(t, c, ctxFor(t), uniqueKey(t), time.Second, 5, time.Sleep)
	})
}

// checkKeptAlive runs RDo, then Do, on key for ttl, each until its lock
// was extended rounds times, checking the other side is refused after
// each extension.
func checkKeptAlive(t *testing.T, c *rwlock.Client, ctx context.Context, key string, ttl time.Duration, rounds int, pause func(time.Duration)) {
	t.Helper()
	for _, write := range []bool{false, true} {
		do, try := c.RDo, c.TryLock
		if write {
			do, try = c.Do, c.TryRLock
		}
		err := do(ctx, key, ttl, func(wctx context.Context) error {
			l, _ := redlock.LockFromContext(wctx)
			for range rounds { // counted by the lock's own extensions
				vu := l.ValidUntil()
				for !l.ValidUntil().After(vu) {
					if wctx.Err() != nil {
						return fmt.Errorf("work cancelled: %w", context.Cause(wctx))
					}
					pause(ttl / 50)
				}
				if _, err := try(ctx, key, ttl); !errors.Is(err, redlock.ErrNotAcquired) {
					return fmt.Errorf("other side while held (write=%v): %v, want ErrNotAcquired", write, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Loss: a reader whose nodes go away learns it through Done and Err
// (wrapping ErrLockLost) before its validity ends; so does a writer.
func TestLossSignal(t *testing.T) {
	for _, write := range []bool{false, true} {
		t.Run(fmt.Sprint("write=", write), func(t *testing.T) {
			cl, c := start(t, 3)
			ctx, key := ctxFor(t), uniqueKey(t)
			take := c.RLock
			if write {
				take = c.Lock
			}
			l := mustLock(t)(take(ctx, key, 3*time.Second))
			stop := l.KeepAlive()
			defer stop()
			for _, n := range cl.Nodes()[:2] {
				if err := n.Pause(); err != nil {
					t.Fatal(err)
				}
				defer func() { _ = n.Resume() }()
			}
			<-l.Done()
			if !errors.Is(l.Err(), redlock.ErrLockLost) {
				t.Fatalf("Err = %v, want ErrLockLost", l.Err())
			}
		})
	}
}

// Bad input: typed errors, no panic.
func TestBadInput(t *testing.T) {
	var nilRedis *redisnode.Node
	for what, nodes := range map[string][]node.Node{
		"no nodes":    nil,
		"nil node":    {memnode.New("a"), nil},
		"nil pointer": {memnode.New("a"), nilRedis},
		"duplicate":   {memnode.New("a"), memnode.New("a")},
	} {
		if _, err := rwlock.New(nodes); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("New with %s: %v, want ErrInvalidArgument", what, err)
		}
	}
	_, err := rwlock.New([]node.Node{memnode.New("a"), mutexOnly{memnode.New("b")}})
	if !errors.Is(err, node.ErrReadWriteUnsupported) || !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("New with a node without ReadWriter: %v, want ErrReadWriteUnsupported", err)
	}
	if _, err := rwlock.New([]node.Node{memnode.New("a")}, redlock.WithDriftFactor(2)); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("New with a bad option: %v, want ErrInvalidArgument", err)
	}
	c := newClient(t, []node.Node{memnode.New("a")})
	ctx := ctxFor(t)
	var nilCtx context.Context // a variable, so vet does not flag the nil literal
	for what, err := range map[string]error{
		"empty key":  second(c.RLock(ctx, "", time.Second)),
		"zero ttl":   second(c.Lock(ctx, "k", 0)),
		"nil ctx":    second(c.TryRLock(nilCtx, "k", time.Second)),
		"nil fn":     c.Do(ctx, "k", time.Second, nil),
		"nil fn (r)": c.RDo(ctx, "k", time.Second, nil),
	} {
		if !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", what, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// mutexOnly is a node that predates read-write locks.
type mutexOnly struct{ node.Node }

// A reader's fence is at least the last writer's also after every node
// lost its data (all restarted empty, real nodes): the reader starts the
// missing counter from the clock, as a writer does, instead of reading 0;
// the next writer counts on above the reader.
func TestReaderFenceAfterDataLoss(t *testing.T) {
	cl, c := start(t, 3)
	ctx, key := ctxFor(t), uniqueKey(t)
	w := mustLock(t)(c.Lock(ctx, key, ttl))
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	restartEmpty(t, cl)
	r := mustLock(t)(c.RLock(ctx, key, ttl))
	if r.Fence() < w.Fence() {
		t.Fatalf("reader after every node restarted empty: fence %d, below the writer's %d before the restart", r.Fence(), w.Fence())
	}
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
	w2 := mustLock(t)(c.Lock(ctx, key, ttl))
	if w2.Fence() <= r.Fence() {
		t.Fatalf("writer after the reader: fence %d, want above the reader's %d", w2.Fence(), r.Fence())
	}
	_ = w2.Release(ctx)
}

package semaphore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
	"github.com/quorumlock/quorumlock/semaphore"
)

// boundRun makes 3 clients x 4 goroutines on 5 real redis-server nodes
// take permits of a semaphore of slots slots, hold them briefly and
// release them, until total permits were granted. With faults, node 4 is
// killed after a quarter of them, node 3 paused (SIGSTOP) after half and
// resumed after five eighths, and node 4 restarted (empty) after three
// quarters, no sooner than the TTL after its kill (the delayed-restart
// rule). The faults follow the count of permits, not the clock. It returns
// the validity windows of the permits.
func boundRun(t *testing.T, slots, total int, faults bool) *windows {
	t.Helper()
	cl := redistest.StartT(t, 5)
	var nodes []node.Node
	for _, rc := range cl.Clients() {
		nodes = append(nodes, redisnode.New(rc))
	}
	const ttl = 2 * time.Second
	cs := newClients(t, nodes, 3, redlock.WithNodeTimeout(300*time.Millisecond),
		redlock.WithRetry(retry.Constant(1000, 50*time.Millisecond, 50*time.Millisecond)))
	ctx := ctxFor(t, 4*time.Minute)
	name := uniqueName(t)

	ws := &windows{}
	var granted atomic.Int64
	stop := make(chan struct{})
	var stopOnce sync.Once
	var wg sync.WaitGroup
	for g := range 12 {
		sem, err := semaphore.New(cs[g%3], name, slots)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if ctx.Err() != nil {
					return
				}
				p, err := sem.Acquire(ctx, ttl)
				if err != nil {
					continue // nodes down or contention outlasted the retries
				}
				from := time.Now()
				if granted.Add(1) >= int64(total) {
					stopOnce.Do(func() { close(stop) })
				}
				time.Sleep(5 * time.Millisecond)
				to := time.Now()
				if vu := p.ValidUntil(); vu.Before(to) {
					to = vu
				}
				ws.add(from, to)
				_ = p.Release(context.WithoutCancel(ctx))
			}
		})
	}
	if faults {
		at := func(frac float64) {
			for granted.Load() < int64(frac*float64(total)) && ctx.Err() == nil {
				time.Sleep(2 * time.Millisecond)
			}
		}
		nd := cl.Nodes()
		at(0.25)
		if err := nd[4].Kill(); err != nil {
			t.Error(err)
		}
		killed := time.Now()
		at(0.5)
		if err := nd[3].Pause(); err != nil {
			t.Error(err)
		}
		at(0.625)
		if err := nd[3].Resume(); err != nil {
			t.Error(err)
		}
		at(0.75)
		if err := nd[4].RestartAfter(ctx, ttl-time.Since(killed)); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("hang guard: %d of %d permits granted in 4 minutes", granted.Load(), total)
	}
	return ws
}

// Never more than N holders by validity windows while nodes are killed,
// paused and restarted under 12 competing goroutines.
func TestPermitsNeverExceedNUnderFaults(t *testing.T) {
	const n = 3
	ws := boundRun(t, n, 400, true)
	if d := ws.maxDepth(); d > n {
		t.Fatalf("%d permits valid at once, N = %d (%d permits)", d, n, ws.count())
	} else {
		t.Logf("%d permits, at most %d valid at once (N = %d)", ws.count(), d, n)
	}
}

// The check above can fail: a broken semaphore with N+1 slots, checked
// against N, is caught. Its N+1 permits are taken and held together, so the
// verdict does not depend on how busy the machine is.
func TestBoundCheckCatchesNPlusOneSlots(t *testing.T) {
	const n = 3
	cl := redistest.StartT(t, 3)
	var nodes []node.Node
	for _, rc := range cl.Clients() {
		nodes = append(nodes, redisnode.New(rc))
	}
	c := newClients(t, nodes, 1)[0]
	ctx := ctxFor(t, time.Minute)
	sem, err := semaphore.New(c, uniqueName(t), n+1)
	if err != nil {
		t.Fatal(err)
	}
	ws := &windows{}
	var held []*semaphore.Permit
	var from []time.Time
	for range n + 1 {
		p, err := sem.Acquire(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		held, from = append(held, p), append(from, time.Now())
	}
	for i, p := range held {
		to := time.Now()
		if vu := p.ValidUntil(); vu.Before(to) {
			to = vu
		}
		ws.add(from[i], to)
		_ = p.Release(ctx)
	}
	if d := ws.maxDepth(); d <= n {
		t.Fatalf("the check found at most %d permits at once with %d slots: it cannot tell N from N+1", d, n+1)
	}
}

package redlock_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// Mutual exclusion end to end: 3 clients x 8 goroutines on 5 nodes run 2,000
// critical sections that read a shared counter, sleep, and write it back. A
// lost update or an overlap means two holders at once. The verdict counts
// sections, not time: the context is only a hang guard, and a run that hits
// it says how far it got. Node timeouts and the TTL are generous, so that a
// holder delayed by a loaded machine does not outlive its lock.
//
// REDLOCK_TEST_BROKEN_QUORUM=1 gives each client its own 2 of the 5 nodes (a
// "quorum" of a minority), to show that the test catches a broken lock.
func TestMutualExclusionUnderContention(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 5)
	const clients, perClient, sections = 3, 8, 2000
	var cs []*redlock.Client
	for i := range clients {
		cs = append(cs, newClient(t, contentionNodes(cl, i), redlock.WithNodeTimeout(5*time.Second),
			redlock.WithRetry(retry.Constant(1_000_000, time.Millisecond, time.Millisecond))))
	}
	var (
		counter  int // deliberately unsynchronized: only the lock protects it
		inside   atomic.Int32
		overlaps atomic.Int32
		claimed  atomic.Int32
		done     atomic.Int32 // sections completed
		fences   []uint64
	)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	key := uniqueKey(t)
	var wg sync.WaitGroup
	for i := range clients * perClient {
		c := cs[i%clients]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for claimed.Add(1) <= sections {
				l, err := c.Acquire(ctx, key, 30*time.Second)
				if err != nil {
					if ctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				v := counter
				time.Sleep(50 * time.Microsecond)
				counter = v + 1
				fences = append(fences, l.Fence())
				done.Add(1)
				inside.Add(-1)
				if err := l.Release(context.WithoutCancel(ctx)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	n := int(done.Load())
	if overlaps.Load() != 0 || counter != n {
		t.Fatalf("mutual exclusion broken: %d overlapping critical sections; counter = %d after %d completed sections: %d lost updates",
			overlaps.Load(), counter, n, n-counter)
	}
	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			t.Fatalf("fence %d after %d at section %d", fences[i], fences[i-1], i)
		}
	}
	if n < sections {
		t.Fatalf("ran out of time (hang guard %s) after %d of %d sections; no overlap, no lost update, fences increasing", hangGuard, n, sections)
	}
}

// hangGuard bounds the contention tests: far above a loaded machine's run
// under -race, far below go test's -timeout.
const hangGuard = 8 * time.Minute

// contentionNodes is the nodes client i of TestMutualExclusionUnderContention
// uses: all of them, or with REDLOCK_TEST_BROKEN_QUORUM=1 two of its own, so
// that the clients' "majorities" do not intersect.
func contentionNodes(cl *redistest.Cluster, i int) []node.Node {
	nodes := nodesOf(cl)
	if os.Getenv("REDLOCK_TEST_BROKEN_QUORUM") != "1" {
		return nodes
	}
	return []node.Node{nodes[(2*i)%len(nodes)], nodes[(2*i+1)%len(nodes)]}
}

// Rule 8 under contention: 1,000 acquisitions by several clients, with
// single attempts that lose and leave the nodes' counters uneven, still get
// strictly increasing fences in acquisition order. Counted in acquisitions:
// the context is only a hang guard.
func TestFenceStrictlyIncreasesAcrossClients(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 5)
	var cs []*redlock.Client
	for range 4 {
		cs = append(cs, newClient(t, nodesOf(cl), redlock.WithNodeTimeout(5*time.Second)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	key := uniqueKey(t)
	var (
		mu      sync.Mutex
		fences  []uint64
		lost    atomic.Int32
		wg      sync.WaitGroup
		claimed atomic.Int32
	)
	for i := range 12 {
		c := cs[i%len(cs)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for claimed.Load() < 1000 {
				l, err := c.TryAcquire(ctx, key, 30*time.Second)
				if errors.Is(err, redlock.ErrNotAcquired) {
					lost.Add(1)
					continue
				}
				if err != nil {
					if ctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				claimed.Add(1)
				mu.Lock() // uncontended: the lock is ours; this only orders the slice for the race detector
				fences = append(fences, l.Fence())
				mu.Unlock()
				if err := l.Release(context.WithoutCancel(ctx)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			t.Fatalf("fence %d after %d at acquisition %d", fences[i], fences[i-1], i)
		}
	}
	if len(fences) < 1000 {
		t.Fatalf("ran out of time (hang guard %s) after %d of 1000 acquisitions (%d lost attempts); fences increasing", hangGuard, len(fences), lost.Load())
	}
	if lost.Load() == 0 {
		t.Log("no attempt lost: the counters never diverged in this run")
	}
	t.Logf("%d acquisitions, %d lost attempts, last fence %d", len(fences), lost.Load(), fences[len(fences)-1])
}

// The fence comes from the nodes, not from the client: a fresh client on
// the same nodes continues the sequence.
func TestFenceContinuesAcrossClients(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	ctx := context.Background()
	key := uniqueKey(t)
	var last uint64
	for range 3 {
		c := newClient(t, nodesOf(cl))
		l, err := c.TryAcquire(ctx, key, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if l.Fence() <= last {
			t.Fatalf("fence %d after %d", l.Fence(), last)
		}
		last = l.Fence()
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

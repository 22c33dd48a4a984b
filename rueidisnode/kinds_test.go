package rueidisnode_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/multilock"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/semaphore"
)

// A semaphore of 2 permits over rueidis nodes: two holders on distinct
// slots, the third refused, a blocked Acquire woken by a release.
func TestSemaphoreOverRueidis(t *testing.T) {
	cl := redistest.StartT(t, 3)
	nodes := nodesOf(t, cl)
	a, b := newClient(t, nodes), newClient(t, nodes)
	ctx := ctxWithin(t, hangGuard)
	name := "sem-" + time.Now().Format("150405.000000")
	semA, err := semaphore.New(a, name, 2)
	if err != nil {
		t.Fatal(err)
	}
	semB, _ := semaphore.New(b, name, 2)
	p1, err := semA.TryAcquire(ctx, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := semB.TryAcquire(ctx, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if p1.Slot() == p2.Slot() {
		t.Fatalf("two permits on slot %d", p1.Slot())
	}
	if _, err := semB.TryAcquire(ctx, 30*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("third permit of 2: %v, want ErrNotAcquired", err)
	}
	got := make(chan error, 1)
	var p3 *semaphore.Permit
	go func() {
		var err error
		p3, err = semB.Acquire(ctx, 30*time.Second)
		got <- err
	}()
	time.Sleep(200 * time.Millisecond) // let it wait; a release before is fine too
	if err := p1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if p3.Slot() != p1.Slot() {
		t.Fatalf("waiter on slot %d, freed %d", p3.Slot(), p1.Slot())
	}
	for _, p := range []*semaphore.Permit{p2, p3} {
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// Multi-key sets over rueidis nodes: overlapping sets from two clients,
// given in opposite orders, all complete, one holder per key at a time.
func TestMultilockOverRueidis(t *testing.T) {
	cl := redistest.StartT(t, 3)
	nodes := nodesOf(t, cl)
	clients := []*redlock.Client{newClient(t, nodes), newClient(t, nodes)}
	ctx := ctxWithin(t, hangGuard)
	k := uniqueKey(t)
	sets := [][]string{{k + ":a", k + ":b", k + ":c"}, {k + ":c", k + ":b"}}
	var mu sync.Mutex
	holders := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for range 10 {
				err := multilock.Do(ctx, clients[g%2], sets[g%2], 10*time.Second, func(ctx context.Context) error {
					set, _ := multilock.FromContext(ctx)
					mu.Lock()
					for _, key := range set.Keys() {
						if holders[key]++; holders[key] > 1 {
							mu.Unlock()
							return errors.New("two holders of " + key)
						}
					}
					mu.Unlock()
					time.Sleep(time.Millisecond)
					mu.Lock()
					for _, key := range set.Keys() {
						holders[key]--
					}
					mu.Unlock()
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

package locktest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Requests a pause held are applied on Resume one after the other, in the
// order they came (as a server reads its socket), not in the order the
// scheduler wakes their goroutines: a replayed schedule lands them alike.
func TestPauseAppliesHeldRequestsInArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := NewQuorum(t, 1)
		nd := q.Node(0)
		nd.Pause()
		var mu sync.Mutex
		var applied []int
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * time.Millisecond)
				_, _ = call(context.Background(), &link{srv: nd}, func(context.Context) (int, error) {
					mu.Lock()
					defer mu.Unlock()
					applied = append(applied, i)
					return i, nil
				})
			})
		}
		time.Sleep(time.Second)
		nd.Resume()
		wg.Wait()
		if !slices.IsSorted(applied) || len(applied) != 20 {
			t.Fatalf("applied in the order %v, want the order they came, 0 to 19", applied)
		}
	})
}

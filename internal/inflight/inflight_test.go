package inflight

import (
	"sync"
	"sync/atomic"
	"testing"
)

// Work added while Close waits (a call racing Close) is waited for too,
// and the race detector has nothing to say (a sync.WaitGroup would report
// an Add at zero concurrent with Wait).
func TestInFlightAddWhileWaiting(t *testing.T) {
	t.Parallel()
	var g Group
	var finished atomic.Int32
	release := make(chan struct{})
	g.Go(func() { <-release; finished.Add(1) })
	waited := make(chan struct{})
	go func() { g.Wait(); close(waited) }()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { g.Go(func() { <-release; finished.Add(1) }) })
	}
	wg.Wait()
	select {
	case <-waited:
		t.Fatal("Wait returned while work was still blocked")
	default:
	}
	close(release)
	<-waited
	if got := finished.Load(); got != 9 {
		t.Fatalf("Wait returned with %d of 9 pieces of work finished", got)
	}
	g.Wait() // nothing left: returns at once
}

package redlock

import (
	"sync"
	"testing"
)

// Work added while Close waits (a call racing Close) is waited for too,
// and the race detector has nothing to say (a sync.WaitGroup would report
// an Add at zero concurrent with Wait).
func TestInFlightAddWhileWaiting(t *testing.T) {
	var g inFlight
	release := make(chan struct{})
	g.Go(func() { <-release })
	waited := make(chan struct{})
	go func() { g.Wait(); close(waited) }()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { g.Go(func() {}) })
	}
	wg.Wait()
	close(release)
	<-waited
	g.Wait() // nothing left: returns at once
}

package redlock

import "sync"

// inFlight counts requests in flight and background cleanup, for Close to
// wait on. Unlike a sync.WaitGroup it may be added to while Close waits
// (a call racing Close, such as a watcher's Inspect): the client stays safe
// for concurrent use, and Close returns once the count is zero.
type inFlight struct {
	mu   sync.Mutex
	n    int
	idle *sync.Cond
}

func (g *inFlight) Add(delta int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n += delta
	if g.n == 0 && g.idle != nil {
		g.idle.Broadcast()
	}
}

func (g *inFlight) Done() { g.Add(-1) }

// Go runs f in a goroutine counted until it returns.
func (g *inFlight) Go(f func()) {
	g.Add(1)
	go func() {
		defer g.Done()
		f()
	}()
}

// Wait returns when nothing is in flight.
func (g *inFlight) Wait() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.idle == nil {
		g.idle = sync.NewCond(&g.mu)
	}
	for g.n > 0 {
		g.idle.Wait()
	}
}

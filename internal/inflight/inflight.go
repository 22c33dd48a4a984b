// Package inflight is what a client's Close waits for and cuts: the count
// of its requests in flight and background work (Group), and the context
// of the checks it makes for itself, which Close cancels (Closing).
package inflight

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/internal/guard"
)

// Group counts requests in flight and background cleanup, for Close to
// wait on. Unlike a sync.WaitGroup it may be added to while Close waits
// (a call racing Close, such as a watcher's Inspect): the client stays safe
// for concurrent use, and Close returns once the count is zero. Adding is
// one atomic operation; the mutex is taken only when the count reaches zero.
type Group struct {
	n    atomic.Int64
	mu   sync.Mutex
	idle *sync.Cond // on mu; made by the first Wait
}

func (g *Group) Add(delta int) {
	if g.n.Add(int64(delta)) == 0 {
		g.mu.Lock() // a Wait that saw the count above zero is in idle.Wait now
		if g.idle != nil {
			g.idle.Broadcast()
		}
		g.mu.Unlock()
	}
}

func (g *Group) Done() { g.Add(-1) }

// Go runs f in a goroutine counted until it returns.
func (g *Group) Go(f func()) {
	g.Add(1)
	go func() {
		defer g.Done()
		f()
	}()
}

// Wait returns when nothing is in flight.
func (g *Group) Wait() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.idle == nil {
		g.idle = sync.NewCond(&g.mu)
	}
	for g.n.Load() > 0 {
		g.idle.Wait()
	}
}

// GoGuarded is Go for work that no caller waits for (the cleanup of a
// decided call, say), which Close waits for: a panic in f is logged on
// logger, not fatal. Requests in it are bounded by their own node timeouts.
func (g *Group) GoGuarded(logger *slog.Logger, f func()) {
	g.Go(func() { guard.Log(logger, "redlock: background work", guard.Run(f)) })
}

// WaitFor is Wait for at most d; it reports whether nothing is in flight.
func (g *Group) WaitFor(d time.Duration) bool {
	if g.n.Load() == 0 {
		return true
	}
	idle := make(chan struct{})
	go func() { // ends once the count is zero, which bounded requests reach
		g.Wait()
		close(idle)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C:
		return false
	}
}

// errClosing ends the identity checks that a Close cuts.
var errClosing = errors.New("redlock: client closing")

// Closing is the context of the checks the client makes for itself (the
// identity of its nodes), which no caller waits for: Close cancels it, and
// the next check gets a new one, since the Client stays usable.
type Closing struct {
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// current returns the context that the next Close cancels.
func (s *Closing) current() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil {
		s.ctx, s.cancel = context.WithCancelCause(context.Background())
	}
	return s.ctx
}

// Cut cancels the current context.
func (s *Closing) Cut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		s.cancel(errClosing)
	}
	s.ctx, s.cancel = nil, nil
}

// Until returns parent, also cancelled by the next Cut.
func (s *Closing) Until(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(s.current(), func() { cancel(errClosing) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

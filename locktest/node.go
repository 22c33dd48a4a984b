package locktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/redlock"
)

// ErrCutOff is what a client cut off from a node gets from every request to
// it, at once, as from a refused connection.
var ErrCutOff = errors.New("locktest: client cut off from the node")

// Node is one memory server of a Quorum, with the faults a test turns on
// and off. Every control is safe to call from any goroutine, at any time.
type Node struct {
	mem *memnode.Node
	q   *Quorum

	mu     sync.Mutex
	resume chan struct{}    // non-nil while paused; closed by Resume
	queue  chan struct{}    // closed once the last request a pause held is applied
	slow   time.Duration    // added to every request
	offset time.Duration    // the server clock's distance from time.Now
	cut    map[int]struct{} // clients cut off, by their number in the quorum
	downs  int              // a schedule's stop faults in force (see down)

	late sync.WaitGroup // requests held back by a pause or a delay
}

// newNode returns a server of a deployment that has run before: it votes
// from the start (see node.Standing); RestartEmpty makes it learn.
func newNode(q *Quorum, name string) *Node {
	m := memnode.New(name)
	s, _ := m.Learn(context.Background(), node.LearnArgs{Name: name, Recovery: time.Hour})
	_, _ = m.Learn(context.Background(), node.LearnArgs{Name: name, Recovery: time.Hour, Promote: s.ID})
	return &Node{mem: m, q: q, cut: map[int]struct{}{}}
}

// Name is the node's name (its address in errors and logs).
func (n *Node) Name() string { return n.mem.Name() }

// Memory is the server itself, for reading its state (Inspect, Len); calls
// on it bypass the faults.
func (n *Node) Memory() *memnode.Node { return n.mem }

// Pause stops the server as SIGSTOP does: requests wait, and are applied
// when Resume is called, also those whose client has stopped waiting (they
// land late, as requests sitting in a socket buffer do).
func (n *Node) Pause() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.resume == nil {
		n.resume = make(chan struct{})
	}
}

// Resume ends a Pause; the requests that waited are applied.
func (n *Node) Resume() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.resume != nil {
		close(n.resume)
		n.resume = nil
	}
}

// Slow delays every request by d before the server applies it (0: no
// delay). A request whose client stops waiting is still applied, late.
func (n *Node) Slow(d time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.slow = max(d, 0)
}

// Stop makes the server refuse every request (memnode.ErrDown), keeping its
// data, as a crashed server behind a closed port; Start undoes it.
func (n *Node) Stop() { n.mem.SetDown(true, false) }

// Start ends a Stop (or finishes a restart).
func (n *Node) Start() { n.mem.SetDown(false, false) }

// RestartEmpty restarts the server at once without its data (no
// persistence): every lock, fence counter and tombstone on it is gone, and
// it sits out until it has kept its data for the clients' recovery period
// (redlock.WithRecoveryPeriod; with recovery off, a second holder may get
// a lock it held). Fences still grow.
func (n *Node) RestartEmpty() {
	n.mem.SetDown(true, true)
	n.mem.SetDown(false, false)
}

// JumpClock moves the server's clock by d (forward when positive): its keys
// expire by the jumped clock. The clients' clocks do not move.
func (n *Node) JumpClock(d time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.offset += d
	n.mem.SetClockOffset(n.offset)
}

// CutOff makes every request of client c to this node fail with ErrCutOff
// (a network partition between the two); Heal undoes it. c must come from
// the node's Quorum.Client; another client fails the test.
func (n *Node) CutOff(c *redlock.Client) { n.setCut(c, true) }

// Heal ends a CutOff of client c.
func (n *Node) Heal(c *redlock.Client) { n.setCut(c, false) }

func (n *Node) setCut(c *redlock.Client, cut bool) {
	id, ok := n.q.clientID(c)
	if !ok {
		n.q.t.Errorf("locktest: %s: the client is not one of this quorum's (make it with Quorum.Client)", n.Name())
		return
	}
	n.cutID(id, cut)
}

func (n *Node) cutID(id int, cut bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if cut {
		n.cut[id] = struct{}{}
	} else {
		delete(n.cut, id)
	}
}

// healAll ends every fault but a Stop and a clock jump.
func (n *Node) healAll() {
	n.Resume()
	n.Slow(0)
	n.mu.Lock()
	clear(n.cut)
	n.mu.Unlock()
}

// faults is what a request of client id meets.
func (n *Node) faults(id int) (cut bool, slow time.Duration, paused bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, cut = n.cut[id]
	return cut, n.slow, n.resume != nil
}

// arrive waits until a request can be applied: after the delay, and not
// while the server is paused. Requests a pause held are applied one after
// the other in the order they came, as a server reads its socket, so that
// a replayed schedule lands them alike; call applied once the request is.
func (n *Node) arrive(delay time.Duration) (applied func()) {
	if delay > 0 {
		time.Sleep(delay)
	}
	n.mu.Lock()
	if n.resume == nil {
		n.mu.Unlock()
		return func() {}
	}
	prev, mine := n.queue, make(chan struct{})
	n.queue = mine
	n.mu.Unlock()
	for {
		n.mu.Lock()
		ch := n.resume
		n.mu.Unlock()
		if ch == nil {
			break
		}
		<-ch
	}
	if prev != nil {
		<-prev
	}
	return func() { close(mine) }
}

// link is one client's way to one Node: the node.Node the client holds.
type link struct {
	srv *Node
	id  int // the client's number in the quorum
}

var _ node.ReadWriter = (*link)(nil)

// call applies op on the server after the faults in its way. A request
// held back by a pause or a delay is applied even when the caller stops
// waiting for it.
func call[T any](ctx context.Context, l *link, op func(context.Context) (T, error)) (T, error) {
	var zero T
	cut, slow, paused := l.srv.faults(l.id)
	if cut {
		return zero, fmt.Errorf("%s: %w", l.srv.Name(), ErrCutOff)
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if slow == 0 && !paused {
		return op(ctx)
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	late := context.WithoutCancel(ctx)
	l.srv.late.Go(func() {
		applied := l.srv.arrive(slow)
		v, err := op(late)
		applied()
		done <- result{v, err}
	})
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

func (l *link) Name() string { return l.srv.Name() }

func (l *link) Identify(ctx context.Context) (node.Identity, error) {
	return call(ctx, l, l.srv.mem.Identify)
}

func (l *link) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	return call(ctx, l, func(ctx context.Context) (node.AcquireReply, error) { return l.srv.mem.Acquire(ctx, a) })
}

func (l *link) Extend(ctx context.Context, ops []node.ExtendArgs) ([]node.ExtendResult, error) {
	return call(ctx, l, func(ctx context.Context) ([]node.ExtendResult, error) { return l.srv.mem.Extend(ctx, ops) })
}

func (l *link) Release(ctx context.Context, a node.ReleaseArgs) (bool, error) {
	return call(ctx, l, func(ctx context.Context) (bool, error) { return l.srv.mem.Release(ctx, a) })
}

func (l *link) RaiseFence(ctx context.Context, name, token string, fence uint64, retention time.Duration) (bool, error) {
	return call(ctx, l, func(ctx context.Context) (bool, error) {
		return l.srv.mem.RaiseFence(ctx, name, token, fence, retention)
	})
}

func (l *link) Learn(ctx context.Context, a node.LearnArgs) (node.Standing, error) {
	return call(ctx, l, func(ctx context.Context) (node.Standing, error) { return l.srv.mem.Learn(ctx, a) })
}

func (l *link) Inspect(ctx context.Context, name string) (node.Holding, error) {
	return call(ctx, l, func(ctx context.Context) (node.Holding, error) { return l.srv.mem.Inspect(ctx, name) })
}

func (l *link) Scan(ctx context.Context, a node.ScanArgs) (node.ScanPage, error) {
	return call(ctx, l, func(ctx context.Context) (node.ScanPage, error) { return l.srv.mem.Scan(ctx, a) })
}

func (l *link) ForceRelease(ctx context.Context, a node.ForceReleaseArgs) (bool, error) {
	return call(ctx, l, func(ctx context.Context) (bool, error) { return l.srv.mem.ForceRelease(ctx, a) })
}

// Subscribe is not subject to the faults: a waiter that hears no release
// falls back to polling, which the faults reach.
func (l *link) Subscribe(ctx context.Context, channel string, onRelease func(name, releaseID string), onState func(up bool, err error)) (func(), error) {
	return l.srv.mem.Subscribe(ctx, channel, onRelease, onState)
}

func (l *link) AcquireRW(ctx context.Context, mode node.Mode, a node.AcquireArgs) (node.AcquireReply, error) {
	return call(ctx, l, func(ctx context.Context) (node.AcquireReply, error) { return l.srv.mem.AcquireRW(ctx, mode, a) })
}

func (l *link) ExtendRW(ctx context.Context, mode node.Mode, ops []node.ExtendArgs) ([]node.ExtendResult, error) {
	return call(ctx, l, func(ctx context.Context) ([]node.ExtendResult, error) { return l.srv.mem.ExtendRW(ctx, mode, ops) })
}

func (l *link) ReleaseRW(ctx context.Context, mode node.Mode, a node.ReleaseArgs) (bool, error) {
	return call(ctx, l, func(ctx context.Context) (bool, error) { return l.srv.mem.ReleaseRW(ctx, mode, a) })
}

func (l *link) RaiseFenceRW(ctx context.Context, mode node.Mode, name, token string, fence uint64, retention time.Duration) (bool, error) {
	return call(ctx, l, func(ctx context.Context) (bool, error) {
		return l.srv.mem.RaiseFenceRW(ctx, mode, name, token, fence, retention)
	})
}

package recovery

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// NewKeeper returns the keeper of a client's learners: nodes, its recovery
// period, and the timeout of one request.
func NewKeeper(nodes []node.Node, period, timeout time.Duration) *Keeper {
	return &Keeper{nodes: nodes, period: period, timeout: timeout}
}

// learnEvery is how often a client asks a learning node to step, below
// node.LearnStep so that the node learns at its clock's rate.
const learnEvery = node.LearnStep / 2

// Keeper keeps the learning nodes a client saw moving: each is asked to
// step every learnEvery until it votes, or the client is closed.
type Keeper struct {
	nodes   []node.Node
	period  time.Duration // the client's recovery period
	timeout time.Duration // of one request
	// Hold is the longest hold the client knows of: every request carries it.
	Hold    Hold
	mu      sync.Mutex
	watched map[learnerKey]string // the lock name to ask with, by node and record
	running bool
	halt    chan struct{}
	done    sync.WaitGroup
}

type learnerKey struct {
	node  int
	scope string
}

// Watch adds node i's record (s.Scope), seen learning for name.
func (l *Keeper) Watch(i int, name string, s node.Standing) {
	if _, ok := l.nodes[i].(node.Learner); !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.watched == nil {
		l.watched = map[learnerKey]string{}
	}
	if l.halt == nil {
		l.halt = make(chan struct{})
	}
	l.watched[learnerKey{i, s.Scope}] = name
	if !l.running {
		l.running = true
		l.done.Add(1)
		go l.keep(l.halt)
	}
}

// keep asks each watched record to step every learnEvery, and forgets
// those that vote, until none is left or halt is closed.
func (l *Keeper) keep(halt chan struct{}) {
	defer l.done.Done()
	t := time.NewTicker(learnEvery)
	defer t.Stop()
	for {
		select {
		case <-halt:
			return
		case <-t.C:
		}
		l.mu.Lock()
		batch := make(map[learnerKey]string, len(l.watched))
		for k, name := range l.watched {
			batch[k] = name
		}
		l.mu.Unlock()
		for k, name := range batch {
			if l.step(k.node, name) {
				l.mu.Lock()
				delete(l.watched, k)
				l.mu.Unlock()
			}
		}
		l.mu.Lock()
		if len(l.watched) == 0 {
			l.running = false
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
	}
}

// step asks node i's record of name to step, and reports whether it votes.
func (l *Keeper) step(i int, name string) (votes bool) {
	s, err := l.learn(context.Background(), i, name, "")
	return err == nil && !Learning(s)
}

// Stop stops the asking (Close); a later round starts it again.
func (l *Keeper) Stop() {
	l.mu.Lock()
	if l.halt != nil {
		close(l.halt)
		l.halt = nil
	}
	l.running = false
	l.mu.Unlock()
	l.done.Wait()
}

// Promote makes the learning records of a new deployment vote: a round
// found every node learning, and won on them. Each record is promoted only
// if it is still the one the round saw (a node that lost its data again
// since keeps learning). Failures are left: the next such round promotes.
func (l *Keeper) Promote(ctx context.Context, name string, j *Judge) {
	learners := j.Learners()
	l.learnEach(ctx, name, func(i int) (string, bool) { s, ok := learners[i]; return s.ID, ok })
}

// Tell makes hold, a hold of name past the recovery period, the longest
// this client knows of, and tells every node before the hold is written,
// so that a node that loses its data later learns it from the others. A
// node that misses it learns it from the next request of a client that
// knows it. A hold no longer than the longest known needs no call: the
// acquisition's requests carried that one.
func (l *Keeper) Tell(ctx context.Context, name string, hold time.Duration) {
	if l.period <= 0 || hold <= max(l.period, l.Hold.Get()) {
		return
	}
	l.Hold.Raise(hold)
	l.learnEach(ctx, name, func(int) (string, bool) { return "", true })
}

// learnEach asks, at once, each node that ask selects, promoting the
// record it names ("": none), and returns when every answer is in (or
// its timeout ran out): no request of it is left in flight. Failures are
// left: a later round or request carries the same.
func (l *Keeper) learnEach(ctx context.Context, name string, ask func(i int) (promote string, ok bool)) {
	ctx = context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	for i := range l.nodes {
		if promote, ok := ask(i); ok {
			wg.Go(func() { _, _ = l.learn(ctx, i, name, promote) })
		}
	}
	wg.Wait()
}

// learn asks node i's record of name to step (or to vote, when promote
// names it), carrying the longest hold known, and raises that hold by the
// one the node reports. A node without node.Learner is not asked; its
// panic is its own failure.
func (l *Keeper) learn(ctx context.Context, i int, name, promote string) (s node.Standing, err error) {
	n, ok := l.nodes[i].(node.Learner)
	if !ok {
		return node.Standing{}, errors.ErrUnsupported
	}
	defer func() {
		if recover() != nil {
			s, err = node.Standing{}, errors.New("recovery: the node's Learn panicked")
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	s, err = n.Learn(ctx, node.LearnArgs{Name: name, Recovery: l.period, Promote: promote, Hold: l.Hold.Get()})
	l.Hold.Raise(s.Hold)
	return s, err
}

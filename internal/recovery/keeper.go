package recovery

import (
	"context"
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
	defer func() { _ = recover() }() // a node's panic is its own failure
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	s, err := l.nodes[i].(node.Learner).Learn(ctx, node.LearnArgs{Name: name, Recovery: l.period, Hold: l.Hold.Get()})
	l.Hold.Raise(s.Hold)
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
	var wg sync.WaitGroup
	for i, s := range j.Learners() {
		n, ok := l.nodes[i].(node.Learner)
		if !ok {
			continue
		}
		wg.Go(func() {
			defer func() { _ = recover() }() // a node's panic is its own failure
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
			defer cancel()
			_, _ = n.Learn(ctx, node.LearnArgs{Name: name, Recovery: l.period, Promote: s.ID, Hold: l.Hold.Get()})
		})
	}
	wg.Wait()
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
	var wg sync.WaitGroup
	for _, n := range l.nodes {
		n, ok := n.(node.Learner)
		if !ok {
			continue
		}
		wg.Go(func() {
			defer func() { _ = recover() }() // a node's panic is its own failure
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
			defer cancel()
			_, _ = n.Learn(ctx, node.LearnArgs{Name: name, Recovery: l.period, Hold: l.Hold.Get()})
		})
	}
	wg.Wait()
}

package redlock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/node"
)

// Recovery: a node that lost its data (a restart without persistence,
// FLUSHALL, a failover to an empty replica) would grant a key still held on
// the other nodes. Each node keeps one record of its standing
// (node.Standing; in a Redis Cluster one per hash slot), which it loses
// with its data: a node without it learns, and votes again once it has kept
// its data for the recovery period, counted by its own clock in steps of
// at most node.LearnStep. A learner's yes counts only when every node
// answered the round and none is a voter or a learner told of a hold: a
// new deployment, whose records the client then promotes
// (quorum.Votes.WithLearners). So a node that kept
// its data is always heard, however late it answers (the round waits for
// it, up to the node timeout), and no clock is compared across servers.
// While a node is learning, the client asks it every learnEvery, so that
// it learns at its clock's rate even when no lock is taken. A hold past
// the period (Lock.HoldAtLeast, a tick's records) is told to every node
// first, and every request carries the longest the client knows of
// (longestHold): a learner sits out that long too.

// checkRecoveryTTL refuses a TTL the recovery period does not cover.
func (c *config) checkRecoveryTTL(ttl time.Duration) error {
	if c.recovery > 0 && ttl > c.recovery {
		return invalidArg("ttl %s is longer than the recovery period %s (raise it with WithRecoveryPeriod)", ttl, c.recovery)
	}
	return nil
}

// recoveringError is the failure of a node whose yes did not count because
// it lost its data: learned is how long it has kept its data since, and
// remaining how long it still sits out, by its own clock.
func recoveringError(name string, learned, remaining time.Duration) *NodeError {
	return &NodeError{Node: name, Op: "acquire", Err: fmt.Errorf("%w: lost its data %s ago, recovering for %s more",
		ErrRecovering, learned.Round(time.Millisecond), remaining.Round(time.Millisecond))}
}

// reasonRecovering is the Reason of an observe.Node for a node that sat out,
// and of an attempt lost because nodes sat out.
const reasonRecovering = "recovering"

// longestHold is the longest hold past the recovery period a client knows
// of: told by a node (node.Standing.Hold) or asked by the client itself.
type longestHold struct{ ns atomic.Int64 }

func (h *longestHold) get() time.Duration { return time.Duration(h.ns.Load()) }

// raise makes d the longest hold if it is longer.
func (h *longestHold) raise(d time.Duration) {
	for cur := h.ns.Load(); int64(d) > cur; cur = h.ns.Load() {
		if h.ns.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// recovery judges, within one acquire round, whose yes votes count.
type recovery struct {
	period   time.Duration
	hold     *longestHold    // raised by the holds the nodes report
	earlier  bool            // an earlier deployment answered: a voter, or a learner told of a hold
	standing []node.Standing // per node, from its answer
	room     [7]node.Standing
}

// newRecovery returns the judge of one round, or nil when recovery is off.
func (c *config) newRecovery(nodes int, hold *longestHold) *recovery {
	if c.recovery <= 0 {
		return nil
	}
	r := &recovery{period: c.recovery, hold: hold}
	r.standing = r.room[:]
	if nodes > len(r.room) {
		r.standing = make([]node.Standing, nodes)
	}
	r.standing = r.standing[:nodes]
	return r
}

// learning reports whether a standing is a learner's.
func learning(s node.Standing) bool { return s.Known && !s.Voting }

// note records node i's answer.
func (r *recovery) note(i int, s node.Standing) {
	if r == nil {
		return
	}
	r.standing[i] = s
	r.hold.raise(s.Hold)
	if !learning(s) || s.Hold > 0 {
		r.earlier = true
	}
}

// count places the yes votes among v (which counts none of them): voters'
// count; learners' as quorum.Votes.WithLearners says. It returns how many
// learners said yes.
func (r *recovery) count(v quorum.Votes, yes []answer[node.AcquireReply]) (quorum.Votes, int) {
	learners := 0
	for _, a := range yes {
		if r.learner(a.node) {
			learners++
		}
	}
	v.Granted = len(yes) - learners
	if r == nil {
		return v, 0
	}
	return v.WithLearners(learners, r.earlier), learners
}

// learner reports whether node i answered as a learner.
func (r *recovery) learner(i int) bool { return r != nil && learning(r.standing[i]) }

// sittingOut returns the failure of each learner among yes whose yes did
// not count (name gives a node's name), and how long the one that sits out
// longest still does.
func (r *recovery) sittingOut(yes []answer[node.AcquireReply], name func(i int) string) (out []*NodeError, left time.Duration) {
	if r == nil {
		return nil, 0
	}
	for _, a := range yes {
		if s := r.standing[a.node]; learning(s) {
			rest := max(s.Remaining(r.period), 0)
			left = max(left, rest)
			out = append(out, recoveringError(name(a.node), s.Learned, rest))
		}
	}
	return out, left
}

// learners returns the nodes that answered as learners.
func (r *recovery) learners() []int {
	if r == nil {
		return nil
	}
	var ids []int
	for i, s := range r.standing {
		if learning(s) {
			ids = append(ids, i)
		}
	}
	return ids
}

// learnEvery is how often a client asks a learning node to step, below
// node.LearnStep so that the node learns at its clock's rate.
const learnEvery = node.LearnStep / 2

// learners keeps the learning nodes a client saw moving: each is asked to
// step every learnEvery until it votes, or the client is closed.
type learners struct {
	nodes   []node.Node
	period  time.Duration // the client's recovery period
	hold    longestHold
	timeout time.Duration // of one request
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

// watch adds node i's record (s.Scope), seen learning for name.
func (l *learners) watch(i int, name string, s node.Standing) {
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
func (l *learners) keep(halt chan struct{}) {
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
func (l *learners) step(i int, name string) (votes bool) {
	defer func() { _ = recover() }() // a node's panic is its own failure
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	s, err := l.nodes[i].(node.Learner).Learn(ctx, node.LearnArgs{Name: name, Recovery: l.period, Hold: l.hold.get()})
	l.hold.raise(s.Hold)
	return err == nil && !learning(s)
}

// stop stops the asking (Close); a later round starts it again.
func (l *learners) stop() {
	l.mu.Lock()
	if l.halt != nil {
		close(l.halt)
		l.halt = nil
	}
	l.running = false
	l.mu.Unlock()
	l.done.Wait()
}

// promote makes the learning records of a new deployment vote: a round
// found every node learning, and won on them. Each record is promoted only
// if it is still the one the round saw (a node that lost its data again
// since keeps learning). Failures are left: the next such round promotes.
func (l *learners) promote(ctx context.Context, name string, r *recovery) {
	var wg sync.WaitGroup
	for _, i := range r.learners() {
		n, ok := l.nodes[i].(node.Learner)
		if !ok {
			continue
		}
		wg.Go(func() {
			defer func() { _ = recover() }() // a node's panic is its own failure
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
			defer cancel()
			_, _ = n.Learn(ctx, node.LearnArgs{Name: name, Recovery: l.period, Promote: r.standing[i].ID, Hold: l.hold.get()})
		})
	}
	wg.Wait()
}

// tell makes hold, a hold of name past the recovery period, the longest
// this client knows of, and tells every node before the hold is written,
// so that a node that loses its data later learns it from the others. A
// node that misses it learns it from the next request of a client that
// knows it. A hold no longer than the longest known needs no call: the
// acquisition's requests carried that one.
func (l *learners) tell(ctx context.Context, name string, hold time.Duration) {
	if l.period <= 0 || hold <= max(l.period, l.hold.get()) {
		return
	}
	l.hold.raise(hold)
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
			_, _ = n.Learn(ctx, node.LearnArgs{Name: name, Recovery: l.period, Hold: l.hold.get()})
		})
	}
	wg.Wait()
}

// countedLearners reports whether learners' yes votes counted in a won
// round: every node answered as a learner.
func (r *recovery) countedLearners(yes []answer[node.AcquireReply]) bool {
	if r == nil || r.earlier {
		return false
	}
	for _, a := range yes {
		if r.learner(a.node) {
			return true
		}
	}
	return false
}

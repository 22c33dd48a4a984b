// Package recovery decides whose yes votes count after nodes lost their
// data (a restart without persistence, FLUSHALL, a failover to an empty
// replica): such a node would grant a key still held on the others.
//
// Each node keeps one record of its standing (node.Standing; in a Redis
// Cluster one per hash slot), which it loses with its data: a node without
// it learns, and votes again once it has kept its data for the recovery
// period, or for the longest hold told to the nodes if that is longer,
// counted by its own clock in steps of at most node.LearnStep. A learner's
// yes counts only when every node answered the round and none shows an
// earlier deployment (a voter, or a learner told of a hold): a new
// deployment, whose records the client then promotes
// (quorum.Votes.WithLearners). So a node that kept its data is always
// heard, however late it answers, and no clock is compared across servers.
//
// The Judge filters one round's votes; the Keeper keeps the learners a
// client saw moving (it asks each every half node.LearnStep, so that it
// learns at its clock's rate when no lock is taken), promotes a new
// deployment's records, and tells the nodes of a hold past the period.
// Every request carries the longest hold its client knows of (Hold).
package recovery

import (
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/node"
)

// Hold is the longest hold past the recovery period a client knows of:
// told by a node (node.Standing.Hold) or asked by the client itself.
type Hold struct{ ns atomic.Int64 }

// Get returns the longest hold known.
func (h *Hold) Get() time.Duration { return time.Duration(h.ns.Load()) }

// Raise makes d the longest hold if it is longer.
func (h *Hold) Raise(d time.Duration) {
	for cur := h.ns.Load(); int64(d) > cur; cur = h.ns.Load() {
		if h.ns.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// Learning reports whether a standing is a learner's.
func Learning(s node.Standing) bool { return s.Known && !s.Voting }

// Judge decides, within one acquire round, whose yes votes count. A nil
// Judge (recovery off) counts every yes.
type Judge struct {
	period   time.Duration
	hold     *Hold           // raised by the holds the nodes report
	earlier  bool            // an earlier deployment answered: a voter, or a learner told of a hold
	standing []node.Standing // per node, from its answer
	yes      []bool          // per node: it said yes
	room     [7]node.Standing
	yesRoom  [7]bool
}

// NewJudge returns the judge of one round over n nodes, or nil when the
// period is off.
func NewJudge(period time.Duration, n int, hold *Hold) *Judge {
	if period <= 0 {
		return nil
	}
	j := &Judge{period: period, hold: hold}
	j.standing, j.yes = j.room[:], j.yesRoom[:]
	if n > len(j.room) {
		j.standing, j.yes = make([]node.Standing, n), make([]bool, n)
	}
	j.standing, j.yes = j.standing[:n], j.yes[:n]
	return j
}

// Note records node i's answer: its standing, and whether it said yes.
func (j *Judge) Note(i int, s node.Standing, yes bool) {
	if j == nil {
		return
	}
	j.standing[i], j.yes[i] = s, yes
	j.hold.Raise(s.Hold)
	if !Learning(s) || s.Hold > 0 {
		j.earlier = true
	}
}

// Count places the round's yes votes (yes of them, none counted in v) in
// v: voters' count, learners' as quorum.Votes.WithLearners says. It also
// returns how many learners said yes.
func (j *Judge) Count(v quorum.Votes, yes int) (quorum.Votes, int) {
	learners := j.learnersSaidYes()
	v.Granted = yes - learners
	if j == nil {
		return v, 0
	}
	return v.WithLearners(learners, j.earlier), learners
}

func (j *Judge) learnersSaidYes() int {
	n := 0
	for i := range j.size() {
		if j.yes[i] && Learning(j.standing[i]) {
			n++
		}
	}
	return n
}

// size is the number of nodes judged (none for a nil Judge).
func (j *Judge) size() int {
	if j == nil {
		return 0
	}
	return len(j.standing)
}

// SatOut is a learner whose yes did not count.
type SatOut struct {
	Node      int
	Learned   time.Duration // how long it has kept its data
	Remaining time.Duration // how long it still sits out, by its own clock
}

// SittingOut returns the learners that said yes, and how long the one
// that sits out longest still does. Call it when their votes did not
// count.
func (j *Judge) SittingOut() (out []SatOut, left time.Duration) {
	for i := range j.size() {
		if s := j.standing[i]; j.yes[i] && Learning(s) {
			rest := max(s.Remaining(j.period), 0)
			left = max(left, rest)
			out = append(out, SatOut{Node: i, Learned: s.Learned, Remaining: rest})
		}
	}
	return out, left
}

// Learners returns the nodes that answered as learners, with their
// standing.
func (j *Judge) Learners() map[int]node.Standing {
	var out map[int]node.Standing
	for i := range j.size() {
		if Learning(j.standing[i]) {
			if out == nil {
				out = map[int]node.Standing{}
			}
			out[i] = j.standing[i]
		}
	}
	return out
}

// NewDeployment reports whether learners' yes votes counted in a won
// round: no node showed an earlier deployment.
func (j *Judge) NewDeployment() bool {
	return j != nil && !j.earlier && j.learnersSaidYes() > 0
}

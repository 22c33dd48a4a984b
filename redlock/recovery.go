package redlock

import (
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// Recovery: a node that lost its lock data (a restart without persistence,
// FLUSHALL, a failover to an empty replica) would grant a key still held on
// the other nodes. Each node keeps, per lock key, a marker of when it
// started keeping data for the key, and reports its age by its own clock
// with every acquire reply (node.AcquireReply.DataAge), and which
// acquisition wrote it (node.AcquireReply.DataCreator), and how long ago an
// acquire or extension last touched it (node.AcquireReply.DataTouchedAge).
// Within one round, a node whose marker is younger than the recovery
// period while another answering node's, touched within the period, is
// older than it by more than the slack, and was written by another
// acquisition, has lost its data for the key: its yes
// does not count toward the majority, and an attempt it keeps from a
// majority is lost, not a split, until its marker reaches the period. A period at least as long as every TTL means that
// every lock the node forgot has expired or been re-asserted there by its
// holder's extensions by then. When every answering node's marker is young
// and of one age, the key is new (a fresh deployment, or its first use):
// they count, once the other nodes had a moment to answer (two round
// trips), so that a node that kept the key is heard unless it is silent
// or much slower than the others. Markers written by one acquisition never
// sit each other out, however late a node processed it: it lost nothing.
// A marker untouched for the period holds no lock (every TTL is at most
// the period, and every acquisition and extension touches the markers of
// the nodes it reaches), and an idle key's markers expire a few
// milliseconds apart on different nodes, so it alone sits no new marker
// out. But a node that lost a held key, beside it, looks the same until
// the node that kept the key answers: a young yes beside an untouched
// marker counts only once every node has answered, none with a marker a
// lock touched.
// The client asks the nodes to keep each marker at least the period after
// its last touch, so that a touched one cannot expire early.
// Limits: a request of the acquisition that wrote the oldest marker, still
// in flight when a node lost its data and delivered after, writes the same
// creator there, and that node counts at once; a lock held only on nodes
// that all lost their data is not protected, as the nodes it was never
// extended on for the period keep only untouched markers.
// Server clocks: a node whose clock went back sees its marker's times
// ahead of it, and dates the marker old (twice its keep, past the period):
// a node that kept the key keeps the others out. Premise: a node's clock
// does not step within the period after it lost its data (back, its fresh
// marker reads old and it counts at once; forward, it counts that much
// early). A step back within the marker's last recorded touch goes unseen
// and shortens the node's age by the step.

// checkRecoveryTTL refuses a TTL the recovery period does not cover.
func (c *config) checkRecoveryTTL(ttl time.Duration) error {
	if c.recovery > 0 && ttl > c.recovery {
		return invalidArg("ttl %s is longer than the recovery period %s (raise it with WithRecoveryPeriod)", ttl, c.recovery)
	}
	return nil
}

// recoveringError is the failure of a node whose yes did not count because
// it lost its data for the key: age is its marker's age for the key, and
// remaining how long it still sits out, by its own clock.
func recoveringError(name string, age, remaining time.Duration) *NodeError {
	return &NodeError{Node: name, Op: "acquire", Err: fmt.Errorf("%w: lost its data for the key %s ago, recovering for %s more",
		ErrRecovering, age.Round(time.Millisecond), remaining.Round(time.Millisecond))}
}

// reasonRecovering is the Reason of an observe.Node for a node that sat out,
// and of an attempt lost because nodes sat out.
const reasonRecovering = "recovering"

// recovery judges, within one acquire round, which nodes sit out.
type recovery struct {
	period  time.Duration
	slack   time.Duration // how far apart the markers of two first uses at once can be
	oldest  marker        // the oldest marker among the answers so far that a lock may have touched
	idle    marker        // the oldest marker untouched for the period
	unheard bool          // a node did not report its marker while a young one was in doubt
	marks   []marker      // per node, from its answer
	room    [7]marker     // marks' storage for up to 7 nodes: no allocation of its own
}

// marker is one node's report of its marker for the key.
type marker struct {
	age   time.Duration
	by    uint64 // the acquisition that wrote it (0: unknown)
	known bool
}

// newRecovery returns the judge of one round, or nil when recovery is off.
func (c *config) newRecovery(nodes int, ttl time.Duration) *recovery {
	if c.recovery <= 0 {
		return nil
	}
	// Markers of one key written by two clients' first rounds at once
	// (different creators) differ by about the node timeout, and are read
	// back within another; ages are whole milliseconds.
	r := &recovery{period: c.recovery, slack: c.timeoutFor(ttl) + 2*time.Millisecond}
	r.marks = r.room[:]
	if nodes > len(r.room) {
		r.marks = make([]marker, nodes)
	}
	r.marks = r.marks[:nodes]
	return r
}

// youngLinger is how long a round whose majority rests on young markers
// waits for the other nodes' answers, after rtt: long enough for a healthy
// node to answer (its answer is usually on its way), short enough that a
// silent node does not hold the call up (the call returns once decided).
func youngLinger(rtt time.Duration) time.Duration { return max(2*rtt, 2*time.Millisecond) }

// note records one node's answer.
func (r *recovery) note(i int, v node.AcquireReply) {
	if r == nil || !v.DataAgeKnown {
		return
	}
	switch {
	case !r.mayGuardLock(v):
		if !r.idle.known || v.DataAge > r.idle.age {
			r.idle = marker{age: v.DataAge, by: v.DataCreator, known: true}
		}
	case !r.oldest.known || v.DataAge > r.oldest.age:
		r.oldest = marker{age: v.DataAge, by: v.DataCreator, known: true}
	}
	r.marks[i] = marker{age: v.DataAge, by: v.DataCreator, known: true}
}

// mayGuardLock reports whether a marker may belong to a key still held: an
// acquire or extension touched it within the period (every lock's TTL is
// at most the period, and each touches the markers of the nodes it
// reaches), or it does not record its touches. The markers of an idle key
// expire a few milliseconds apart on different nodes; one outliving the
// others is evidence of nothing, and must not sit them out.
func (r *recovery) mayGuardLock(v node.AcquireReply) bool {
	return !v.DataTouchedKnown || v.DataTouchedAge < r.period
}

// sitsOut reports whether node i lost its data for the key: its marker is
// young, and much younger than the oldest one, which another acquisition
// wrote (the one that wrote both may have reached node i late).
func (r *recovery) sitsOut(i int) bool {
	if r != nil && r.unheard && r.doubtful(i) {
		return true
	}
	return r != nil && r.youngBeside(i, r.oldest)
}

// youngBeside reports whether node i's marker is young and much younger
// than old, which another acquisition wrote (the one that wrote both may
// have reached node i late: it lost nothing).
func (r *recovery) youngBeside(i int, old marker) bool {
	m := r.marks[i]
	return old.known && m.known && m.age < r.period && !(m.by != 0 && m.by == old.by) && old.age-m.age > r.slack
}

// doubtful reports whether node i's young marker may be a loss the answers
// cannot rule out yet: another node keeps a much older marker, written by
// another acquisition, but untouched for the period. Either the key is
// idle and its markers expired apart, or node i lost it while a node that
// keeps a holder's marker has not answered: only every node's answer tells.
func (r *recovery) doubtful(i int) bool {
	return r != nil && r.youngBeside(i, r.idle)
}

// unsure reports whether a yes vote rests on a doubtful marker.
func (r *recovery) unsure(yes []answer[node.AcquireReply]) bool {
	for _, a := range yes {
		if r.doubtful(a.node) {
			return true
		}
	}
	return false
}

// settleDoubt is called once every node had its chance to answer a round
// that was unsure: if one did not report its marker, it may be the keeper,
// and the doubtful yes votes sit the round out.
func (r *recovery) settleDoubt() {
	for _, m := range r.marks {
		if !m.known {
			r.unheard = true
		}
	}
}

// young reports whether node i's yes rests on a new key's marker.
func (r *recovery) young(i int) bool {
	return r != nil && r.marks[i].known && r.marks[i].age < r.period
}

// counted returns how many of yes count, and how many sit out.
func (r *recovery) counted(yes []answer[node.AcquireReply]) (counted, out int) {
	for _, a := range yes {
		if r.sitsOut(a.node) {
			out++
		}
	}
	return len(yes) - out, out
}

// restsOnYoung reports whether a majority of yes votes needs a young
// marker's: the key looks new, which only the answers of every healthy
// node can confirm.
func (r *recovery) restsOnYoung(yes []answer[node.AcquireReply]) bool {
	for _, a := range yes {
		if r.young(a.node) {
			return true
		}
	}
	return false
}

// agree reports whether the yes votes show no data loss: each yes node
// holds a marker written before this acquisition (at, its acquisition
// time), and their ages are within the slack of one key's first use
// (concurrent first rounds write markers that far apart), so none of those
// nodes lost the key since. A key whose markers this acquisition writes
// could as well be one that every yes node lost, or never had.
func (r *recovery) agree(yes []answer[node.AcquireReply], at time.Time) bool {
	if r == nil {
		return true
	}
	ours := uint64(at.UnixMicro())
	var lo, hi time.Duration
	for k, a := range yes {
		m := r.marks[a.node]
		if !m.known || m.by == ours {
			return false
		}
		if k == 0 {
			lo, hi = m.age, m.age
		}
		lo, hi = min(lo, m.age), max(hi, m.age)
	}
	return len(yes) > 0 && hi-lo <= r.slack
}

// sittingOut returns the failure of each node among yes whose yes did not
// count because it lost its data for the key (name gives a node's name),
// and the index in it of the node that sits out longest, with how long it
// still does (-1 and 0 when no node says).
func (r *recovery) sittingOut(yes []answer[node.AcquireReply], name func(i int) string) (out []*NodeError, longest int, left time.Duration) {
	longest = -1
	if r == nil {
		return nil, longest, 0
	}
	for _, a := range yes {
		switch m := r.marks[a.node]; {
		case r.unheard && r.doubtful(a.node):
			out = append(out, &NodeError{Node: name(a.node), Op: "acquire", Err: fmt.Errorf(
				"%w: its marker for the key is %s old beside an idle one, and a node that may keep the key did not answer",
				ErrRecovering, m.age.Round(time.Millisecond))})
		case r.sitsOut(a.node):
			if rest := r.period - m.age; longest < 0 || rest > left {
				longest, left = len(out), rest
			}
			out = append(out, recoveringError(name(a.node), m.age, r.period-m.age))
		}
	}
	return out, longest, left
}

// markRecovering sets the Recovering of each node's Info that an
// acquisition of the key would have sit out, judged as an acquire round
// judges it from the markers the nodes reported. A node without a marker
// while another keeps an old one lost its data and has not been asked for
// the key since: it will sit out for the whole period from the next
// acquisition, so its Recovering is the period.
func (c *config) markRecovering(nodes []Info, holdings []node.Holding, adminTimeout time.Duration) {
	r := c.newRecovery(len(nodes), adminTimeout)
	if r == nil {
		return
	}
	// The slack of any TTL's round: adminTimeout is WithNodeTimeout, or
	// the longest node timeout a TTL derives.
	r.slack = adminTimeout + 2*time.Millisecond
	for i, h := range holdings {
		if nodes[i].Err == nil {
			r.note(i, node.AcquireReply{DataAge: h.DataAge, DataAgeKnown: true,
				DataTouchedAge: h.DataTouchedAge, DataTouchedKnown: h.DataTouchedKnown})
		}
	}
	for i := range nodes {
		if r.sitsOut(i) {
			nodes[i].Recovering = r.period - r.marks[i].age
		}
	}
}

package locktest

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// fault is one fault of a schedule: on at its instant, off after dur.
type fault struct {
	at, dur time.Duration
	desc    string
	on, off func()
}

// play waits for the fault's instant, turns it on, and off after its
// duration or when the schedule ends, whichever comes first.
func (f fault) play(ctx context.Context, rec *Recorder) {
	if !sleepCtx(ctx, f.at) {
		return
	}
	rec.Note("fault: %s", f.desc)
	f.on()
	sleepCtx(ctx, f.dur)
	if f.off != nil {
		f.off()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// faultKinds are the faults a schedule draws from. Each keeps the Redlock
// rules (a node restarted empty stays down for at least the TTL), so a
// violation is the workload's, not the lock's. A clock jump past the
// drift is outside the rules, and not drawn.
var faultKinds = []func(rng *rand.Rand, p Plan, q *Quorum, rs []*Replica, f *fault) (desc string, on, off func()){
	func(rng *rand.Rand, p Plan, q *Quorum, rs []*Replica, f *fault) (string, func(), func()) {
		nd := q.nodes[rng.IntN(len(q.nodes))]
		return fmt.Sprintf("pause %s for %v", nd.Name(), f.dur), nd.Pause, nd.Resume
	},
	func(rng *rand.Rand, p Plan, q *Quorum, rs []*Replica, f *fault) (string, func(), func()) {
		nd, r := q.nodes[rng.IntN(len(q.nodes))], rs[rng.IntN(len(rs))]
		return fmt.Sprintf("cut %s off %s for %v", r.Name, nd.Name(), f.dur),
			func() { nd.CutOff(r.Client) }, func() { nd.Heal(r.Client) }
	},
	func(rng *rand.Rand, p Plan, q *Quorum, rs []*Replica, f *fault) (string, func(), func()) {
		nd := q.nodes[rng.IntN(len(q.nodes))]
		by := randDur(rng, time.Millisecond, min(p.TTL/5, 2*time.Second))
		return fmt.Sprintf("slow %s by %v for %v", nd.Name(), by, f.dur), func() { nd.Slow(by) }, func() { nd.Slow(0) }
	},
	func(rng *rand.Rand, p Plan, q *Quorum, rs []*Replica, f *fault) (string, func(), func()) {
		nd := q.nodes[rng.IntN(len(q.nodes))]
		return fmt.Sprintf("stop %s for %v", nd.Name(), f.dur), nd.down, func() { nd.up(false) }
	},
	func(rng *rand.Rand, p Plan, q *Quorum, rs []*Replica, f *fault) (string, func(), func()) {
		nd := q.nodes[rng.IntN(len(q.nodes))]
		f.dur = max(f.dur, p.TTL) // a restart without data waits out the TTL
		return fmt.Sprintf("stop %s, restart it empty after %v", nd.Name(), f.dur), nd.down, func() { nd.up(true) }
	},
	func(rng *rand.Rand, p Plan, q *Quorum, rs []*Replica, f *fault) (string, func(), func()) {
		r := rs[rng.IntN(len(rs))]
		return fmt.Sprintf("stall %s for %v at its next checkpoint", r.Name, f.dur),
			func() { r.stalls <- f.dur }, nil
	},
}

// drawFaults draws the schedule's faults from rng.
func drawFaults(rng *rand.Rand, p Plan, q *Quorum, rs []*Replica) []fault {
	fs := make([]fault, p.Faults)
	for i := range fs {
		kind := rng.IntN(len(faultKinds))
		f := fault{at: randDur(rng, 0, p.Length*2/3), dur: randDur(rng, p.TTL/10, 2*p.TTL)}
		var what string
		what, f.on, f.off = faultKinds[kind](rng, p, q, rs, &f)
		f.desc = fmt.Sprintf("+%v %s", f.at, what)
		fs[i] = f
	}
	slices.SortStableFunc(fs, func(a, b fault) int { return cmp.Compare(a.at, b.at) })
	return fs
}

// randDur is uniform in [lo, hi), in milliseconds.
func randDur(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	ms := int64((hi - lo) / time.Millisecond)
	if ms <= 0 {
		return lo
	}
	return lo + time.Duration(rng.Int64N(ms))*time.Millisecond
}

// down stops the node for a fault of a schedule; faults that overlap on one
// node keep it down until the last ends.
func (n *Node) down() {
	n.mu.Lock()
	n.downs++
	n.mu.Unlock()
	n.Stop()
}

// up ends a down; with wipe the node loses its data, which is within the
// rules because it has been down since this fault began, at least the TTL.
func (n *Node) up(wipe bool) {
	n.mu.Lock()
	n.downs--
	last := n.downs == 0
	n.mu.Unlock()
	if wipe {
		n.mem.SetDown(true, true)
	}
	if last {
		n.Start()
	}
}

package sim

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/quorumlock/quorumlock/chaos"
)

// Outcome is what one schedule did: the history for the chaos checker, and
// the findings that need the nodes' ground truth, computed in the bubble.
type Outcome struct {
	Schedule *Schedule
	CSS      []chaos.CS
	Acqs     []chaos.AcqResult
	Ops      []chaos.RegOp
	Calls    []callRec
	Faults   []window
	Empty    [][]time.Duration // per node: when it came back up empty

	LateSets  []string // a key created by a request of a token after its release was processed on that node
	Orphans   []string // a key left on a node after every lock ended and its TTL passed
	SplitHeld []string // "held by another" when no token held a majority during the call
	Asleep    []string // a waiter asleep while the lock was free for longer than the bound
	Stalls    []stall  // attempts that took longer than stallBound

	Requests, Lost int64
	Trace          string // the request-level trace, when SIM_TRACE is set (trace.go)
}

// wakeBound is how long a waiter may sleep while the lock is free (a
// majority of nodes hold no key) in a healthy stretch: a release
// announcement wakes it at once; the expiry of the keys its last attempt
// was told of (the holder's, or a split's), within the reply's travel and
// 2 ms of jitter; a split's loser, within 4 of its round trips. The retry
// policy's 200-300 ms, which a missed wake-up sleeps, is well above it.
// SIM_WAKE_BOUND (a Go duration) sets another bound, to look for shorter
// sleeps.
var wakeBound = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("SIM_WAKE_BOUND")); err == nil && d > 0 {
		return d
	}
	return 100 * time.Millisecond
}()

func (w *world) outcome() *Outcome {
	s := w.s
	w.mu.Lock()
	empty := w.empty
	w.mu.Unlock()
	o := &Outcome{Schedule: s, Ops: w.reg.Ops(), Faults: w.faults, Empty: empty,
		Requests: w.counts.requests.Load(), Lost: w.counts.lost.Load()}
	w.rec.mu.Lock()
	o.CSS, o.Acqs, o.Calls = w.rec.css, w.rec.acqs, w.rec.calls
	obs := w.rec.obs
	w.rec.mu.Unlock()

	o.LateSets = w.truth.lateSets()
	for _, srv := range w.servers {
		srv.resume()
		h, err := srv.mem.Inspect(context.Background(), redlockName())
		if err == nil && h.Token != "" {
			o.Orphans = append(o.Orphans, fmt.Sprintf("node %d holds token %s for %s more, %s after every client closed", srv.idx, short(h.Token), h.TTL, s.TTL))
		}
	}
	q := s.Nodes/2 + 1
	abs := func(d time.Duration) time.Time { return w.start.Add(d) }
	for _, c := range o.Calls {
		if c.Err == "held" && !w.truth.majorityHeld(q, abs(c.Start), abs(c.End)) {
			o.SplitHeld = append(o.SplitHeld, fmt.Sprintf("client %d: call %s-%s said \"held by another\"; no token held %d of %d nodes during the call%s",
				c.Client, c.Start, c.End, q, s.Nodes, resumedDuring(s, c.Start, c.End)))
		}
	}
	if s.DropProb == 0 && s.SpikeProb == 0 {
		o.Asleep = w.asleep(o, obs, q, abs)
	}
	o.Stalls = w.stalls(obs)
	o.Trace = w.trace.String()
	return o
}

// stall is one attempt that took longer than stallBound.
type stall struct {
	Client   int
	From, To time.Duration
	Identify bool // the client sent an identify request during the attempt
}

// stallBound is the longest one attempt may take: its round (the node
// timeout, a tenth of the TTL, and the round's 50 ms stall grace), the
// fence settle (as long again), and the moment a split waits for the last
// answers (as long again).
func stallBound(ttl time.Duration) time.Duration {
	return 3*(ttl/10+50*time.Millisecond) + 10*time.Millisecond
}

// stalls finds attempts (observe.Attempt to the observe.Contended that follows it)
// longer than stallBound: a decided call returns at once (rule 12).
func (w *world) stalls(obs [][]obsEvent) []stall {
	var out []stall
	for c, evs := range obs {
		for i := 0; i+1 < len(evs); i++ {
			a, b := evs[i], evs[i+1]
			if a.kind.String() == "attempt" && b.kind.String() == "contended" && b.at-a.at > stallBound(w.s.TTL) {
				st := stall{Client: c, From: a.at, To: b.at}
				w.mu.Lock()
				for _, at := range w.idents[c] {
					st.Identify = st.Identify || (at > a.at && at < b.at)
				}
				w.mu.Unlock()
				out = append(out, st)
			}
		}
	}
	return out
}

// asleep finds waiters (Acquire between a lost attempt and the next) that
// slept while the lock was free for longer than wakeBound, outside fault
// windows (and a TTL after each).
func (w *world) asleep(o *Outcome, obs [][]obsEvent, q int, abs func(time.Duration) time.Time) []string {
	var out []string
	free := w.truth.freeStretches(w.s.Nodes, q, w.start, abs(w.s.Duration+w.s.TTL))
	for _, c := range o.Calls {
		if c.Try {
			continue
		}
		var evs []obsEvent
		for _, e := range obs[c.Client] {
			if e.at >= c.Start && e.at <= c.End {
				evs = append(evs, e)
			}
		}
		for i, e := range evs {
			if e.kind.String() != "contended" {
				continue
			}
			to := c.End
			if i+1 < len(evs) {
				to = evs[i+1].at
			}
			if w.faulty(e.at-w.s.TTL, to) {
				continue
			}
			if d, at := longestWithin(free, abs(e.at), abs(to)); d > wakeBound {
				why := ""
				if i > 0 && evs[i-1].kind.String() == "attempt" {
					// A split vote's loser sleeps 3 to 4 times its round's
					// duration before it looks again (acquire.go).
					if rtt, slept := e.at-evs[i-1].at, to-e.at; slept >= 3*rtt && slept <= 4*rtt+time.Millisecond {
						why = fmt.Sprintf(" after a split-vote loss (slept %.1f round trips of %s)", float64(slept)/float64(rtt), rtt)
					}
				}
				out = append(out, fmt.Sprintf("client %d: asleep from %s to %s while the lock was free for %s (from %s), after an attempt lost (%s)%s",
					c.Client, e.at, to, d, at.Sub(w.start), e.reason, why))
			}
		}
	}
	return out
}

// faulty reports whether a fault window touches [from, to].
func (w *world) faulty(from, to time.Duration) bool {
	for _, f := range w.s.Faults {
		end := f.At + f.For
		if f.At <= to && end >= from {
			return true
		}
	}
	return false
}

// resumedDuring notes a paused node that resumed during a call (its queued
// requests are applied at one instant then), for the reader of a finding.
func resumedDuring(s *Schedule, from, to time.Duration) string {
	for _, f := range s.Faults {
		if end := f.At + f.For; f.Kind == FaultPauseNode && end >= from && end <= to+time.Millisecond {
			return fmt.Sprintf(" (node %d resumed at %s)", f.Node, end)
		}
	}
	return ""
}

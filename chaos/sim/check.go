package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/quorumlock/quorumlock/chaos"
)

// Violation is one broken guarantee in one schedule.
type Violation struct {
	Kind   string
	Detail string
	// Known names the finding on main this violation is an instance of
	// (see knownFindings); such a violation is reported, and fails no
	// profile, until the finding is fixed.
	Known string
}

// knownFindings are violations the simulator found on main, reported to
// the library's owners with a reproducer test, recognized by kind and a
// part of the detail.
var knownFindings = []struct{ name, kind, detail string }{
	// Not a finding but the limit the library states for recovery (see
	// beyondRecovery): counted in a row of its own; fencing is still checked.
	{"beyond-recovery-limit", VOverlap, beyondRecoveryNote},
	// Fixed since, each still run by its reproducer: split-loser-sleep
	// (redlock/acquire.go) and retry-storm (internal/wake).
	// split-held-at-resume was the checker's own: a resumed server applied
	// its queued requests in no order and at one instant, and the ground
	// truth did not count a holder's span of zero length.
}

// beyondRecoveryNote marks an overlap within recovery's stated limit.
const beyondRecoveryNote = "(beyond recovery's stated limit: a majority of the nodes back up empty, one restarted before the TTL)"

// allBeyondRecovery reports whether every overlap began within recovery's
// stated limit.
func (o *Outcome) allBeyondRecovery(ovs []chaos.Overlap) bool {
	for _, ov := range ovs {
		if !beyondRecovery(o.Schedule, o.Empty, ov.From) {
			return false
		}
	}
	return true
}

func known(v Violation) string {
	for _, k := range knownFindings {
		if v.Kind == k.kind && strings.Contains(v.Detail, k.detail) {
			return k.name
		}
	}
	return ""
}

// Violation kinds, in the summary's order.
const (
	VOverlap      = "overlap"
	VFence        = "fence-inversion"
	VUnsafe       = "unsafe-write-accepted"
	VLinearizable = "not-linearizable"
	VLateLoss     = "late-loss-signal"
	VLiveness     = "liveness"
	VLateCreate   = "key-after-release"
	VOrphan       = "orphan-key"
	VSplitHeld    = "split-vote-held"
	VAsleep       = "asleep-while-free"
	VStall        = "attempt-stalled"
	VError        = "unexpected-error"
)

// ViolationKinds is the order of the summary table.
var ViolationKinds = []string{VOverlap, VFence, VUnsafe, VLinearizable, VLateLoss, VLiveness,
	VLateCreate, VOrphan, VSplitHeld, VAsleep, VStall, VError}

// Verdict checks one outcome: the chaos checker (mutual exclusion while
// believed valid, fences, fencing and linearizability with porcupine, loss
// signals) plus liveness in the healthy tail and the findings from the
// nodes' ground truth. It also returns the chaos findings, for a timeline.
func Verdict(o *Outcome) ([]Violation, *chaos.Findings) {
	s := o.Schedule
	f := chaos.Check(o.CSS, o.Acqs, o.Ops, s.Bug != BugNoQuorum, time.Minute)
	var vs []Violation
	add := func(kind, format string, args ...any) {
		v := Violation{Kind: kind, Detail: fmt.Sprintf(format, args...)}
		v.Known = known(v)
		vs = append(vs, v)
	}
	if len(f.Overlaps) > 0 && !s.OutsideRules() {
		ov := f.Overlaps[0]
		limit := ""
		if o.allBeyondRecovery(f.Overlaps) {
			limit = " " + beyondRecoveryNote
		}
		add(VOverlap, "%d overlaps; first: clients %d and %d (fences %d, %d) from %s to %s%s", len(f.Overlaps),
			ov.ClientA, ov.ClientB, ov.FenceA, ov.FenceB, ov.From, ov.To, limit)
	}
	if len(f.FenceInversions) > 0 {
		fi := f.FenceInversions[0]
		add(VFence, "%d inversions; first: fence %d after %d", len(f.FenceInversions), fi.FenceB, fi.FenceA)
	}
	if f.UnsafeAccepted > 0 {
		add(VUnsafe, "%d writes after a newer fence were accepted", f.UnsafeAccepted)
	}
	if f.Linearizable != string(porcupine.Ok) {
		add(VLinearizable, "register history %s", f.Linearizable)
	}
	if f.LateLossSignals > 0 {
		add(VLateLoss, "%d holders told of the loss after their validity ended (min margin %s)", f.LateLossSignals, f.MinLossMargin)
	}
	// Liveness: the faults ended at Duration-Healthy; a TTL later every
	// key they left has expired, and from then on the lock must be taken.
	healthyFrom := s.Duration - s.Healthy + s.TTL
	won := 0
	for _, cs := range o.CSS {
		if cs.AcqEnd >= healthyFrom {
			won++
		}
	}
	for _, c := range o.Calls {
		if c.Start < healthyFrom {
			continue
		}
		if c.Err == "quorum" {
			add(VLiveness, "client %d: quorum unreachable at %s with every node up and reachable: %s", c.Client, c.Start, c.Msg)
		}
		if c.Err != "" && c.Err[0] == 'o' { // "other: ..."
			add(VError, "client %d at %s: %s", c.Client, c.Start, c.Err)
		}
	}
	if won == 0 {
		var calls []string
		for _, c := range o.Calls {
			if c.End >= healthyFrom {
				calls = append(calls, fmt.Sprintf("client %d %s-%s %s", c.Client, c.Start, c.End, c.Err))
			}
		}
		add(VLiveness, "no acquisition in the healthy tail from %s to %s; calls then: %s", healthyFrom, s.Duration, strings.Join(calls, "; "))
	}
	for _, d := range o.LateSets {
		add(VLateCreate, "%s", d)
	}
	for _, d := range o.Orphans {
		add(VOrphan, "%s", d)
	}
	for _, d := range o.SplitHeld {
		add(VSplitHeld, "%s", d)
	}
	for _, d := range o.Asleep {
		add(VAsleep, "%s", d)
	}
	for _, st := range o.Stalls {
		hint := ""
		if st.Identify {
			hint = " (waiting for an identify request sent during the attempt)"
		}
		add(VStall, "client %d: one attempt took %s%s (from %s to %s), more than %s", st.Client, st.To-st.From, hint, st.From, st.To, stallBound(s.TTL))
	}
	return vs, f
}

// Unknown returns the violations that are not instances of a known finding.
func Unknown(vs []Violation) []Violation {
	var out []Violation
	for _, v := range vs {
		if v.Known == "" {
			out = append(out, v)
		}
	}
	return out
}

package sim

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/quorumlock/quorumlock/chaos"
)

// Violation is one broken guarantee in one schedule.
type Violation struct {
	Kind   string
	Detail string
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
	VError        = "unexpected-error"
)

// ViolationKinds is the order of the summary table.
var ViolationKinds = []string{VOverlap, VFence, VUnsafe, VLinearizable, VLateLoss, VLiveness,
	VLateCreate, VOrphan, VSplitHeld, VAsleep, VError}

// Verdict checks one outcome: the chaos checker (mutual exclusion while
// believed valid, fences, fencing and linearizability with porcupine, loss
// signals) plus liveness in the healthy tail and the findings from the
// nodes' ground truth. It also returns the chaos findings, for a timeline.
func Verdict(o *Outcome) ([]Violation, *chaos.Findings) {
	s := o.Schedule
	f := chaos.Check(o.CSS, o.Acqs, o.Ops, true, time.Minute)
	var vs []Violation
	add := func(kind, format string, args ...any) { vs = append(vs, Violation{kind, fmt.Sprintf(format, args...)}) }
	if len(f.Overlaps) > 0 && !s.OutsideRules() {
		ov := f.Overlaps[0]
		add(VOverlap, "%d overlaps; first: clients %d and %d (fences %d, %d) from %s to %s", len(f.Overlaps),
			ov.ClientA, ov.ClientB, ov.FenceA, ov.FenceB, ov.From, ov.To)
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
	healthyFrom := s.Duration - s.Healthy + s.TTL
	won := 0
	for _, c := range o.Calls {
		if c.Start < healthyFrom {
			continue
		}
		if c.OK {
			won++
		}
		if c.Err == "quorum" {
			add(VLiveness, "client %d: quorum unreachable at %s with every node up and reachable", c.Client, c.Start)
		}
		if c.Err != "" && c.Err[0] == 'o' { // "other: ..."
			add(VError, "client %d at %s: %s", c.Client, c.Start, c.Err)
		}
	}
	if won == 0 {
		add(VLiveness, "no acquisition in the healthy tail from %s to %s", healthyFrom, s.Duration)
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
	return vs, f
}

package chaos

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

// Figure is one measured value of a measuring scenario, with its target
// when it has one. Targets compare counts, or ratios of two rates (or
// latencies) measured in the same run, never a wall-clock bound.
type Figure struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit,omitempty"` // "", "ms", "/s", "x"
	Target string  `json:"target,omitempty"`
	Met    *bool   `json:"met,omitempty"`
	// Timing: the target compares timings or rates, which a busy machine
	// moves. The short profile (go test) reports a miss without failing;
	// make chaos fails on it.
	Timing bool `json:"timing,omitempty"`
}

func (f Figure) String() string {
	v := fmtFigure(f.Value, f.Unit)
	if f.Target == "" {
		return fmt.Sprintf("%s %s", f.Name, v)
	}
	return fmt.Sprintf("%s %s (target %s)", f.Name, v, f.Target)
}

func fmtFigure(v float64, unit string) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.IsInf(v, 1):
		return "inf" + unit
	case unit == "ms" && v < 10:
		return fmt.Sprintf("%.2f ms", v)
	case unit == "ms":
		return fmt.Sprintf("%.0f ms", v)
	case unit == "x":
		return fmt.Sprintf("%.2fx", v)
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f%s", v, unit)
	}
	return fmt.Sprintf("%.1f%s", v, unit)
}

// figures collects a scenario's figures.
type figures []Figure

// info adds a figure without a target.
func (fs *figures) info(name string, v float64, unit string) {
	*fs = append(*fs, Figure{Name: name, Value: v, Unit: unit})
}

// atMost adds a figure that must be <= limit.
func (fs *figures) atMost(name string, v float64, unit string, limit float64) {
	met := v <= limit
	*fs = append(*fs, Figure{Name: name, Value: v, Unit: unit, Target: "<= " + fmtFigure(limit, unit), Met: &met})
}

// atLeast adds a figure that must be >= limit.
func (fs *figures) atLeast(name string, v float64, unit string, limit float64) {
	met := v >= limit
	*fs = append(*fs, Figure{Name: name, Value: v, Unit: unit, Target: ">= " + fmtFigure(limit, unit), Met: &met})
}

// timing marks the last figure's target as a timing target (see Figure).
func (fs *figures) timing() { (*fs)[len(*fs)-1].Timing = true }

// ratio is a/b, +Inf when only b is 0, 1 when both are.
func ratio(a, b float64) float64 {
	if b == 0 {
		if a == 0 {
			return 1
		}
		return math.Inf(1)
	}
	return a / b
}

// lat is a set of latencies.
type lat []time.Duration

func (l lat) pct(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Kinds of outcome of one acquisition attempt.
const (
	kindAcquired    = "acquired"
	kindSplit       = "split vote"
	kindHeld        = "held"
	kindNotAcquired = "not acquired"
	kindUnreachable = "quorum unreachable"
	kindCanceled    = "canceled"
	kindOther       = "other"
)

// attemptKind classifies the outcome of TryAcquire or Acquire. A split vote
// (nobody reached a majority) has its own sentinel, tested before
// ErrNotAcquired, which it wraps; any other lost attempt is "held" after the
// wording of its error ("held by another client on k of n nodes").
func attemptKind(err error) string {
	switch {
	case err == nil:
		return kindAcquired
	case errors.Is(err, redlock.ErrSplitVote):
		return kindSplit
	case errors.Is(err, redlock.ErrNotAcquired):
		// The wording, not the key (which may contain anything).
		if strings.Contains(strings.ToLower(err.Error()), "held by another") {
			return kindHeld
		}
		return kindNotAcquired
	case errors.Is(err, redlock.ErrQuorumUnreachable):
		return kindUnreachable
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return kindCanceled
	}
	return kindOther
}

// kinds counts outcomes by kind.
type kinds map[string]int

// String lists the counts in a fixed order, e.g. "12 held, 3 split vote".
func (k kinds) String() string {
	var parts []string
	for _, name := range []string{kindAcquired, kindHeld, kindSplit, kindNotAcquired, kindUnreachable, kindCanceled, kindOther} {
		if k[name] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", k[name], name))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// mergeFindings adds b's safety findings to a (for a scenario that runs
// phases on separate keys, each checked on its own).
func mergeFindings(a, b *Findings, offset int) {
	a.CriticalSections += b.CriticalSections
	a.Steps += b.Steps
	a.Acquisitions += b.Acquisitions
	for k, v := range b.AcquireErrors {
		a.AcquireErrors[k] += v
	}
	for _, o := range b.Overlaps {
		o.A, o.B = o.A+offset, o.B+offset
		a.Overlaps = append(a.Overlaps, o)
	}
	for _, fi := range b.FenceInversions {
		fi.A, fi.B = fi.A+offset, fi.B+offset
		a.FenceInversions = append(a.FenceInversions, fi)
	}
	a.Writes += b.Writes
	a.FencedRejects += b.FencedRejects
	a.UnsafeWrites += b.UnsafeWrites
	a.UnsafeAccepted += b.UnsafeAccepted
	a.LateWrites += b.LateWrites
	a.LateRefused += b.LateRefused
	a.LossSignals += b.LossSignals
	a.LateLossSignals += b.LateLossSignals
	switch {
	case a.Linearizable == "" || a.Linearizable == "Ok":
		a.Linearizable = b.Linearizable
	}
}

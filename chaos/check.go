package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// Overlap is a mutual-exclusion violation: two critical sections of
// different acquisitions overlapped while both holders believed their lock
// valid.
type Overlap struct {
	A, B     int           // CS ids
	ClientA  int           `json:"client_a"`
	ClientB  int           `json:"client_b"`
	FenceA   uint64        `json:"fence_a"`
	FenceB   uint64        `json:"fence_b"`
	From, To time.Duration // the overlap on the timeline
}

// FenceInversion: acquisition B began after acquisition A returned, but B's
// fence is not greater than A's.
type FenceInversion struct {
	A, B   int // CS ids
	FenceA uint64
	FenceB uint64
}

// Findings is what the checker found in one scenario's history.
type Findings struct {
	CriticalSections int `json:"critical_sections"`
	Steps            int `json:"steps"`
	Acquisitions     int `json:"acquisitions"`
	AcquireErrors    map[string]int

	Overlaps        []Overlap        `json:"overlaps,omitempty"`
	FenceInversions []FenceInversion `json:"fence_inversions,omitempty"`

	Writes          int `json:"writes"`
	FencedRejects   int `json:"fenced_rejections"` // writes the register refused
	UnsafeWrites    int `json:"unsafe_writes"`     // writes that came after a newer fence touched the register
	UnsafeAccepted  int `json:"unsafe_accepted"`   // of those, accepted: fencing failed
	LateWrites      int `json:"late_writes"`       // writes after the writer's believed validity ended
	LateRefused     int `json:"late_refused"`
	LossSignals     int `json:"loss_signals"`
	LateLossSignals int `json:"late_loss_signals"` // told after validity had ended
	// MaxLossMargin / MinLossMargin: how long before validity end the loss
	// was signalled (negative: late).
	MinLossMargin time.Duration `json:"min_loss_margin_ns"`

	Linearizable string `json:"linearizable"` // porcupine: Ok, Illegal, Unknown

	info porcupine.LinearizationInfo
}

// Check runs every check on a scenario's history.
func Check(css []CS, acqs []AcqResult, ops []RegOp, fencing bool, timeout time.Duration) *Findings {
	f := &Findings{CriticalSections: len(css), AcquireErrors: map[string]int{}}
	for _, a := range acqs {
		if a.OK {
			f.Acquisitions++
		} else {
			f.AcquireErrors[a.Err]++
		}
	}
	f.Overlaps = checkOverlaps(css)
	f.FenceInversions = checkFences(css)
	checkWrites(f, css, ops)
	checkLoss(f, css)
	hist := history(css, ops)
	res, info := porcupine.CheckOperationsVerbose(registerModel(fencing), hist, timeout)
	f.Linearizable, f.info = string(res), info
	return f
}

// checkOverlaps sweeps the believed-valid intervals [Start, BelievedEnd) in
// start order.
func checkOverlaps(css []CS) []Overlap {
	type iv struct {
		id         int
		start, end time.Duration
	}
	var ivs []iv
	for _, c := range css {
		if e := c.BelievedEnd(); e > c.Start {
			ivs = append(ivs, iv{c.ID, c.Start, e})
		}
	}
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].start < ivs[j].start })
	var out []Overlap
	var active []iv // intervals that may still overlap later ones
	for _, x := range ivs {
		keep := active[:0]
		for _, a := range active {
			if a.end > x.start {
				keep = append(keep, a)
			}
		}
		active = keep
		for _, a := range active {
			ca, cb := css[a.id], css[x.id]
			out = append(out, Overlap{A: a.id, B: x.id, ClientA: ca.Client, ClientB: cb.Client,
				FenceA: ca.Fence, FenceB: cb.Fence, From: x.start, To: min(a.end, x.end)})
		}
		active = append(active, x)
	}
	return out
}

// checkFences: every acquisition that began after another one returned has
// a strictly greater fence.
func checkFences(css []CS) []FenceInversion {
	byEnd := make([]int, len(css))
	byStart := make([]int, len(css))
	for i := range css {
		byEnd[i], byStart[i] = i, i
	}
	sort.Slice(byEnd, func(i, j int) bool { return css[byEnd[i]].AcqEnd < css[byEnd[j]].AcqEnd })
	sort.Slice(byStart, func(i, j int) bool { return css[byStart[i]].AcqStart < css[byStart[j]].AcqStart })
	var out []FenceInversion
	best := -1 // the CS with the highest fence among those returned so far
	k := 0
	for _, b := range byStart {
		for k < len(byEnd) && css[byEnd[k]].AcqEnd < css[b].AcqStart {
			if best < 0 || css[byEnd[k]].Fence > css[best].Fence {
				best = byEnd[k]
			}
			k++
		}
		if best >= 0 && css[b].Fence <= css[best].Fence {
			out = append(out, FenceInversion{A: best, B: b, FenceA: css[best].Fence, FenceB: css[b].Fence})
		}
	}
	return out
}

// checkWrites replays the register history in its own order: a write that
// comes after an op with a greater fence is unsafe and must have been
// refused; a write after the writer's believed validity is late.
func checkWrites(f *Findings, css []CS, ops []RegOp) {
	owner := map[int]int{} // write seq -> CS id
	for _, c := range css {
		f.Steps += len(c.Steps)
		for _, s := range c.Steps {
			if s.WriteSeq >= 0 {
				owner[s.WriteSeq] = c.ID
			}
		}
	}
	var maxFence uint64
	for _, op := range ops {
		if op.Kind == OpWrite {
			f.Writes++
			if !op.Accepted {
				f.FencedRejects++
			}
			if op.Fence < maxFence {
				f.UnsafeWrites++
				if op.Accepted {
					f.UnsafeAccepted++
				}
			}
			if id, ok := owner[op.Seq]; ok && op.At > css[id].BelievedEnd() {
				f.LateWrites++
				if !op.Accepted {
					f.LateRefused++
				}
			}
		}
		if op.Kind == OpRead || op.Accepted {
			maxFence = max(maxFence, op.Fence)
		}
	}
}

func checkLoss(f *Findings, css []CS) {
	first := true
	for _, c := range css {
		if c.LossAt == 0 || c.GCPaused { // a frozen process is told nothing in time, by design
			continue
		}
		f.LossSignals++
		m := c.LossValid - c.LossAt
		if m < 0 {
			f.LateLossSignals++
		}
		if first || m < f.MinLossMargin {
			f.MinLossMargin, first = m, false
		}
	}
}

// The porcupine model: a counter register with fenced writes. Each step of
// a critical section gives two operations: its read (which also raises the
// register's highest fence seen), and, unless the step stopped after its
// read, the step as a whole from read to write: read r, then write r+1 with
// the lock's fence. The whole-step operation is what finds a lost update:
// two steps that read the same value and both wrote cannot be ordered.

type regInput struct {
	Client int
	Fence  uint64
	Write  bool
}

type regOutput struct {
	Read     int64
	Accepted bool
}

type regState struct {
	Value    int64
	MaxFence uint64
}

func registerModel(fencing bool) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return regState{} },
		Step: func(state, input, output any) (bool, any) {
			s, in, out := state.(regState), input.(regInput), output.(regOutput)
			if !in.Write { // a read
				if out.Read != s.Value {
					return false, s
				}
				return true, regState{s.Value, max(s.MaxFence, in.Fence)}
			}
			if fencing && in.Fence < s.MaxFence {
				// A stale holder: its write must be refused, and what it
				// read does not matter.
				return !out.Accepted, s
			}
			if !out.Accepted || out.Read != s.Value {
				return false, s
			}
			return true, regState{out.Read + 1, max(s.MaxFence, in.Fence)}
		},
		DescribeOperation: func(input, output any) string {
			in, out := input.(regInput), output.(regOutput)
			if !in.Write {
				return fmt.Sprintf("fence %d: read %d", in.Fence, out.Read)
			}
			if !out.Accepted {
				return fmt.Sprintf("fence %d: read %d, write %d REFUSED", in.Fence, out.Read, out.Read+1)
			}
			return fmt.Sprintf("fence %d: read %d, write %d", in.Fence, out.Read, out.Read+1)
		},
		DescribeState: func(state any) string {
			s := state.(regState)
			return fmt.Sprintf("value %d, max fence %d", s.Value, s.MaxFence)
		},
	}
}

// history turns the steps into porcupine operations timed by the register
// (the read's and the write's instants).
func history(css []CS, ops []RegOp) []porcupine.Operation {
	var h []porcupine.Operation
	for _, c := range css {
		for _, s := range c.Steps {
			r := ops[s.ReadSeq]
			h = append(h, porcupine.Operation{ClientId: c.Client, Call: int64(r.At), Return: int64(r.At) + 1,
				Input: regInput{Client: c.Client, Fence: c.Fence}, Output: regOutput{Read: r.Value}})
			if s.WriteSeq >= 0 {
				w := ops[s.WriteSeq]
				h = append(h, porcupine.Operation{ClientId: c.Client, Call: int64(r.At), Return: int64(w.At),
					Input:  regInput{Client: c.Client, Fence: c.Fence, Write: true},
					Output: regOutput{Read: r.Value, Accepted: w.Accepted}})
			}
		}
	}
	slices.SortFunc(h, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	return h
}

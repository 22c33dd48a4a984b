package sim

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// Summary adds up the schedules of a profile: what was injected, what was
// checked and what was found.
type Summary struct {
	mu               sync.Mutex
	Schedules        int
	OutsideRules     int // schedules with a fault outside the README's rules
	CriticalSections int
	Calls            int
	Requests, Lost   int64
	Faults           map[FaultKind]int
	Violations       map[string]int
	Known            map[string]int // schedules with an instance of a known finding on main
	Failed           []uint64       // seeds with a violation that is not a known finding
	Simulated        time.Duration
}

// NewSummary returns an empty summary.
func NewSummary() *Summary {
	return &Summary{Faults: map[FaultKind]int{}, Violations: map[string]int{}, Known: map[string]int{}}
}

// Add counts one checked schedule.
func (s *Summary) Add(o *Outcome, vs []Violation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Schedules++
	if o.Schedule.OutsideRules() {
		s.OutsideRules++
	}
	s.CriticalSections += len(o.CSS)
	s.Calls += len(o.Calls)
	s.Requests += o.Requests
	s.Lost += o.Lost
	s.Simulated += o.Schedule.Duration
	for _, f := range o.Schedule.Faults {
		s.Faults[f.Kind]++
	}
	seen := map[string]bool{}
	for _, v := range vs {
		key := v.Kind
		if v.Known != "" {
			key = "known:" + v.Known
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		if v.Known != "" {
			s.Known[v.Known]++
		} else {
			s.Violations[v.Kind]++
		}
	}
	if len(Unknown(vs)) > 0 {
		s.Failed = append(s.Failed, o.Schedule.Seed)
	}
}

// Table is the summary as printed at the end of a profile.
func (s *Summary) Table() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d schedules (%d outside the rules: eviction, or a restart before the TTL without recovery), %s simulated; %d critical sections, %d lock calls, %d node requests (%d lost)\n",
		s.Schedules, s.OutsideRules, s.Simulated.Round(time.Second), s.CriticalSections, s.Calls, s.Requests, s.Lost)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULT\tINJECTED")
	for _, k := range faultKinds {
		fmt.Fprintf(tw, "%s\t%d\n", k, s.Faults[k])
	}
	fmt.Fprintln(tw, "network drops / delay spikes\tper schedule (see lost requests)")
	fmt.Fprintln(tw, "\t")
	fmt.Fprintln(tw, "CHECK\tSCHEDULES VIOLATING")
	for _, k := range ViolationKinds {
		fmt.Fprintf(tw, "%s\t%d\n", k, s.Violations[k])
	}
	for _, k := range knownFindings {
		fmt.Fprintf(tw, "known finding on main: %s\t%d\n", k.name, s.Known[k.name])
	}
	_ = tw.Flush()
	if len(s.Failed) > 0 {
		failed := append([]uint64(nil), s.Failed...)
		sort.Slice(failed, func(i, j int) bool { return failed[i] < failed[j] })
		if len(failed) > 20 {
			failed = failed[:20]
		}
		fmt.Fprintf(&b, "failing seeds (first 20): %v\n", failed)
	}
	return b.String()
}

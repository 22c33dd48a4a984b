package locktest

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Recorder records what the code under test does inside its critical
// sections, and finds what must not happen: two holders inside one section
// at once, a write accepted with a fence older than one already accepted
// for the same resource, and work meant to run once done twice. It is safe
// for concurrent use; times are read from time.Now (fake in a bubble).
type Recorder struct {
	mu         sync.Mutex
	start      time.Time
	events     []string
	inside     map[string]map[holder]int // section -> holders inside, with depth
	accepted   map[string]holder         // resource -> newest accepted write
	done       map[string]string         // work -> who did it
	violations []Violation
}

type holder struct {
	who   string
	fence uint64
}

func (h holder) String() string { return fmt.Sprintf("%s (fence %d)", h.who, h.fence) }

// Violation is one thing the Recorder found.
type Violation struct {
	Kind   string        // "overlap", "stale write" or "done twice"
	At     time.Duration // since the Recorder was made
	Detail string
}

func (v Violation) String() string { return fmt.Sprintf("%s at +%v: %s", v.Kind, v.At, v.Detail) }

// NewRecorder returns an empty Recorder; its clock starts now.
func NewRecorder() *Recorder {
	return &Recorder{start: time.Now(), inside: map[string]map[holder]int{},
		accepted: map[string]holder{}, done: map[string]string{}}
}

// Enter marks who entering section holding the lock with fence; call the
// returned function when it leaves. Another holder (another who or fence)
// inside the same section at that moment is an overlap.
func (r *Recorder) Enter(who, section string, fence uint64) (leave func()) {
	h := holder{who, fence}
	r.mu.Lock()
	defer r.mu.Unlock()
	at := r.note("%s enters %s with fence %d", who, section, fence)
	in := r.inside[section]
	if in == nil {
		in = map[holder]int{}
		r.inside[section] = in
	}
	for other := range in {
		if other != h {
			r.violate("overlap", at, "%s entered %s while %s was inside", h, section, other)
		}
	}
	in[h]++
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.note("%s leaves %s", who, section)
			if in[h]--; in[h] == 0 {
				delete(in, h)
			}
		})
	}
}

// Wrote marks that resource accepted a write of who with fence. A write
// accepted with a fence older than one the resource already accepted is a
// stale write: the resource should have refused it. Call it only for
// writes the resource took, not for those it refused.
func (r *Recorder) Wrote(who, resource string, fence uint64) {
	h := holder{who, fence}
	r.mu.Lock()
	defer r.mu.Unlock()
	at := r.note("%s wrote %s with fence %d", who, resource, fence)
	if prev, ok := r.accepted[resource]; ok && fence < prev.fence {
		r.violate("stale write", at, "%s accepted a write of %s after one of %s", resource, h, prev)
		return
	}
	r.accepted[resource] = h
}

// Did marks that who did work, which must be done once (a task, a tick of
// a scheduled job); a second Did of the same work is a violation.
func (r *Recorder) Did(who, work string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := r.note("%s did %s", who, work)
	if first, ok := r.done[work]; ok {
		r.violate("done twice", at, "%s was done by %s, then by %s", work, first, who)
		return
	}
	r.done[work] = who
}

// Note adds a line of the caller's own to the timeline.
func (r *Recorder) Note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.note(format, args...)
}

// note appends an event; called with r.mu held.
func (r *Recorder) note(format string, args ...any) time.Duration {
	at := time.Since(r.start)
	r.events = append(r.events, fmt.Sprintf("%12s  %s", "+"+at.String(), fmt.Sprintf(format, args...)))
	return at
}

func (r *Recorder) violate(kind string, at time.Duration, format string, args ...any) {
	v := Violation{Kind: kind, At: at, Detail: fmt.Sprintf(format, args...)}
	r.violations = append(r.violations, v)
	r.events = append(r.events, fmt.Sprintf("%12s  VIOLATION %s", "", v.Kind))
}

// Violations returns what was found so far, in order.
func (r *Recorder) Violations() []Violation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Violation(nil), r.violations...)
}

// Timeline returns every event, one a line, with its time since the
// Recorder was made.
func (r *Recorder) Timeline() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.events, "\n")
}

// Report is the violations and the timeline, as Check prints them; empty
// when nothing was found.
func (r *Recorder) Report() string {
	vs := r.Violations()
	if len(vs) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "locktest: %d violation(s):\n", len(vs))
	for _, v := range vs {
		fmt.Fprintf(&b, "  %s\n", v)
	}
	b.WriteString("timeline:\n")
	b.WriteString(r.Timeline())
	return b.String()
}

// Check fails t with the Report when something was found.
func (r *Recorder) Check(t TB) {
	t.Helper()
	if rep := r.Report(); rep != "" {
		t.Errorf("%s", rep)
	}
}

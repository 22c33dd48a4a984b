package sim

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/quorumlock/quorumlock/node"
)

// traceLog is an opt-in log (SIM_TRACE=1) of a schedule at the level of
// requests, on the fake clock: each request as its client sent it and as
// the node applied it, each release announcement as a client heard it or
// lost it, the Observer's events and the faults. A failing seed's trace is
// written beside its timeline: it is how a finding is read. The log takes
// a lock on every event, which changes the order of goroutines woken at
// one fake instant: a rare finding may show up less often with it.
type traceLog struct {
	mu    sync.Mutex
	lines []string
}

// newTraceLog returns the log of a schedule, or nil when SIM_TRACE is unset.
func newTraceLog() *traceLog {
	if os.Getenv("SIM_TRACE") == "" {
		return nil
	}
	return &traceLog{}
}

// tr adds one event to the schedule's trace, if it keeps one.
func (w *world) tr(format string, args ...any) {
	if w.trace == nil {
		return
	}
	line := fmt.Sprintf("%14s  ", w.at()) + fmt.Sprintf(format, args...)
	w.trace.mu.Lock()
	w.trace.lines = append(w.trace.lines, line)
	w.trace.mu.Unlock()
}

func (t *traceLog) String() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n") + "\n"
}

// rid is the short release id of a token, as nodes name holders.
func rid(token string) string { return shortID(node.ReleaseID(token)) }

func shortID(id string) string {
	if id == "" {
		return "-"
	}
	return id[:min(6, len(id))]
}

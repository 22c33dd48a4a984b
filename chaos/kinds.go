package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"
)

// This file holds what the scenarios of the other lock kinds (semaphore,
// multilock) share: a minority fault schedule, one fenced critical section
// under a lock, per-key histories checked with the usual checker, and
// progress counted per second.

// minorityFaults cycles through the existing faults on a minority of the
// five nodes, so that a majority stays reachable and progress is expected:
// node 4 killed (SIGKILL) and restarted empty after 2 TTL (no sooner than
// the TTL: the delayed-restart rule), then node 3 paused (SIGSTOP) for 2
// TTL and resumed.
func minorityFaults(ctx context.Context, e *Env) error {
	k := 0
	return cycle(ctx, e.TTL, func() error {
		k++
		if k%2 == 1 {
			var killed time.Time
			return e.fault(ctx, "kill node 4, delayed restart", false, 2*e.TTL,
				func() error { killed = time.Now(); return e.node(4).Kill() },
				func() error {
					time.Sleep(e.TTL - time.Since(killed)) // also when the run ends early
					return e.node(4).Restart(context.Background())
				})
		}
		return e.fault(ctx, "pause node 3 (SIGSTOP)", false, 2*e.TTL,
			func() error { return e.node(3).Pause() },
			func() error { return e.node(3).Resume() })
	})
}

// history is the record of one key (a mutex, a semaphore slot): its fenced
// register and its critical sections, checked on their own.
type keyHistory struct {
	reg *Register
	rec *recorder
}

// histories holds one keyHistory per key, created on first use.
type histories struct {
	clock *Clock
	mu    sync.Mutex
	byKey map[string]*keyHistory
}

func newHistories(clock *Clock) *histories {
	return &histories{clock: clock, byKey: map[string]*keyHistory{}}
}

func (h *histories) of(key string) *keyHistory {
	h.mu.Lock()
	defer h.mu.Unlock()
	kh := h.byKey[key]
	if kh == nil {
		kh = &keyHistory{reg: NewRegister(h.clock, true), rec: &recorder{}}
		h.byKey[key] = kh
	}
	return kh
}

// critical runs one read-then-write of key's register under a lock, as
// contention's phases do: the write only while the lock is valid by the
// holder's clock (validUntil), with the lock's fence. It returns the
// critical section (not yet recorded).
func (h *histories) critical(client int, key string, fence uint64, validUntil func() time.Time, acqStart, acqEnd time.Duration) CS {
	kh := h.of(key)
	cs := CS{Client: client, Fence: fence, AcqStart: acqStart, AcqEnd: acqEnd, Start: acqEnd}
	v, rseq := kh.reg.Read(client, cs.Fence)
	time.Sleep(time.Duration(500+rand.IntN(1000)) * time.Microsecond)
	step := Step{ReadSeq: rseq, WriteSeq: -1}
	if time.Now().Before(validUntil()) {
		step.Accepted, step.WriteSeq = kh.reg.Write(client, cs.Fence, v+1)
	} else {
		cs.Aborted = true
	}
	cs.Steps = append(cs.Steps, step)
	cs.End = h.clock.Now()
	cs.ValidEnd = h.clock.At(validUntil())
	return cs
}

// check runs the checker on every key's history and merges the findings;
// all returns every critical section (ids renumbered) for depth counts.
func (h *histories) check(p Profile) (f *Findings, all []CS) {
	h.mu.Lock()
	defer h.mu.Unlock()
	keys := make([]string, 0, len(h.byKey))
	for k := range h.byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	f = &Findings{AcquireErrors: map[string]int{}}
	for _, k := range keys {
		kh := h.byKey[k]
		mergeFindings(f, Check(kh.rec.css, kh.rec.acqs, kh.reg.Ops(), true, p.CheckTimeout), len(all))
		for _, c := range kh.rec.css {
			c.ID = len(all)
			all = append(all, c)
		}
	}
	return f, all
}

// maxDepth is the largest number of critical sections believed valid at
// one instant ([Start, BelievedEnd), touching ends do not overlap).
func maxDepth(css []CS) int {
	type ev struct {
		at    time.Duration
		delta int
	}
	var evs []ev
	for _, c := range css {
		if e := c.BelievedEnd(); e > c.Start {
			evs = append(evs, ev{c.Start, +1}, ev{e, -1})
		}
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].at != evs[j].at {
			return evs[i].at < evs[j].at
		}
		return evs[i].delta < evs[j].delta
	})
	depth, best := 0, 0
	for _, e := range evs {
		depth += e.delta
		best = max(best, depth)
	}
	return best
}

// perSecond counts events per whole second from begin for seconds.
type perSecond struct {
	mu      sync.Mutex
	begin   time.Duration
	buckets []int
}

func newPerSecond(begin time.Duration, seconds int) *perSecond {
	return &perSecond{begin: begin, buckets: make([]int, seconds)}
}

func (s *perSecond) add(at time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := int((at - s.begin) / time.Second); i >= 0 && i < len(s.buckets) {
		s.buckets[i]++
	}
}

func (s *perSecond) zero() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, b := range s.buckets {
		if b == 0 {
			n++
		}
	}
	return n
}

func (s *perSecond) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprint(s.buckets)
}

// runWithFaults runs load until the profile's time is up while
// minorityFaults runs, and returns the fault windows.
func runWithFaults(ctx context.Context, p Profile, e *Env, load func(ctx context.Context)) ([]Window, error) {
	rctx, cancel := context.WithTimeout(ctx, p.PerScenario)
	defer cancel()
	faultErr := make(chan error, 1)
	go func() { faultErr <- minorityFaults(rctx, e) }()
	load(rctx)
	cancel()
	err := <-faultErr // a fault cut short is undone (off) before it returns
	return e.Windows(), err
}

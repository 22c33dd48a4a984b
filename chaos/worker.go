package chaos

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
)

// CS is one critical section: one acquisition of the lock and the
// read/write steps done under it, on the run's timeline.
type CS struct {
	ID       int           `json:"id"`
	Client   int           `json:"client"`
	Fence    uint64        `json:"fence"`
	AcqStart time.Duration `json:"acq_start_ns"` // Acquire called
	AcqEnd   time.Duration `json:"acq_end_ns"`   // Acquire returned
	Start    time.Duration `json:"start_ns"`     // critical section entered
	End      time.Duration `json:"end_ns"`       // last step done
	// ValidEnd is what the client believed, at End, about its lock: the
	// ValidUntil of its lock (moved forward by extensions, moved back to
	// the moment of loss when the library found the lock lost).
	ValidEnd time.Duration `json:"valid_end_ns"`
	// LossAt is when the holder was told it lost the lock (0: never).
	LossAt time.Duration `json:"loss_at_ns,omitempty"`
	// LossValid is the validity the holder had before it was told of the
	// loss: the signal must come before it.
	LossValid time.Duration `json:"loss_valid_ns,omitempty"`
	Steps     []Step        `json:"steps"`
	Aborted   bool          `json:"aborted,omitempty"`    // stopped early: the lock was no longer valid
	GCPaused  bool          `json:"gc_paused,omitempty"`  // a simulated stop-the-world pause before a write
	ReleaseOK bool          `json:"release_ok,omitempty"` // Release returned nil
}

// BelievedEnd is the end of the interval in which the holder believed its
// lock valid while in the critical section.
func (c *CS) BelievedEnd() time.Duration {
	e := min(c.End, c.ValidEnd)
	if c.LossAt > 0 {
		e = min(e, c.LossAt)
	}
	return e
}

// Step is one read-then-write of the register under a lock. WriteSeq is -1
// when the step stopped after its read (the lock was no longer valid).
type Step struct {
	ReadSeq  int  `json:"read_seq"`
	WriteSeq int  `json:"write_seq"`
	Accepted bool `json:"accepted,omitempty"`
}

// AcqResult is one call of Acquire.
type AcqResult struct {
	Client int           `json:"client"`
	Start  time.Duration `json:"start_ns"`
	End    time.Duration `json:"end_ns"`
	OK     bool          `json:"ok"`
	Err    string        `json:"err,omitempty"` // "quorum_unreachable", "not_acquired", "canceled", or "other: ..."
}

func errKind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, redlock.ErrQuorumUnreachable):
		return "quorum_unreachable"
	case errors.Is(err, redlock.ErrNotAcquired):
		return "not_acquired"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	}
	return "other: " + err.Error()
}

// recorder collects what the workers did.
type recorder struct {
	mu   sync.Mutex
	css  []CS
	acqs []AcqResult
}

func (r *recorder) addAcq(a AcqResult) {
	r.mu.Lock()
	r.acqs = append(r.acqs, a)
	r.mu.Unlock()
}

func (r *recorder) addCS(c CS) {
	r.mu.Lock()
	c.ID = len(r.css)
	r.css = append(r.css, c)
	r.mu.Unlock()
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.css)
}

// worker is one client looping: Client.Do (acquire, auto-extension, release)
// around a critical section.
type worker struct {
	id        int
	client    *redlock.Client
	key       string
	ttl       time.Duration
	clock     *Clock
	reg       *Register
	rec       *recorder
	longEvery time.Duration // a long critical section (spanning more than the TTL) at most this often; 0: never
	nextLong  time.Time
	gcPause   func() bool   // nil or: pause this critical section before its write?
	longAt    *atomic.Int64 // timeline instant at which the latest long critical section began
	cur       atomic.Pointer[tracked]
}

// tracked follows the lock a worker holds through the client's Observer
// (each worker has its own Client and holds one lock at a time): the
// furthest validity it was given, and when it was told of its loss.
type tracked struct {
	lock *redlock.Lock

	mu       sync.Mutex
	maxValid time.Time
	lossAt   time.Time
	lossMax  time.Time // maxValid when the loss was signalled
}

func (t *tracked) noteValid() {
	v := t.lock.ValidUntil()
	t.mu.Lock()
	if v.After(t.maxValid) {
		t.maxValid = v
	}
	t.mu.Unlock()
}

// observe is the worker's observe.Observer. observe.Lost comes synchronously
// from the goroutine that ended the lock, right after Done closed.
func (w *worker) observe(e observe.Event) {
	t := w.cur.Load()
	if t == nil {
		return
	}
	switch e.Kind {
	case observe.Extended:
		t.noteValid()
	case observe.Lost:
		now := time.Now()
		t.mu.Lock()
		if t.lossAt.IsZero() {
			t.lossAt, t.lossMax = now, t.maxValid
		}
		t.mu.Unlock()
	}
}

func (w *worker) run(ctx context.Context) {
	for ctx.Err() == nil {
		acqStart := w.clock.Now()
		var cs *CS
		err := w.client.Do(ctx, w.key, w.ttl, func(fctx context.Context) error {
			l, _ := redlock.LockFromContext(fctx)
			cs = &CS{Client: w.id, Fence: l.Fence(), AcqStart: acqStart, AcqEnd: w.clock.Now()}
			t := &tracked{lock: l, maxValid: l.ValidUntil()}
			w.cur.Store(t)
			w.critical(ctx, fctx, l, cs)
			cs.ValidEnd = w.clock.At(l.ValidUntil())
			t.mu.Lock()
			if !t.lossAt.IsZero() {
				cs.LossAt, cs.LossValid = w.clock.At(t.lossAt), w.clock.At(t.lossMax)
			} else if errors.Is(l.Err(), redlock.ErrLockLost) {
				// Ended by its expiry timer, not told ahead: a late signal.
				cs.LossAt, cs.LossValid = cs.ValidEnd, cs.ValidEnd-1
			}
			t.mu.Unlock()
			return nil
		})
		if cs == nil {
			w.rec.addAcq(AcqResult{Client: w.id, Start: acqStart, End: w.clock.Now(), Err: errKind(err)})
			if ctx.Err() != nil {
				return
			}
			// Acquire already waited through its retry policy; a short
			// pause keeps a client facing a dead quorum from spinning.
			sleepCtx(ctx, 5*time.Millisecond)
			continue
		}
		w.cur.Store(nil)
		w.rec.addAcq(AcqResult{Client: w.id, Start: acqStart, End: cs.AcqEnd, OK: true})
		cs.ReleaseOK = err == nil
		w.rec.addCS(*cs)
	}
}

func (w *worker) critical(ctx, fctx context.Context, l *redlock.Lock, cs *CS) {
	// The holder's belief: not told of loss, and before ValidUntil.
	valid := func() bool { return fctx.Err() == nil && time.Now().Before(l.ValidUntil()) }
	steps, work := 1, time.Duration(500+rand.IntN(1500))*time.Microsecond
	if w.longEvery > 0 && w.nextLong.IsZero() {
		w.nextLong = time.Now().Add(rand.N(w.longEvery))
	}
	if w.longEvery > 0 && time.Now().After(w.nextLong) {
		// A long critical section: its steps add up to more than the
		// TTL, so it only stays valid through extensions.
		steps, work = 4, w.ttl/3
		w.nextLong = time.Now().Add(w.longEvery/2 + rand.N(w.longEvery))
		w.longAt.Store(int64(w.clock.Now()))
	}
	cs.Start = w.clock.Now()
	defer func() { cs.End = w.clock.Now() }()
	for range steps {
		if !valid() {
			cs.Aborted = true
			return
		}
		v, rseq := w.reg.Read(w.id, cs.Fence)
		st := Step{ReadSeq: rseq, WriteSeq: -1}
		sleepCtx(fctx, work)
		if !valid() {
			cs.Steps = append(cs.Steps, st)
			cs.Aborted = true
			return
		}
		if w.gcPause != nil && w.gcPause() {
			// A stop-the-world pause between the validity check and the
			// write: the whole process freezes, auto-extension too.
			cs.GCPaused = true
			l.KeepAlive()() // KeepAlive returns the running auto-extension's stop
			w.pauseUntilOvertaken(ctx, cs.Fence, l)
			if ctx.Err() != nil { // the run ended during the pause
				cs.Steps = append(cs.Steps, st)
				cs.Aborted = true
				return
			}
		}
		st.Accepted, st.WriteSeq = w.reg.Write(w.id, cs.Fence, v+1)
		cs.Steps = append(cs.Steps, st)
	}
}

// pauseUntilOvertaken sleeps past the lock's validity and on until the
// register has seen a newer fence (another client acquired the lock and
// touched the resource), at most 20 TTLs: the write that follows is then a
// late write that fencing must refuse, however loaded the machine is.
func (w *worker) pauseUntilOvertaken(ctx context.Context, fence uint64, l *redlock.Lock) {
	sleepCtx(ctx, time.Until(l.ValidUntil())+w.ttl)
	deadline := time.Now().Add(20 * w.ttl)
	for ctx.Err() == nil && w.reg.MaxFence() <= fence && time.Now().Before(deadline) {
		sleepCtx(ctx, 5*time.Millisecond)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

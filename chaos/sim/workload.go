package sim

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/chaos"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
)

// recorder collects what the clients did, on the chaos run's timeline, in
// the checker's types (chaos.CS, chaos.AcqResult).
type recorder struct {
	mu    sync.Mutex
	css   []chaos.CS
	acqs  []chaos.AcqResult
	calls []callRec
	obs   [][]obsEvent              // per client: attempts and lost attempts, from the Observer
	cur   []atomic.Pointer[tracked] // per client: the lock it holds
}

// callRec is one Acquire or TryAcquire call.
type callRec struct {
	Client     int
	Try        bool
	Start, End time.Duration
	OK         bool
	Err        string // "held", "split", "quorum", "canceled", other
	Msg        string // the error's text
}

type obsEvent struct {
	at     time.Duration
	kind   observe.Kind
	reason string // Contended: why the attempt lost (observe's reasons)
}

// tracked follows a held lock through the Observer: the furthest validity
// it was given, and when its holder was told of the loss.
type tracked struct {
	lock     *redlock.Lock
	mu       sync.Mutex
	maxValid time.Time
	lossAt   time.Time
	lossMax  time.Time
}

func (r *recorder) observer(c int, clock *chaos.Clock) observe.Observer {
	return observe.Func(func(e observe.Event) {
		switch e.Kind {
		case observe.Attempt, observe.Contended:
			r.mu.Lock()
			r.obs[c] = append(r.obs[c], obsEvent{clock.Now(), e.Kind, e.Reason})
			r.mu.Unlock()
		case observe.Extended, observe.Lost:
			t := r.cur[c].Load()
			if t == nil {
				return
			}
			t.mu.Lock()
			defer t.mu.Unlock()
			if e.Kind == observe.Extended {
				if v := t.lock.ValidUntil(); v.After(t.maxValid) {
					t.maxValid = v
				}
			} else if t.lossAt.IsZero() {
				t.lossAt, t.lossMax = time.Now(), t.maxValid
			}
		}
	})
}

func errClass(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, redlock.ErrSplitVote):
		return "split"
	case errors.Is(err, redlock.ErrNotAcquired) && strings.Contains(err.Error(), "held by another"):
		return "held"
	case errors.Is(err, redlock.ErrNotAcquired):
		return "not_acquired"
	case errors.Is(err, redlock.ErrQuorumUnreachable):
		return "quorum"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	}
	return "other: " + err.Error()
}

// work is client c's loop until ctx ends.
func (w *world) work(ctx context.Context, c int) {
	r := rng(w.s.Seed, 2, uint64(c))
	cl := w.clients[c]
	ttl := w.s.TTL
	if w.s.Work == WorkCron {
		// Every replica fires at the same instants: TryDo on each tick.
		tick := ttl
		for i := 1; ; i++ {
			if !sleepUntil(ctx, w.start.Add(time.Duration(i)*tick)) {
				return
			}
			w.try(ctx, c, r.IntN(4) == 0)
		}
	}
	for ctx.Err() == nil {
		sleepCtx(ctx, time.Duration(r.Int64N(int64(ttl/5))))
		long := r.IntN(7) == 0
		switch k := r.IntN(20); {
		case k < 14:
			w.do(ctx, c, cl, long)
		case k < 18:
			w.manual(ctx, c, cl, long, false)
		default:
			w.manual(ctx, c, cl, long, true)
		}
	}
}

// do is one Client.Do around a critical section.
func (w *world) do(ctx context.Context, c int, cl *redlock.Client, long bool) {
	start := w.at()
	var cs *chaos.CS
	err := cl.Do(ctx, key, w.s.TTL, func(fctx context.Context) error {
		l, _ := redlock.LockFromContext(fctx)
		cs = w.begin(c, l, start)
		w.critical(ctx, fctx, c, l, cs, long, false)
		w.finish(c, l, cs)
		return nil
	})
	w.endCall(c, false, start, cs, err)
}

// try is one TryDo (cron): a single attempt, fn runs only if it won.
func (w *world) try(ctx context.Context, c int, long bool) {
	start := w.at()
	var cs *chaos.CS
	l, err := w.clients[c].TryAcquire(ctx, key, w.s.TTL)
	if err == nil {
		cs = w.begin(c, l, start)
		_, lerr, rerr := l.Hold(ctx, func(fctx context.Context) error {
			w.critical(ctx, fctx, c, l, cs, long, false)
			w.finish(c, l, cs)
			return nil
		})
		err = errors.Join(lerr, rerr)
	}
	w.endCall(c, true, start, cs, err)
}

// manual is Acquire (or TryAcquire), a critical section kept valid with
// manual Extend, and Release.
func (w *world) manual(ctx context.Context, c int, cl *redlock.Client, long, single bool) {
	start := w.at()
	acquire := cl.Acquire
	if single {
		acquire = cl.TryAcquire
	}
	l, err := acquire(ctx, key, w.s.TTL)
	if err != nil {
		w.endCall(c, single, start, nil, err)
		return
	}
	cs := w.begin(c, l, start)
	lctx, cancel := l.Context(ctx)
	w.critical(ctx, lctx, c, l, cs, long, true)
	cancel()
	w.finish(c, l, cs)
	err = l.Release(context.WithoutCancel(ctx))
	w.endCall(c, single, start, cs, err)
}

func (w *world) begin(c int, l *redlock.Lock, start time.Duration) *chaos.CS {
	t := &tracked{lock: l, maxValid: l.ValidUntil()}
	w.rec.cur[c].Store(t)
	return &chaos.CS{Client: c, Fence: l.Fence(), AcqStart: start, AcqEnd: w.at()}
}

// finish records what the holder believed about its lock at the end.
func (w *world) finish(c int, l *redlock.Lock, cs *chaos.CS) {
	t := w.rec.cur[c].Swap(nil)
	cs.ValidEnd = w.clock.At(l.ValidUntil())
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.lossAt.IsZero() {
		cs.LossAt, cs.LossValid = w.clock.At(t.lossAt), w.clock.At(t.lossMax)
	}
}

func (w *world) endCall(c int, try bool, start time.Duration, cs *chaos.CS, err error) {
	end := w.at()
	if cs != nil {
		err = nil // the acquisition succeeded; what followed is in cs
		cs.ReleaseOK = true
	}
	w.rec.mu.Lock()
	defer w.rec.mu.Unlock()
	rec := callRec{Client: c, Try: try, Start: start, End: end, OK: cs != nil, Err: errClass(err)}
	if err != nil {
		rec.Msg = err.Error()
	}
	w.rec.calls = append(w.rec.calls, rec)
	if cs != nil {
		w.rec.acqs = append(w.rec.acqs, chaos.AcqResult{Client: c, Start: start, End: cs.AcqEnd, OK: true})
		cs.ID = len(w.rec.css)
		w.rec.css = append(w.rec.css, *cs)
	} else {
		w.rec.acqs = append(w.rec.acqs, chaos.AcqResult{Client: c, Start: start, End: end, Err: errClass(err)})
	}
}

// critical is the critical section: steps that read the register and
// write value+1 with the lock's fence, each after a validity check. A
// manual lock (not in Do) is extended by hand when long work needs it.
func (w *world) critical(ctx, fctx context.Context, c int, l *redlock.Lock, cs *chaos.CS, long, manual bool) {
	r := rng(w.s.Seed, 3, uint64(c), uint64(cs.AcqStart))
	valid := func() bool { return fctx.Err() == nil && time.Now().Before(l.ValidUntil()) }
	steps, work := 1+r.IntN(2), time.Duration(500+r.IntN(20_000))*time.Microsecond
	if long {
		steps, work = 3, w.s.TTL/3
	}
	cs.Start = w.at()
	defer func() { cs.End = w.at() }()
	for range steps {
		if manual && l.Remaining() < w.s.TTL/2 {
			_ = l.Extend(fctx, w.s.TTL) // a failure shows in valid()
		}
		if !valid() {
			cs.Aborted = true
			return
		}
		v, rseq := w.reg.Read(c, cs.Fence)
		st := chaos.Step{ReadSeq: rseq, WriteSeq: -1}
		sleepCtx(fctx, work)
		if !valid() {
			cs.Steps = append(cs.Steps, st)
			cs.Aborted = true
			return
		}
		if w.pauseC[c].CompareAndSwap(true, false) {
			// A stop-the-world pause between the validity check and the
			// write, past the lock's validity: auto-extension stops too.
			cs.GCPaused = true
			l.KeepAlive()()
			sleepCtx(ctx, time.Until(l.ValidUntil())+w.s.TTL/2+time.Duration(r.Int64N(int64(w.s.TTL))))
		}
		st.Accepted, st.WriteSeq = w.reg.Write(c, cs.Fence, v+1)
		cs.Steps = append(cs.Steps, st)
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

func sleepUntil(ctx context.Context, at time.Time) bool {
	sleepCtx(ctx, time.Until(at))
	return ctx.Err() == nil
}

package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// contentionTTL is the lock TTL of exact-quorum contention.
const contentionTTL = 2 * time.Second

// Load of exact-quorum contention: 4 clients x 8 goroutines on one key.
const (
	eqClients    = 4
	eqGoroutines = 8
)

// phaseStats is one phase of exact-quorum contention.
type phaseStats struct {
	name     string
	seconds  int
	acquired int   // returned inside the phase
	buckets  []int // acquisitions per whole second of the phase
	errs     kinds // failed Acquire calls (cancellations at the phase's end excluded)
	f        *Findings
	css      int
}

func (s phaseStats) rate() float64 { return float64(s.acquired) / float64(s.seconds) }

func (s phaseStats) zeroSeconds() int {
	n := 0
	for _, b := range s.buckets {
		if b == 0 {
			n++
		}
	}
	return n
}

func (s phaseStats) minBucket() int {
	m := -1
	for _, b := range s.buckets {
		if m < 0 || b < m {
			m = b
		}
	}
	return m
}

// contentionPhase runs the load on key for the given whole seconds: each
// goroutine loops Acquire (the default retry policy) -> a short critical
// section on a fenced register -> Release. Acquisitions are counted per
// second of the phase; the history goes through the usual checker.
func contentionPhase(ctx context.Context, p Profile, e *Env, reps []*replica, name, key string, seconds int) phaseStats {
	st := phaseStats{name: name, seconds: seconds, buckets: make([]int, seconds), errs: kinds{}}
	clock := e.Clock
	reg := NewRegister(clock, true)
	rec := &recorder{}
	pctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second)
	defer cancel()
	begin := clock.Now()
	end := begin + time.Duration(seconds)*time.Second
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c, r := range reps {
		for range eqGoroutines {
			wg.Go(func() {
				for pctx.Err() == nil {
					acqStart := clock.Now()
					l, err := r.client.Acquire(pctx, key, contentionTTL)
					acqEnd := clock.Now()
					if err != nil {
						k := attemptKind(err)
						rec.addAcq(AcqResult{Client: c, Start: acqStart, End: acqEnd, Err: errKind(err)})
						if k == kindCanceled { // the phase ended during the wait
							continue
						}
						mu.Lock()
						st.errs[k]++
						mu.Unlock()
						continue
					}
					rec.addAcq(AcqResult{Client: c, Start: acqStart, End: acqEnd, OK: true})
					if acqEnd < end {
						mu.Lock()
						st.acquired++
						st.buckets[int((acqEnd-begin)/time.Second)]++
						mu.Unlock()
					}
					cs := CS{Client: c, Fence: l.Fence(), AcqStart: acqStart, AcqEnd: acqEnd, Start: acqEnd}
					v, rseq := reg.Read(c, cs.Fence)
					time.Sleep(500 * time.Microsecond)
					step := Step{ReadSeq: rseq, WriteSeq: -1}
					if time.Now().Before(l.ValidUntil()) {
						step.Accepted, step.WriteSeq = reg.Write(c, cs.Fence, v+1)
					} else {
						cs.Aborted = true
					}
					cs.Steps = append(cs.Steps, step)
					cs.End = clock.Now()
					cs.ValidEnd = clock.At(l.ValidUntil())
					rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
					cs.ReleaseOK = l.Release(rctx) == nil
					rcancel()
					rec.addCS(cs)
				}
			})
		}
	}
	wg.Wait()
	st.f = Check(rec.css, rec.acqs, reg.Ops(), true, p.CheckTimeout)
	st.css = len(rec.css)
	return st
}

// runExactQuorum: the same load on 5 healthy nodes, then with 2 of the 5
// killed (3 up: exactly a quorum). Targets: the exact-quorum rate at least
// half the healthy rate of the same run, and no whole second of it without
// an acquisition. Safety: no overlap, no fence inversion, no lost update.
func runExactQuorum(ctx context.Context, p Profile, e *Env) (*Measured, error) {
	seconds := max(int(p.ContentionPhase/time.Second), 1)
	reps, err := newReplicas(eqClients, e.Cluster.Addrs(), false, eqGoroutines*2)
	if err != nil {
		return nil, err
	}
	defer closeReplicas(reps)
	base := time.Now().UnixNano()
	healthy := contentionPhase(ctx, p, e, reps, "5 of 5 up", fmt.Sprintf("exact-quorum-%d-healthy", base), seconds)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	// Kill nodes 3 and 4 while the clients have connections to them.
	killed := time.Now()
	if err := firstErr(e.node(3).Kill(), e.node(4).Kill()); err != nil {
		return nil, err
	}
	from := e.Clock.Now()
	exact := contentionPhase(ctx, p, e, reps, "3 of 5 up", fmt.Sprintf("exact-quorum-%d-3of5", base), seconds)
	win := Window{Fault: "nodes 3,4 killed (3 of 5 up)", From: from, To: e.Clock.Now()}
	// The delayed-restart rule: back (empty) no sooner than the TTL.
	sleepCtx(ctx, contentionTTL-time.Since(killed))
	if err := restartAll(context.Background(), e, 3, 4); err != nil {
		return nil, err
	}

	f := &Findings{AcquireErrors: map[string]int{}}
	mergeFindings(f, healthy.f, 0)
	mergeFindings(f, exact.f, healthy.css)
	m := &Measured{Findings: f, Windows: []Window{win}}
	r := ratio(exact.rate(), healthy.rate())
	m.Figures.info("healthy acquisitions/s", healthy.rate(), "/s")
	m.Figures.info("exact-quorum acquisitions/s", exact.rate(), "/s")
	m.Figures.atLeast("exact-quorum rate / healthy rate", r, "x", 0.5)
	m.Figures.timing()
	m.Figures.atMost("exact-quorum seconds with 0 acquisitions", float64(exact.zeroSeconds()), "", 0)
	m.Figures.timing()
	m.Figures.info("healthy seconds with 0 acquisitions", float64(healthy.zeroSeconds()), "")
	m.Figures.info("exact-quorum failed Acquire calls", float64(sumKinds(exact.errs)), "")
	m.Summary = fmt.Sprintf("%d clients x %d goroutines on one key, %d s per phase: healthy %.0f acq/s (slowest second %d, failed: %s), 3 of 5 up %.0f acq/s (%.2fx; slowest second %d, %d of %d seconds with 0, failed: %s); per-second counts 3 of 5: %v",
		eqClients, eqGoroutines, seconds, healthy.rate(), healthy.minBucket(), healthy.errs, exact.rate(), r, exact.minBucket(), exact.zeroSeconds(), seconds, exact.errs, exact.buckets)
	return m, nil
}

func sumKinds(k kinds) int {
	n := 0
	for _, v := range k {
		n += v
	}
	return n
}

// silentTTL is the TTL of silent-node contention: the node timeout is then
// the default's cap, 1 s.
const silentTTL = 10 * time.Second

// silentContenders is how many goroutines make contended attempts (two per
// contending client).
const silentContenders = 8

// runSilentNode: a holder (its own client) keeps the key with KeepAlive;
// contenders (4 clients, 2 goroutines each) make single attempts
// (TryAcquire), in blocks that alternate between 5 healthy nodes and node 4
// stopped (SIGSTOP), so that both conditions see the same machine load.
// Target: p99 with the silent node within 2x the healthy p99 of the same
// run. Safety: no contender acquires while the holder holds.
func runSilentNode(ctx context.Context, p Profile, e *Env) (*Measured, error) {
	addrs := e.Cluster.Addrs()
	holderRep, err := newReplica(addrs, 0, false, 4, nil)
	if err != nil {
		return nil, err
	}
	defer holderRep.close()
	reps, err := newReplicas(silentContenders/2, addrs, false, 32)
	if err != nil {
		return nil, err
	}
	defer closeReplicas(reps)
	key := fmt.Sprintf("silent-node-%d", time.Now().UnixNano())
	holder, err := holderRep.client.Acquire(ctx, key, silentTTL)
	if err != nil {
		return nil, fmt.Errorf("holder: %w", err)
	}
	stopKeep := holder.KeepAlive()
	silent := e.node(4)
	defer func() { _ = silent.Resume() }()

	const perBlock = 2 // attempts per goroutine per block
	var (
		healthy, paused lat
		outcomes        = map[bool]kinds{false: {}, true: {}}
		pausedTime      time.Duration
		windows         []Window
		blocks          int
	)
	hard, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	block := func(silentNode bool) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for g := range silentContenders {
			r := reps[g%len(reps)]
			wg.Go(func() {
				for range perBlock {
					t0 := time.Now()
					l, err := r.client.TryAcquire(hard, key, silentTTL)
					d := time.Since(t0)
					if err == nil {
						_ = l.Release(context.WithoutCancel(hard))
					}
					mu.Lock()
					outcomes[silentNode][attemptKind(err)]++
					if silentNode {
						paused = append(paused, d)
					} else {
						healthy = append(healthy, d)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	// A warm-up block, not recorded: dials and script loads.
	block(false)
	healthy, outcomes[false] = nil, kinds{}
	for hard.Err() == nil && (len(healthy) < p.SilentAttempts || len(paused) < p.SilentAttempts) {
		if blocks > 0 && pausedTime >= p.SilentCap {
			break // the silent blocks' time is used up (today: every attempt waits 2 node timeouts)
		}
		blocks++
		block(false)
		if err := silent.Pause(); err != nil {
			return nil, err
		}
		from, t0 := e.Clock.Now(), time.Now()
		block(true)
		pausedTime += time.Since(t0)
		windows = append(windows, Window{Fault: "node 4 stopped (SIGSTOP)", From: from, To: e.Clock.Now()})
		if err := silent.Resume(); err != nil {
			return nil, err
		}
	}
	stopKeep()
	holderOK := holder.Err() == nil && time.Now().Before(holder.ValidUntil())
	_ = holder.Release(context.WithoutCancel(ctx))
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	f := &Findings{AcquireErrors: map[string]int{}, Linearizable: "-", Acquisitions: 1, CriticalSections: 1}
	stolen := outcomes[false][kindAcquired] + outcomes[true][kindAcquired]
	for _, o := range outcomes {
		for k, v := range o {
			if k != kindAcquired {
				f.AcquireErrors[k] += v
			}
		}
	}
	hp99, sp99 := healthy.pct(99), paused.pct(99)
	m := &Measured{Findings: f, Windows: windows}
	m.Figures.info("healthy attempts", float64(len(healthy)), "")
	m.Figures.info("silent-node attempts", float64(len(paused)), "")
	m.Figures.info("healthy p50", ms(healthy.pct(50)), "ms")
	m.Figures.info("healthy p99", ms(hp99), "ms")
	m.Figures.info("silent-node p50", ms(paused.pct(50)), "ms")
	m.Figures.info("silent-node p99", ms(sp99), "ms")
	m.Figures.atMost("silent-node p99 / healthy p99", ratio(float64(sp99), float64(hp99)), "x", 2)
	m.Figures.timing()
	m.Figures.atMost("contended attempts that acquired a held lock", float64(stolen), "", 0)
	holderLost := 0.0
	if !holderOK {
		holderLost = 1
	}
	m.Figures.atMost("holder lost its lock", holderLost, "", 0)
	capped := ""
	if len(paused) < p.SilentAttempts {
		capped = fmt.Sprintf(" (stopped after %s of silent blocks: %d of %d attempts made)", pausedTime.Round(100*time.Millisecond), len(paused), p.SilentAttempts)
	}
	m.Summary = fmt.Sprintf("contended TryAcquire (TTL %s, node timeout 1 s), %d blocks: healthy p50 %s p99 %s (%s); node 4 stopped p50 %s p99 %s (%s) = %.2fx the healthy p99%s",
		silentTTL, blocks, fmtFigure(ms(healthy.pct(50)), "ms"), fmtFigure(ms(hp99), "ms"), outcomes[false],
		fmtFigure(ms(paused.pct(50)), "ms"), fmtFigure(ms(sp99), "ms"), outcomes[true], ratio(float64(sp99), float64(hp99)), capped)
	return m, nil
}

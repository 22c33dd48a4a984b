package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/semaphore"
)

// Load of the semaphore scenario: 4 clients x 3 goroutines compete for 3
// permits.
const (
	semPermits    = 3
	semClients    = 4
	semGoroutines = 3
)

// runSemaphore: goroutines loop Acquire a permit -> one fenced write on
// the permit's slot register -> Release, while minorityFaults kills, pauses
// and restarts nodes. Targets: never more than N permits believed valid at
// once (a count), and every slot's history passes the mutex checker (no
// overlap, no fence inversion, no unsafe write accepted); progress in
// every second is a timing target.
func runSemaphore(ctx context.Context, p Profile, e *Env) (*Measured, error) {
	reps, err := newReplicas(semClients, e.Cluster.Addrs(), false, semGoroutines*semPermits*2) // a waiter runs an Acquire per slot
	if err != nil {
		return nil, err
	}
	defer closeReplicas(reps)
	name := fmt.Sprintf("semaphore-%d", time.Now().UnixNano())
	hist := newHistories(e.Clock)
	seconds := max(int(p.PerScenario/time.Second), 1)
	progress := newPerSecond(e.Clock.Now(), seconds)
	var mu sync.Mutex
	failed := kinds{}
	windows, err := runWithFaults(ctx, p, e, func(ctx context.Context) {
		var wg sync.WaitGroup
		for c, r := range reps {
			sem, err := semaphore.New(r.client, name, semPermits)
			if err != nil {
				panic(err) // a constant, valid name and N
			}
			for range semGoroutines {
				wg.Go(func() {
					for ctx.Err() == nil {
						acqStart := e.Clock.Now()
						pm, err := sem.Acquire(ctx, e.TTL)
						acqEnd := e.Clock.Now()
						if err != nil {
							if k := attemptKind(err); k != kindCanceled {
								mu.Lock()
								failed[k]++
								mu.Unlock()
							}
							continue
						}
						key := semaphore.SlotKey(name, pm.Slot())
						cs := hist.critical(c, key, pm.Fence(), pm.ValidUntil, acqStart, acqEnd)
						rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
						cs.ReleaseOK = pm.Release(rctx) == nil
						cancel()
						kh := hist.of(key)
						kh.rec.addAcq(AcqResult{Client: c, Start: acqStart, End: acqEnd, OK: true})
						kh.rec.addCS(cs)
						progress.add(acqEnd)
					}
				})
			}
		}
		wg.Wait()
	})
	if err != nil {
		return nil, err
	}
	f, all := hist.check(p)
	depth := maxDepth(all)
	m := &Measured{Findings: f, Windows: windows}
	m.Figures.info("permits granted", float64(len(all)), "")
	m.Figures.info("permits/s", float64(len(all))/p.PerScenario.Seconds(), "/s")
	m.Figures.info("failed Acquire calls", float64(sumKinds(failed)), "")
	m.Figures.atMost("most permits valid at once", float64(depth), "", semPermits)
	m.Figures.atMost("seconds without a permit granted", float64(progress.zero()), "", 0)
	m.Figures.timing()
	m.Summary = fmt.Sprintf("%d clients x %d goroutines, %d permits, minority faults: %d permits granted, at most %d valid at once, failed Acquire calls: %s; per second %s",
		semClients, semGoroutines, semPermits, len(all), depth, failed, progress)
	return m, nil
}

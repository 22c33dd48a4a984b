package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/multilock"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// Load of the multilock scenario: 4 clients x 2 goroutines lock random
// overlapping sets of 2 or 3 of 5 keys.
const (
	mlKeys       = 5
	mlClients    = 4
	mlGoroutines = 2
)

// runMultilock: goroutines loop Acquire a random set -> one fenced write on
// each key's register -> Release, while minorityFaults kills, pauses and
// restarts nodes. Targets: every key's history passes the mutex checker
// (no two holders of one key at once, no fence inversion, no unsafe write
// accepted); a set completed in every second (no deadlock) is a timing
// target. The clients retry for long (1000 times, 50-100 ms apart), so a
// failed Acquire is a fault's doing, not a wait that ran out.
func runMultilock(ctx context.Context, p Profile, e *Env) (*Measured, error) {
	reps, err := newReplicas(mlClients, e.Cluster.Addrs(), false, mlGoroutines*4,
		redlock.WithRetry(retry.Constant(1000, 50*time.Millisecond, 50*time.Millisecond)))
	if err != nil {
		return nil, err
	}
	defer closeReplicas(reps)
	base := fmt.Sprintf("multilock-%d:", time.Now().UnixNano())
	keys := make([]string, mlKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%d", base, i)
	}
	hist := newHistories(e.Clock)
	seconds := max(int(p.PerScenario/time.Second), 1)
	progress := newPerSecond(e.Clock.Now(), seconds)
	var mu sync.Mutex
	failed := kinds{}
	sets, lostWaiting := 0, 0
	windows, err := runWithFaults(ctx, p, e, func(ctx context.Context) {
		var wg sync.WaitGroup
		for c, r := range reps {
			for range mlGoroutines {
				wg.Go(func() {
					for ctx.Err() == nil {
						perm := rand.Perm(mlKeys)
						set := make([]string, 2+rand.IntN(2))
						for i := range set {
							set[i] = keys[perm[i]] // in a random order: Acquire sorts
						}
						acqStart := e.Clock.Now()
						m, err := multilock.Acquire(ctx, r.client, set, e.TTL)
						acqEnd := e.Clock.Now()
						if err != nil {
							mu.Lock()
							switch k := attemptKind(err); {
							case errors.Is(err, redlock.ErrLockLost):
								lostWaiting++ // a key taken earlier could not be kept
							case k != kindCanceled:
								failed[k]++
							}
							mu.Unlock()
							continue
						}
						var css []CS
						for _, key := range m.Keys() {
							css = append(css, hist.critical(c, key, m.Fence(key), m.ValidUntil, acqStart, acqEnd))
						}
						rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
						ok := m.Release(rctx) == nil
						cancel()
						for i, key := range m.Keys() {
							css[i].ReleaseOK = ok
							kh := hist.of(key)
							kh.rec.addAcq(AcqResult{Client: c, Start: acqStart, End: acqEnd, OK: true})
							kh.rec.addCS(css[i])
						}
						mu.Lock()
						sets++
						mu.Unlock()
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
	f, _ := hist.check(p)
	m := &Measured{Findings: f, Windows: windows}
	m.Figures.info("sets completed", float64(sets), "")
	m.Figures.info("sets/s", float64(sets)/p.PerScenario.Seconds(), "/s")
	m.Figures.info("failed Acquire calls", float64(sumKinds(failed)), "")
	m.Figures.info("Acquire calls ended by the loss of a key taken earlier", float64(lostWaiting), "")
	m.Figures.atMost("seconds without a completed set", float64(progress.zero()), "", 0)
	m.Figures.timing()
	m.Summary = fmt.Sprintf("%d clients x %d goroutines, random sets of 2-3 of %d keys, minority faults: %d sets, failed Acquire calls: %s, %d ended by the loss of a key taken earlier; per second %s",
		mlClients, mlGoroutines, mlKeys, sets, failed, lostWaiting, progress)
	return m, nil
}

package locktest

import (
	"context"
	"strings"
	"sync"
)

// realTimeParallel is how many schedules run at once on real time: they
// mostly sleep, so many share the CPU without slowing each other much.
const realTimeParallel = 200

// firstOnRealTime runs the schedules of seeds first to first+n-1 on real
// time, realTimeParallel at once, and returns the failure of the lowest
// failing seed. Once a seed fails, no higher seed is started; once the
// plan cannot run, none is.
func firstOnRealTime(t TB, p Plan, first uint64, n int, work func(ctx context.Context, r *Replica)) *Failure {
	var (
		mu     sync.Mutex
		next   = first
		best   *Failure
		broken bool
		wg     sync.WaitGroup
	)
	take := func() (uint64, bool) {
		mu.Lock()
		defer mu.Unlock()
		seed := next
		if broken || seed >= first+uint64(n) || (best != nil && seed > best.Seed) {
			return 0, false
		}
		next++
		return seed, true
	}
	for range min(n, realTimeParallel) {
		wg.Go(func() {
			for seed, ok := take(); ok; seed, ok = take() {
				f, ran := runOnRealTime(t, p, seed, work)
				mu.Lock()
				broken = broken || !ran
				if f != nil && (best == nil || f.Seed < best.Seed) {
					best = f
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return best
}

// runOnRealTime plays the schedule of seed on real time, with a Session
// of its own whose cleanups (clients closed, faults healed) run at its
// end, and whose failures go to t; ran is false when it failed.
func runOnRealTime(t TB, p Plan, seed uint64, work func(ctx context.Context, r *Replica)) (f *Failure, ran bool) {
	s := NewSession(failureWriter{t})
	defer s.Close()
	// The replicas start within the first 120th of the schedule, as within
	// the first second of two minutes on fake time.
	f = runSchedule(s, p, seed, p.Length/120, work)
	return f, !s.Failed()
}

// failureWriter passes what a Session writes to t as a failure.
type failureWriter struct{ t TB }

func (w failureWriter) Write(b []byte) (int, error) {
	w.t.Errorf("%s", strings.TrimSuffix(strings.TrimPrefix(string(b), "FAIL: "), "\n"))
	return len(b), nil
}

package main

import (
	"context"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
)

// serialBatch runs op back to back for dur on one goroutine, recording each
// call's latency.
func serialBatch(dur time.Duration, lat *harness.Latencies, op func(i int) error) (ops, errs int, c cost) {
	lat.Reset()
	c = measure(func() {
		deadline := time.Now().Add(dur)
		for i := 0; ; i++ {
			t0 := time.Now()
			err := op(i)
			t1 := time.Now()
			lat.Add(t1.Sub(t0))
			ops++
			if err != nil {
				errs++
			}
			if !t1.Before(deadline) {
				return
			}
		}
	})
	return ops, errs, c
}

// parallelBatch runs op on g goroutines for dur; op gets the goroutine and
// its iteration.
func parallelBatch(g int, dur time.Duration, lats []*harness.Latencies, op func(gi, i int) error) (ops, errs int, c cost) {
	counts := make([]int, g)
	errc := make([]int, g)
	for _, l := range lats {
		l.Reset()
	}
	c = measure(func() {
		deadline := time.Now().Add(dur)
		var wg sync.WaitGroup
		for gi := range g {
			wg.Go(func() {
				lat := lats[gi]
				for i := 0; ; i++ {
					t0 := time.Now()
					err := op(gi, i)
					t1 := time.Now()
					lat.Add(t1.Sub(t0))
					counts[gi]++
					if err != nil {
						errc[gi]++
					}
					if !t1.Before(deadline) {
						return
					}
				}
			})
		}
		wg.Wait()
	})
	for gi := range g {
		ops += counts[gi]
		errs += errc[gi]
	}
	return ops, errs, c
}

func cycleOp(ctx context.Context, l *locker, keys []string) func(i int) error {
	return func(i int) error { return l.cycle(ctx, keys[i%len(keys)]) }
}

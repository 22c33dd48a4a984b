package promlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quorumlock/quorumlock/promlock"
	"github.com/quorumlock/quorumlock/redlock"
)

// BenchmarkCycle is one uncontended TryAcquire + Release on 5 real
// redis-server nodes, without an observer and with this adapter: the cost
// of the metrics on the hot path. Compare the two with benchstat:
//
//	go test -run '^$' -bench Cycle -count 10 ./promlock
func BenchmarkCycle(b *testing.B) {
	for _, withMetrics := range []bool{false, true} {
		name := "observer=none"
		opts := []redlock.Option{redlock.WithNodeTimeout(2 * time.Second)}
		if withMetrics {
			name = "observer=prometheus"
			obs, err := promlock.New(prometheus.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			opts = append(opts, redlock.WithObserver(obs))
		}
		b.Run(name, func(b *testing.B) {
			_, c := realClient(b, 5, opts...)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				l, err := c.TryAcquire(ctx, "bench:cycle", 10*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

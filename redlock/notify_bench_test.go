package redlock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// BenchmarkHandoff measures the handoff latency on 5 real redis-server
// nodes: from the holder's call to Release to a blocked waiter's Acquire
// returning (the waiter may win before Release returns, which lingers
// briefly for the slower nodes), with the holder and the waiter on separate Clients (as two
// processes would be). The holder releases at a random moment within 300 ms
// after the waiter's first lost attempt, so that polling waiters are caught
// anywhere in their sleep. It reports the p50, p90 and p99 latencies; ns/op
// is the whole cycle and means little.
//
//	go test -run '^$' -bench BenchmarkHandoff -benchtime 200x ./redlock/
func BenchmarkHandoff(b *testing.B) {
	cl := redistest.StartT(b, 5)
	var nodes []node.Node
	for _, rc := range cl.Clients() {
		nodes = append(nodes, redisnode.New(rc))
	}
	cases := []struct {
		name   string
		notify bool
		policy retry.Policy
	}{
		{"notify", true, retry.Constant(10, 200*time.Millisecond, 100*time.Millisecond)},
		{"poll-default", false, retry.Constant(10, 200*time.Millisecond, 100*time.Millisecond)},
		{"poll-1ms", false, retry.Constant(1_000_000, time.Millisecond, 0)},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var lost atomic.Int64
			obs := observe.Func(func(e observe.Event) {
				if e.Kind == observe.Contended {
					lost.Add(1)
				}
			})
			holder := benchClient(b, nodes, redlock.WithReleaseNotifications(tc.notify), redlock.WithRetry(retry.Never()))
			waiter := benchClient(b, nodes, redlock.WithReleaseNotifications(tc.notify), redlock.WithRetry(tc.policy), redlock.WithObserver(obs))
			ctx := context.Background()
			var lat []time.Duration
			i := 0
			for b.Loop() {
				i++
				key := fmt.Sprintf("handoff-%s-%d", tc.name, i)
				held, err := holder.TryAcquire(ctx, key, 10*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				before := lost.Load()
				done := make(chan time.Time, 1)
				go func() {
					l, err := waiter.Acquire(ctx, key, 10*time.Second)
					if err != nil {
						b.Error(err)
						done <- time.Time{}
						return
					}
					at := time.Now()
					_ = l.Release(ctx)
					done <- at
				}()
				for lost.Load() == before {
					time.Sleep(100 * time.Microsecond)
				}
				time.Sleep(rand.N(300 * time.Millisecond))
				released := time.Now()
				if err := held.Release(ctx); err != nil {
					b.Fatal(err)
				}
				at := <-done
				if at.IsZero() {
					b.FailNow()
				}
				lat = append(lat, at.Sub(released))
			}
			slices.Sort(lat)
			pct := func(p float64) float64 {
				return float64(lat[min(int(p*float64(len(lat))), len(lat)-1)].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.90), "p90-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
			b.ReportMetric(float64(lost.Load())/float64(len(lat)), "lost/op")
		})
	}
}

func benchClient(b *testing.B, nodes []node.Node, opts ...redlock.Option) *redlock.Client {
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

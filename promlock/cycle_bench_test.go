package promlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/promlock"
	"github.com/quorumlock/quorumlock/redlock"
)

// BenchmarkObserverCost measures the uncontended cycle (TryAcquire +
// Release) on 5 real redis-server nodes with two clients on the same nodes,
// one without an observer and one with this adapter, alternating cycle by
// cycle so that the machine's load drifts equally on both. It reports the
// mean ns per cycle of each and the overhead in percent:
//
//	go test -run '^$' -bench ObserverCost -count 5 ./promlock
func BenchmarkObserverCost(b *testing.B) {
	cl, plain := realClient(b, 5, redlock.WithNodeTimeout(2*time.Second))
	obs, err := promlock.New(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	var nodes []node.Node
	for _, rc := range cl.Clients() {
		nodes = append(nodes, redisnode.New(rc))
	}
	observed, err := redlock.New(nodes, redlock.WithNodeTimeout(2*time.Second), redlock.WithObserver(obs))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = observed.Close() })
	ctx := context.Background()
	cycle := func(c *redlock.Client) time.Duration {
		start := time.Now()
		l, err := c.TryAcquire(ctx, "bench:cycle", 10*time.Second)
		if err == nil {
			err = l.Release(ctx)
		}
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	cycle(plain) // first contact (node identification) outside the measurement
	cycle(observed)
	var tPlain, tObserved time.Duration
	i := 0
	for b.Loop() {
		if i++; i%2 == 0 {
			tPlain += cycle(plain)
			tObserved += cycle(observed)
		} else {
			tObserved += cycle(observed)
			tPlain += cycle(plain)
		}
	}
	b.ReportMetric(float64(tPlain.Nanoseconds())/float64(i), "ns/cycle-none")
	b.ReportMetric(float64(tObserved.Nanoseconds())/float64(i), "ns/cycle-prometheus")
	b.ReportMetric(100*(float64(tObserved)/float64(tPlain)-1), "%overhead")
}

// BenchmarkObserveCycleEvents is the adapter's own CPU time for the events
// of one uncontended cycle on 5 nodes: attempt, acquired, released, and one
// node reply per node for the acquire and the release.
func BenchmarkObserveCycleEvents(b *testing.B) {
	obs, err := promlock.New(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	nodes := []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003", "127.0.0.1:7004", "127.0.0.1:7005"}
	b.ReportAllocs()
	for b.Loop() {
		obs.Observe(observe.Event{Kind: observe.Attempt, Key: "bench:cycle", Attempts: 1})
		for _, n := range nodes {
			obs.Observe(observe.Event{Kind: observe.Node, Key: "bench:cycle", Node: n, Op: "acquire", Latency: 300 * time.Microsecond})
		}
		obs.Observe(observe.Event{Kind: observe.Acquired, Key: "bench:cycle", Attempts: 1, Fence: 7, Latency: time.Millisecond})
		for _, n := range nodes {
			obs.Observe(observe.Event{Kind: observe.Node, Key: "bench:cycle", Node: n, Op: "release", Latency: 300 * time.Microsecond})
		}
		obs.Observe(observe.Event{Kind: observe.Released, Key: "bench:cycle", Latency: time.Millisecond})
	}
}

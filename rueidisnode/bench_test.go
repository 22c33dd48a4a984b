package rueidisnode_test

import (
	"context"
	"errors"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/rueidisnode"
)

// One node's acquire + release (the scripts a Client cycle runs per node),
// to count the node's own allocations: go test -bench . -benchmem
func BenchmarkNodeAcquireRelease(b *testing.B) {
	cl := redistest.StartT(b, 1)
	rc := newRueidis(b, cl.Addrs()[0])
	n := rueidisnode.New(rc)
	ctx := context.Background()
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "bench:" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := keys[i%len(keys)]
		if _, err := n.Acquire(ctx, k, "token", 8*time.Second); err != nil {
			b.Fatal(err)
		}
		if _, err := n.ReleaseNotify(ctx, k, "token", "bench:released"); err != nil {
			b.Fatal(err)
		}
	}
}

// A Client's acquire + release over 5 nodes, with rueidis's default
// pipelining (synchronous until requests overlap on a connection) and
// with AlwaysPipelining, reporting this process's CPU per cycle.
func BenchmarkClientCycle(b *testing.B) {
	cl := redistest.StartT(b, 5)
	for _, always := range []bool{false, true} {
		b.Run("AlwaysPipelining="+strconv.FormatBool(always), func(b *testing.B) {
			var nodes []redlock.Node
			for _, a := range cl.Addrs() {
				rc, err := rueidis.NewClient(rueidis.ClientOption{
					InitAddress: []string{a}, ForceSingleClient: true, DisableCache: true, AlwaysPipelining: always,
				})
				if err != nil {
					b.Fatal(err)
				}
				defer rc.Close()
				nodes = append(nodes, rueidisnode.New(rc))
			}
			c, err := redlock.New(nodes)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = c.Close() }()
			ctx := context.Background()
			keys := make([]string, 1024)
			for i := range keys {
				keys[i] = "cycle:" + strconv.Itoa(i)
			}
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			for i := range b.N {
				l, err := c.Acquire(ctx, keys[i%len(keys)], 8*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(ctx); err != nil && !errors.Is(err, redlock.ErrQuorumUnreachable) {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
		})
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

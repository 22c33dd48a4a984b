package rueidisnode_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/rueidisnode"
)

// One node's acquire + release (the scripts a client cycle runs per node),
// to count the node's own allocations: go test -bench . -benchmem
func BenchmarkNodeAcquireRelease(b *testing.B) {
	cl := redistest.StartT(b, 1)
	n := rueidisnode.New(newRueidis(b, cl.Addrs()[0]))
	ctx := context.Background()
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "bench:{" + strconv.Itoa(i) + "}"
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		k := keys[i%len(keys)]
		if _, err := n.Acquire(ctx, node.AcquireArgs{Name: k, Token: "token", TTL: 8 * time.Second}); err != nil {
			b.Fatal(err)
		}
		if _, err := n.Release(ctx, node.ReleaseArgs{Name: k, Token: "token", Channel: "bench:released"}); err != nil {
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
			var nodes []node.Node
			for _, a := range cl.Addrs() {
				rc, err := rueidis.NewClient(rueidis.ClientOption{
					InitAddress:       []string{a},
					ForceSingleClient: true,
					DisableCache:      true,
					AlwaysPipelining:  always,
					Dialer:            net.Dialer{Timeout: 500 * time.Millisecond},
				})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(rc.Close) // after the client's Close: cleanups run last in, first out
				nodes = append(nodes, rueidisnode.New(rc))
			}
			c, err := redlock.New(nodes, redlock.WithNodeTimeout(2*time.Second))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = c.Close() })
			ctx := context.Background()
			keys := make([]string, 1024)
			for i := range keys {
				keys[i] = "cycle:" + strconv.Itoa(i)
			}
			b.ReportAllocs()
			cycles := 0
			cpu0 := processCPU()
			for b.Loop() {
				l, err := c.Acquire(ctx, keys[cycles%len(keys)], 10*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(ctx); err != nil && !errors.Is(err, redlock.ErrQuorumUnreachable) {
					b.Fatal(err)
				}
				cycles++
			}
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(cycles), "cpu-us/op")
		})
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

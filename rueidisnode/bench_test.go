package rueidisnode_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
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

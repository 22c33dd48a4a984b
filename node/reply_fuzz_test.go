package node_test

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/nodetest"
)

// Whatever a server answers, each operation of the go-redis node returns.
// go-redis itself panics on lengths it cannot allocate; those panics are
// raised in go-redis, and the quorum client's guard turns them into node
// errors (redlock's lying-node tests); a panic raised anywhere else, in
// this package's reading of a reply included, fails.
func FuzzRedisReplies(f *testing.F) {
	nodetest.FuzzReplies(f, func(t testing.TB, addr string) node.Node {
		rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 1})
		t.Cleanup(func() { _ = rc.Close() })
		return node.NewRedis(rc)
	}, func(stack string) bool {
		return strings.HasPrefix(nodetest.PanicSite(stack), "github.com/redis/go-redis/v9")
	})
}

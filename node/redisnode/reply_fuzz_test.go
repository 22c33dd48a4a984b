package redisnode_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/nodetest"
	"github.com/quorumlock/quorumlock/node/redisnode"
)

// Whatever a server answers, each operation of the go-redis node over a
// BoundedDialer returns, without a panic. (Without the bound, go-redis
// panics on lengths past the runtime's limit, which the quorum client's
// guard turns into node errors, and dies of lengths below it that it
// cannot allocate.)
func FuzzRedisReplies(f *testing.F) {
	nodetest.FuzzReplies(f, func(t testing.TB, addr string) node.Node {
		rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 1, Dialer: redisnode.BoundedDialer(nil, nil)})
		t.Cleanup(func() { _ = rc.Close() })
		return redisnode.New(rc)
	}, func(string) bool { return false }, false)
}

package redlock

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// ScriptSources are the Lua sources of the scripts a RedisNode runs, for
// Node implementations over other Redis clients, which must run the very
// same scripts (same text, hence the same SHA-1 on the server). Their
// contracts are those of the Node methods: see scripts.go and
// redis_batch.go.
type ScriptSources struct {
	Acquire    string // Node.Acquire: KEYS lock, fence; ARGV token, ttl ms
	Extend     string // Node.Extend: KEYS lock, fence; ARGV token, ttl ms, fence
	ExtendHeld string // BatchNode.ExtendBatch: KEYS lock; ARGV token, ttl ms
	Release    string // Node.Release, Notifier.ReleaseNotify: KEYS lock; ARGV token [, channel]
	RaiseFence string // Node.RaiseFence: KEYS lock, fence; ARGV token, fence
	Inspect    string // Node.Inspect: KEYS lock, fence
}

// Scripts returns the Lua sources of RedisNode's scripts.
func Scripts() ScriptSources {
	return ScriptSources{
		Acquire:    scriptSource(acquireScript),
		Extend:     scriptSource(extendScript),
		ExtendHeld: scriptSource(extendHeldScript),
		Release:    scriptSource(releaseScript),
		RaiseFence: scriptSource(raiseFenceScript),
		Inspect:    scriptSource(inspectScript),
	}
}

// srcCapture is a redis.Scripter that records the source given to Eval
// (redis.Script keeps its source unexported); nothing else is called.
type srcCapture struct {
	redis.Scripter
	src string
}

func (c *srcCapture) Eval(ctx context.Context, script string, _ []string, _ ...any) *redis.Cmd {
	c.src = script
	return redis.NewCmd(ctx)
}

func scriptSource(s *redis.Script) string {
	c := &srcCapture{}
	s.Eval(context.Background(), c, nil)
	return c.src
}

package harness

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Counter is a go-redis hook that counts commands and round trips (a single
// command or a whole pipeline is one round trip) sent through a client.
type Counter struct {
	cmds, rounds atomic.Int64
}

var _ redis.Hook = (*Counter)(nil)

// DialHook implements redis.Hook.
func (c *Counter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (c *Counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.rounds.Add(1)
		c.cmds.Add(1)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (c *Counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.rounds.Add(1)
		c.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// Snapshot returns the commands and round trips so far.
func (c *Counter) Snapshot() (cmds, rounds int64) { return c.cmds.Load(), c.rounds.Load() }

// Add counts cmds commands sent in rounds round trips, for clients that
// cannot take a go-redis hook (rueidis).
func (c *Counter) Add(cmds, rounds int64) {
	c.cmds.Add(cmds)
	c.rounds.Add(rounds)
}

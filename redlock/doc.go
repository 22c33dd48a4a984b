// Package redlock is a distributed lock over a quorum of independent Redis
// nodes (the Redlock algorithm), with fencing tokens.
//
// A lock is held when a majority (N/2+1) of the nodes set its key to a fresh
// random token, valid for its TTL less the attempt's time and a drift
// allowance (ttl/100 + 2ms). A call returns once its outcome is decided.
// The quickest correct use is Client.Do: it acquires, keeps the lock alive
// while fn runs, and releases it:
//
//	nodes, err := redisnode.Dial("10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379")
//	locks, err := redlock.New(nodes)
//	defer locks.Close()
//	err = locks.Do(ctx, "nightly-report", 30*time.Second, func(ctx context.Context) error {
//		lock, _ := redlock.LockFromContext(ctx)
//		return report(ctx, lock.Fence()) // ctx ends, with ErrLockLost, if the lock is lost
//	})
//
// Acquire and TryAcquire return a *Lock to Extend and Release yourself. Pass
// the fence to the resource and let it refuse older ones: only a fence
// stops a holder paused past its validity. For a job that must run once per
// tick, use package tick. redisnode.Dial builds nodes with safe client
// settings; redisnode.New wraps a go-redis client of your own.
//
// Clients that try one key at once agree on one winner. No late request of a
// released lock creates its key on a node that processed the release. A node
// that lost its data does not vote until it has kept its data for the
// recovery period (WithRecoveryPeriod), unless every node lost it within one.
// Every error wraps one sentinel below (or ctx.Err()). Mechanics:
// docs/design.md; promises, tests, limits: docs/guarantees.md.
package redlock

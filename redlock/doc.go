// Package redlock is a distributed lock over a quorum of independent Redis
// nodes (the Redlock algorithm), with fencing tokens.
//
// A lock is held when a majority of the nodes (N/2+1) set its key to a fresh
// random token, and valid for its TTL less the time the attempt took and a
// drift allowance (ttl/100 + 2ms by default). A call returns as soon as its outcome is
// decided: a silent node delays neither the answer nor the next retry.
//
// The quickest correct use is Client.Do, which acquires, keeps the lock alive
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
// stops a holder paused past its validity. A lock only excludes overlap; for
// a job that must run once per tick, use package tick.
//
// redisnode.Dial (or DialFile, DialEnv) builds nodes with safe client
// settings; redisnode.New wraps a go-redis client of your own. NewLocal
// gives a Client on one in-process memory node, logged as such.
//
// Clients that try one key at once agree on one winner. Once a node has
// processed a Release, no late request of that lock can create its key there.
// A node that lost its data sits out the keys it lost (WithRecoveryPeriod);
// not covered: every node losing its data at once, or a majority losing it
// while the nodes that kept it are silent. Nodes must be distinct servers with
// maxmemory-policy noeviction; redisnode.New also takes a *redis.ClusterClient.
//
// Every error wraps exactly one of ErrNotAcquired, ErrQuorumUnreachable (with
// a *NodeError per failed node), ErrLockLost, ErrInvalidArgument, or the
// caller's ctx.Err(). How it works: docs/design.md; each promise with its
// tests and limits: docs/guarantees.md; running the nodes: docs/operations.md.
package redlock

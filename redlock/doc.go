// Package redlock is a distributed lock over a quorum of independent Redis
// nodes (the Redlock algorithm), with fencing tokens.
//
// A Client sets a lock's key to a fresh random token on every node at once.
// The lock is held when a majority (N/2+1) granted it, and valid for its TTL
// less the time the attempt took (on the monotonic clock) and a drift
// allowance of ttl*driftFactor + 2ms. A call returns as soon as its outcome is
// decided: a silent node delays neither the answer nor the next retry.
//
// The quickest correct use is Client.Do: it acquires the lock, keeps it while
// fn runs, and releases it.
//
//	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true,
//		Dialer: redisnode.BoundedDialer(nil, nil)}) // one per node; three or five nodes
//	locks, err := redlock.New([]node.Node{redisnode.New(rdb), ...})
//	defer locks.Close()
//	err = locks.Do(ctx, "nightly-report", 30*time.Second, func(ctx context.Context) error {
//		lock, _ := redlock.LockFromContext(ctx)
//		return report(ctx, lock.Fence()) // ctx ends, with ErrLockLost, if the lock is lost
//	})
//
// Acquire waits for a held lock, woken by the holder's release; TryAcquire
// and TryDo make one attempt. A kept lock that cannot be extended is declared
// lost before its validity ends, never after (Lock.Done, Lock.Err, fn's
// context). Pass Lock.Fence to the resource and let it refuse older fences:
// only a fence stops a holder paused past its validity. A lock only excludes
// overlap; for a job that must run once per tick, use package tick.
//
// Clients that try one key at once agree on one winner (ErrSplitVote after 8
// split rounds). Once a node has processed a Release, no late request of that
// lock can create its key there. A node that lost its data sits out each key
// it lost (WithRecoveryPeriod); not covered: every node losing its data at
// once, or a majority losing it while the nodes that kept it are silent.
// Owners are recorded: Client.Inspect and Client.Locks report holders,
// Client.ForceRelease evicts one, Lock.TookOver names one that never released.
//
// Nodes must be independent servers (one server under two names is refused)
// with maxmemory-policy noeviction; redisnode.New also takes a
// *redis.ClusterClient. NewLocal gives a Client on one in-process memory node;
// nothing falls back to it. Every error wraps exactly one of ErrNotAcquired,
// ErrQuorumUnreachable (with a *NodeError per failed node), ErrLockLost,
// ErrInvalidArgument, or the caller's ctx.Err(); check with errors.Is.
//
// How it works is in docs/design.md; each promise, its tests and its limits in
// docs/guarantees.md; running the nodes in docs/operations.md.
package redlock

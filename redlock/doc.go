// Package redlock is a distributed lock over a quorum of independent Redis
// nodes (the Redlock algorithm), with fencing tokens.
//
// A Client sets a lock's key to a fresh random token on every node at once.
// The lock is held when a majority (N/2+1) granted it, and valid for its TTL
// less the time the attempt took (on the monotonic clock) and a drift
// allowance of ttl*driftFactor + 2ms. A call returns as soon as its outcome is
// decided: a silent node delays neither the answer nor the next retry.
//
// The quickest correct use is Client.Do: it acquires the lock, extends it
// while fn runs, and releases it when fn returns.
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
// Acquire waits for a held lock (retrying per package retry, woken by the
// holder's release); TryAcquire and TryDo make one attempt. If a kept lock
// cannot be extended, fn's context is cancelled with a cause wrapping
// ErrLockLost before the validity ends, never after (Lock.Done and Lock.Err
// say the same). Pass Lock.Fence to the resource and let it refuse older
// fences: only a fence stops a holder paused past its validity. A lock only
// excludes overlap; for a job that must run once per tick, use package tick.
//
// What the package promises, in plain words:
//   - Clients that try one key at the same instant agree on one winner; a
//     call gives up after 8 split rounds with ErrSplitVote.
//   - Once a node has processed a Release, no request of that lock still on
//     its way can create its key there.
//   - Each fence is larger than every earlier one of the key while a majority
//     keeps its data, and across data loss under the conditions on Fence.
//   - A node that lost its data (restart, flush, failover to an empty
//     replica) sits out each key it lost for the recovery period
//     (WithRecoveryPeriod). Not covered: every node losing its data at once,
//     or a majority losing it while the nodes that kept it are silent.
//   - Every acquisition records its owner; Client.Inspect and Client.Locks
//     report holders, Client.ForceRelease evicts one, Lock.TookOver names a
//     holder that never released.
//
// Nodes must be independent servers (one server under two names is refused)
// with maxmemory-policy noeviction. redisnode.New also takes a
// *redis.ClusterClient. NewLocal gives a Client on one in-process memory node;
// a Client given Redis nodes never falls back to memory.
//
// Every error wraps exactly one of ErrNotAcquired, ErrQuorumUnreachable (one
// *NodeError per failed node joined inside), ErrLockLost, ErrInvalidArgument,
// or the caller's ctx.Err(); check them with errors.Is and errors.As.
//
// How it works (split votes, late requests, fences, notifications, keep-alive,
// recovery, the records on the nodes) is in docs/design.md; each promise with
// its tests and limits in docs/guarantees.md; running the nodes in
// docs/operations.md.
package redlock

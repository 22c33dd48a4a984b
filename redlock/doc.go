// Package redlock is a distributed lock over a quorum of independent Redis
// nodes: the Redlock algorithm, with fencing tokens.
//
// A Client asks every node at once to set the lock's key to a fresh random
// token with a time to live. The lock is held when a majority (N/2+1) said
// yes, and it is valid for ttl - elapsed - (ttl*driftFactor + 2ms), elapsed
// measured on the monotonic clock. A call returns as soon as its outcome is
// decided: a silent node delays neither the answer nor the next retry.
//
// Acquire waits (retrying per package retry, woken by the holder's release);
// TryAcquire makes one attempt. Client.Do and TryDo run a function while
// the lock is extended automatically, and release it afterwards; if the
// lock cannot be kept, the function's context is cancelled with a cause
// wrapping ErrLockLost before the validity ends, never after (Lock.Done and
// Lock.Err say the same to code holding a *Lock). For a scheduled job that
// must run once per tick, use package tick: a lock only excludes overlap.
//
// Guarantees, in plain words:
//   - Split votes: clients that try one key at the same instant agree on one
//     winner without talking; a call gives up after 8 split rounds with an
//     error wrapping ErrSplitVote (and so ErrNotAcquired).
//   - Late requests: once a node has processed a Release, no request of that
//     lock still on its way can create its key there (unless a server holds
//     it back for longer than the TTL).
//   - Fences: each acquisition's fence is larger than every earlier one of
//     the key while a majority keeps its data, and keeps growing across data
//     loss that comes more than node.MaxSeedSkew after the fences it erased
//     (node clocks not going back). Pass it to the resource and let it refuse
//     older fences: only a fence stops a holder paused past its validity.
//   - Owners: every acquisition records its owner (WithOwner) at no extra
//     round trip; Client.Inspect and Client.Locks report holders,
//     Client.ForceRelease evicts one, Lock.TookOver reports a holder that
//     never released.
//   - Data loss: a node that restarts empty (or is flushed, or fails over to
//     an empty replica) sits out each key it lost for the recovery period
//     (WithRecoveryPeriod, default 10 minutes, at least every TTL in use).
//     New keys, and keys unused for the period, are usable at once. Not
//     covered: every node losing its data at once, or a majority losing it
//     while the nodes that kept it are silent.
//
// Nodes: redisnode.Dial (or DialFile, DialEnv) builds them from a list of
// servers with safe client settings; redisnode.New wraps a go-redis client
// of your own (also a *redis.ClusterClient; set ContextTimeoutEnabled,
// MaxRetries -1, and redisnode.BoundedDialer as its Dialer). The
// nodes must be independent servers (one server under two names is refused)
// with maxmemory-policy noeviction. NewLocal gives a Client on one in-process
// memory node, logged as such; a Client given Redis nodes never falls back
// to memory.
//
// Errors: every error wraps exactly one of ErrNotAcquired,
// ErrQuorumUnreachable (with a *NodeError per failed node joined inside),
// ErrLockLost, ErrInvalidArgument, or the caller's ctx.Err(). Check them with
// errors.Is and errors.As. docs/design.md describes the mechanisms.
package redlock

// Package redlock is a distributed lock over a quorum of independent Redis
// nodes: the Redlock algorithm, with fencing tokens.
//
// A Client asks every node at once to set the lock's key to a fresh random
// token with a time to live. The lock is held when a majority (N/2+1) said
// yes, and it is valid for
//
//	validity = ttl - elapsed - (ttl*driftFactor + 2ms)
//
// where elapsed is measured on the monotonic clock from before the first
// request. A failed attempt is undone on every node, retried after a random
// delay (package retry), and never waits longer than the holder's remaining
// time to live.
//
// Each acquisition carries a fence: a number larger than that of every
// earlier acquisition of the same key. Pass it to the resource the lock
// protects and let the resource refuse older fences; a lock alone cannot stop
// a holder that was paused past its validity (a GC pause, a VM migration)
// from writing late, a fence can.
//
// # Keeping a lock while work runs
//
// Client.Do acquires a lock, runs a function, and releases the lock when the
// function returns or panics; TryDo does the same with a single attempt and
// reports (false, nil) when another holder has the lock (cron jobs on many
// replicas). While the function runs the lock is extended automatically
// (Lock.KeepAlive): when less than a threshold of its validity is left
// (max(500ms, ttl/3) by default), and a failed extension is retried quickly.
// If the lock cannot be kept, the function's context is cancelled with a
// cause wrapping ErrLockLost a safety margin before the validity ends
// (max(10ms, ttl/10) by default), never after; Lock.Done and Lock.Err say the
// same to code holding a *Lock. See the WithExtend*, WithSafetyMargin and
// WithMaxHold options.
//
// A Client keeps all its locks with one watchdog (package extend): the
// extensions due in the same tick (50ms by default) go to each node in one
// round, a single pipeline of EVALSHA on a RedisNode (nodes implementing
// BatchNode), so that holding 10,000 locks costs one round trip per node per
// tick rather than 10,000 timers and round trips. Once Release returns no
// extension of the lock is in flight, and a batch extension never re-creates
// a key that is gone.
//
// # Development without Redis
//
// NewLocal returns a Client on one in-process memory node and logs a warning
// saying so. It is the only way to get one: a Client given Redis nodes never
// falls back to memory when they fail; it returns their errors.
//
// # Nodes
//
// A Node is one lock server. NewRedisNode wraps a go-redis client the caller
// already has (Lua scripts, EVALSHA with EVAL after NOSCRIPT); set
// ContextTimeoutEnabled on it so that the per-node timeout cuts slow requests
// short (the client also stops waiting on its own, but the connection stays
// busy). NewMemoryNode is an in-process node with the same semantics, for
// demos, development without Redis, and unit tests of code that takes locks.
// The nodes must be independent: no replication between them, each a
// separate server.
//
// # Restarts
//
// A node that restarts empty forgets who holds what, and can hand a held key
// to someone else. Restart a node no sooner than the largest TTL in use
// (delayed restart), or run it with appendfsync always.
//
// # Errors
//
// Every error wraps one of ErrNotAcquired, ErrQuorumUnreachable,
// ErrLockLost, ErrInvalidArgument, or the caller's ctx.Err(); per-node
// failures are *NodeError values joined inside. Check them with errors.Is and
// errors.As.
package redlock

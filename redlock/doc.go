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

// Package redlock is a distributed lock over a quorum of independent Redis
// nodes: the Redlock algorithm, with fencing tokens.
//
// A Client asks every node at once to set the lock's key to a fresh random
// token with a time to live. The lock is held when a majority (N/2+1) said
// yes, and it is valid for ttl - elapsed - (ttl*driftFactor + 2ms), elapsed
// measured on the monotonic clock. A call returns as soon as its outcome is
// decided: a silent node delays neither the answer nor the next retry.
// Acquire retries (package retry) and, with release notifications on, wakes
// when the holder releases; TryAcquire makes a single attempt. Client.Do and
// TryDo acquire, run a function while the lock is extended automatically,
// and release; if the lock cannot be kept, the function's context is
// cancelled with a cause wrapping ErrLockLost before the validity ends,
// never after. Lock.Done and Lock.Err say the same to code holding a *Lock.
//
// # Split votes
//
// Clients that try one key at the same instant can split the nodes so that
// none has a majority. They agree on a winner without talking to each
// other, so exactly one of them gets the lock; the others are told it is
// held. A call spends at most 8 rounds in a row on split votes before it
// gives up with an error that wraps ErrSplitVote (and so ErrNotAcquired);
// Acquire does it without using up retries.
//
// # Late requests
//
// Once a node has processed a Release, no request of that lock still on its
// way (a slow link, a paused server) can create its key there again. A
// request that a server holds back for longer than the TTL is not covered:
// the key it creates expires with its TTL.
//
// # Fences
//
// Each acquisition carries a fence larger than that of every earlier
// acquisition of the same key, while a majority of nodes keep their data.
// Across data loss fences keep growing when the loss comes more than
// node.MaxSeedSkew (20ms) after the fences it erased were handed out, the
// nodes' clocks do not go back, and a key is not acquired more than once a
// microsecond; a client whose clock is off cannot push fences ahead or hold
// them back. Pass the fence to the resource
// and let it refuse older fences: a lock alone cannot stop a holder paused
// past its validity from writing late, a fence can.
//
// # Who holds a lock
//
// Every acquisition records its owner (WithOwner) and start time on the
// nodes, at no extra round trip. Client.Inspect and Client.Locks report what
// a majority holds; Client.ForceRelease evicts a holder that is gone (later
// holders get larger fences, and the evicted holder's next extension fails
// with ErrLockLost); Lock.TookOver reports a previous holder that never
// released, to recover its half-done work.
//
// # Nodes and limits
//
// node.NewRedis wraps a go-redis client (also a *redis.ClusterClient);
// NewLocal gives a Client on one in-process memory node, and a Client given
// Redis nodes never falls back to memory. Set ContextTimeoutEnabled on the
// go-redis client so that the node timeout cuts slow requests short. The
// nodes must be independent servers (one server under two names is
// refused) running with maxmemory-policy noeviction (another policy is
// logged once, or refused with WithRequireNoEviction).
//
// A node that restarts empty (or is flushed, or fails over to an empty
// replica) forgets who holds what. The client enforces the delayed-restart
// rule itself: such a node sits out each key it lost, its yes not counted,
// for the recovery period (WithRecoveryPeriod, default 10 minutes; it must
// be at least every TTL in use, and a longer TTL is refused). A new key is
// usable at once, and a node that processed a key's first acquisition late
// counts at once (markers record the acquisition that wrote them), and so
// does every node of a key unused for the period (only a marker touched
// within it is evidence of a lock). Limits: every node losing its data at
// once, a majority losing it while the nodes that kept it are silent or
// were not reached for the period, or a request of a key's first
// acquisition still in flight when a node loses its data and delivered
// after. Persistence
// (appendfsync always) avoids the sit-out.
//
// # Errors
//
// Every error wraps exactly one of ErrNotAcquired, ErrQuorumUnreachable,
// ErrLockLost, ErrInvalidArgument, or the caller's ctx.Err() (the
// extend.WithMaxHold cap also wraps extend.ErrMaxHold). The per-node
// failures of an ErrQuorumUnreachable are *NodeError values joined inside.
// Check them with errors.Is and errors.As. docs/design.md describes the
// mechanisms.
package redlock

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
// request. A call returns as soon as its outcome is decided (a majority said
// yes, or can no longer say yes): a silent node delays neither the answer
// nor the next retry. A failed attempt is undone on every node in the
// background (Close waits for it), retried after a random delay (package
// retry), and never waits longer than the holder's remaining time to live.
//
// # Split votes
//
// Clients that try the same key at the same instant can split the nodes
// between them so that none has a majority: with 5 nodes and 3 clients,
// 2-2-1. Such an attempt is not "held by another". Each node that refuses
// names its holder by a release id (a hash of the holder's token, which
// stays secret), so every client that took part sees the same holders and
// they agree on a winner without talking to each other: the token with the
// most nodes, ties going to the smallest release id. The losers delete
// their keys at once; the winner asks again as soon as those deletes can
// have landed, keeping its own keys, and takes the freed nodes. Losers look
// again once the winner can have finished: TryAcquire then reports the
// winner as the holder, or wins itself if the winner went away. A call
// spends at most 8 rounds in a row on this before it gives up with an error
// that wraps ErrSplitVote (and so ErrNotAcquired); Acquire does it without
// using up retries. See
// TestV2SplitVoteHasExactlyOneRunner (60 rounds of 3 replicas on 5 nodes,
// one runner in every round) and the chaos scenario split-vote.
//
// # Late requests
//
// A request can reach a node after the call that sent it has returned (a
// slow link, a busy or paused server). The undo of a failed attempt leaves
// a tombstone of the token on every node it reaches, for the lock's TTL,
// and Release does so on every node where a request of the lock (an
// acquire or extension) has not come back with a reply, or failed; the
// nodes refuse an acquire or extension of a tombstoned token: once a node
// has processed the release, no request of that lock can create its key
// there again (TestV2LateAcquireAfterReleaseCreatesNoKey,
// TestV2LateExtendAfterReleaseCreatesNoKey). A node that answered every
// request of the lock has run them all, so its release needs no tombstone
// (TestReleaseTombstonesOnlyUnansweredNodes): the uncontended cycle writes
// none. A request that a server holds back for longer than the TTL is not
// covered; the key it creates expires with its TTL. (A go-redis client
// that resends a request on its own, after a write error, and then gets a
// reply to the resend, counts as answered.)
//
// # Fences
//
// Each acquisition carries a fence: a number larger than that of every
// earlier acquisition of the same key while a majority of nodes keep their
// data (the counters of a majority intersect, and the fence is settled on a
// majority before the lock is handed out). Pass it to the resource the lock
// protects and let the resource refuse older fences; a lock alone cannot stop
// a holder that was paused past its validity (a GC pause, a VM migration)
// from writing late, a fence can.
//
// A counter that is missing (a node restarted empty, or the counter expired
// after WithFenceRetention without an acquisition) starts again from the
// node's clock in microseconds. The client offers its own clock so that
// nodes agree on the value, but a node takes it only when it is at most
// node.MaxSeedSkew (20ms) ahead of its own clock, and never below it: a
// client whose clock is off cannot push fences ahead or hold them back.
// Fences keep growing across data loss when the loss comes more than 20ms
// after the fences it erased were handed out (any restart, or a counter's
// expiry after WithFenceRetention, does), the nodes' clocks do not go back,
// and a key is not acquired more than once a microsecond
// (TestV2FenceSkewedClocksAfterDataLoss with clients 60s off; the chaos
// scenario clock-skew).
//
// # Keeping a lock while work runs
//
// Client.Do acquires a lock, runs a function, and releases the lock when the
// function returns or panics; TryDo does the same with a single attempt and
// reports (false, nil) when another holder has the lock (of overlapping
// runs, one; for a cron job that runs once per tick, see package tick).
// While the function runs the lock is extended automatically
// (Lock.KeepAlive): when less than a threshold of its validity is left
// (max(500ms, ttl/3) by default), and a failed extension is retried quickly.
// If the lock cannot be kept, the function's context is cancelled with a
// cause wrapping ErrLockLost a safety margin before the validity ends
// (max(10ms, ttl/10) by default), never after; Lock.Done and Lock.Err say the
// same to code holding a *Lock. See WithKeepAlive for the settings.
//
// A Client keeps all its locks with one watchdog (package extend): the
// extensions due in the same tick (50ms by default) go to each node in one
// round, a single pipeline of EVALSHA on a Redis node, so that holding
// 10,000 locks costs one round trip per node per tick rather than 10,000
// timers and round trips. Manual Extend is the same round for one lock:
// both re-assert a key that a node lost, and neither counts that node toward
// the majority. Once Release returns no extension of the lock starts, and
// one still in flight cannot re-create the key (see Late requests).
//
// # Who holds a lock
//
// Every acquisition records its owner (WithOwner; host/pid/program by
// default) and its start time on each node, in the lock key's value
// ("token at owner"), written by the same script call that takes the key:
// no extra round trip. Lock.Owner and Lock.AcquiredAt report them.
// Client.Inspect says what a majority holds (owner, acquisition time,
// fence, time left on a majority, whether the nodes agree, and each node's
// view); Client.Locks iterates over the held locks whose keys match a
// glob, with SCAN (never KEYS) at a bounded cost per step
// (TestLocksListsMatchingHeldAmong10000, TestInspectAgreesWithNodesAfterRestart).
//
// Client.ForceRelease evicts a holder that is gone or stuck: it deletes
// the key on a majority only if the inspected token still holds it, raises
// the fence counter to at least the largest fence seen, tombstones the
// token so its extensions cannot put the key back, and announces the
// release. Later holders get larger fences, so a fenced store refuses the
// evicted holder's late writes, and the evicted holder's next extension
// fails with ErrLockLost (TestForceReleaseFencesEvictedHolder,
// TestForceReleaseRaisesLaggingCounters).
//
// Beside the fence counter each node keeps a trail of the last acquisition
// that was not released, as long as the counter lives; Release deletes it.
// An acquisition that finds another holder's trail took over from a holder
// that let its lock expire or was evicted, and Lock.TookOver reports it
// with that holder's owner and fence: recover a crashed worker's tasks
// without a sweeper (TestTakeoverAfterKilledHolder, where the holder is a
// process killed with SIGKILL). See TookOver for its limits.
//
// # Development without Redis
//
// NewLocal returns a Client on one in-process memory node and logs a warning
// saying so. It is the only way to get one: a Client given Redis nodes never
// falls back to memory when they fail; it returns their errors.
//
// # Nodes
//
// A node.Node is one lock server (package node). node.NewRedis wraps a
// go-redis client the caller already has (Lua scripts, EVALSHA with EVAL
// after NOSCRIPT), also a *redis.ClusterClient: a key, its fence counter
// and its tombstones share one hash slot. Set ContextTimeoutEnabled on the
// go-redis client so that the per-node timeout cuts slow requests short (the
// client also stops waiting on its own, but the connection stays busy).
// node.NewMemory is an in-process node with the same semantics, for demos,
// development without Redis, and unit tests of code that takes locks.
//
// The nodes must be independent: no replication between them, each a
// separate server. At its first operation a client asks each node which
// server it is, and an answer counts only from a node identified as a
// distinct server; one server reached under two names (127.0.0.1:6379 and
// localhost:6379) fails every operation with ErrInvalidArgument once both
// names have answered. Lock keys
// must never be evicted: run the servers with maxmemory-policy noeviction.
// A node with another policy is logged once as a warning, or refused with
// WithRequireNoEviction.
//
// # Nodes that lost their data
//
// A node that restarts empty (or is flushed, or fails over to an empty
// replica) forgets who holds what, and could hand a held key to someone
// else. The client enforces the delayed-restart rule itself: each node
// keeps per key a marker of when it started keeping data for the key, and
// reports its age by its own clock with every acquire reply. A node whose
// marker is younger than the recovery period while another answering
// node's is older (by more than the node timeout) lost its data for that
// key: its yes does not count, and counts as a no in a split, until its
// marker reaches the period (WithRecoveryPeriod, default 10 minutes, at
// least every TTL in use; EventNode with Reason "recovering" names it).
// Markers all young and of one age are a new key, usable at once.
// Limits: every node losing its data at once, or a majority losing it
// while the nodes that kept it are silent or answer more than a moment
// after the others; a client with recovery off, or with a period shorter
// than another client's TTL. Persistence (appendfsync always) avoids the
// sit-out.
//
// # Errors
//
// Every error wraps exactly one of ErrNotAcquired, ErrQuorumUnreachable,
// ErrLockLost, ErrInvalidArgument, or the caller's ctx.Err() (the one
// exception: an error of the extend.WithMaxHold cap wraps ErrLockLost and
// extend.ErrMaxHold). The per-node failures of an ErrQuorumUnreachable are
// *NodeError values joined inside, one per failed node, as many as its text
// counts. A lock lost because nodes failed is ErrLockLost, with the failure
// in its text. Check them with errors.Is and errors.As.
package redlock

// Package semaphore limits a resource to N holders at a time over the same
// quorum of independent Redis nodes as package redlock: "at most N calls to
// a rate-limited API at once", "at most 3 exports running".
//
//	sem, err := semaphore.New(locks, "export", 3) // locks is a *redlock.Client
//	err = sem.Do(ctx, 30*time.Second, func(ctx context.Context) error {
//		lock, _ := redlock.LockFromContext(ctx)
//		return export(ctx, lock.Fence())
//	})
//
// # Design: N fenced mutex slots
//
// A semaphore of N permits is N mutexes of package redlock, its slots, with
// keys SlotKey(name, 0) … SlotKey(name, N-1). A permit is the lock of one
// slot, so it has everything a redlock.Lock has: its own validity and
// Extend, auto-extension (KeepAlive, Do), a loss signal (Done, Err, Context
// with a cause wrapping redlock.ErrLockLost) and a fence that grows with
// every acquisition of its slot. TryAcquire tries the slots once each in a
// random order (so that clients do not all queue on slot 0); Acquire, when
// all are held, waits on all slots at once with the client's retry policy
// and release notifications (see Semaphore.Acquire). No node script is
// added: a semaphore is a composition of the client's public API.
//
// # Never more than N holders
//
// Each slot is a Redlock mutex with at most one holder at any instant, and
// a permit is valid only while its slot's lock is: at most N valid permits
// at any instant. It inherits the mutex's assumptions (bounded clock drift,
// nodes that do not lose a held key: restart them no sooner than the
// largest TTL) and nothing more. A per-node counter compared against N,
// the obvious design, is not safe over a quorum: docs/design.md shows a
// schedule that admits N+1 holders, which Semaphore refuses.
//
// # Fences
//
// A permit's fence is its slot's: larger than the fence of every earlier
// holder of the same slot. A resource that refuses stale writes keeps the
// largest fence it has seen per (name, slot).
//
// # Limits
//
// N is not stored on the nodes: every user of a name must give the same N.
// A process that says 5 where the others say 3 uses slots 3 and 4 as well,
// and up to 5 holders exist.
//
// TryAcquire costs up to N quorum rounds when the permits are held (one per
// slot); hence MaxPermits. A waiter that wins two slots at the same instant
// releases the others before Acquire returns: for that moment it holds two
// permits (never more than N in total).
// Waiters are woken in arrival order per Client and slot, but there is no
// global queue across clients.
//
// A blocked Acquire runs one client Acquire per slot at once, and each of
// their attempts takes a connection to every node: size connection pools
// (go-redis PoolSize) for N times the waiting goroutines.
package semaphore

// Package election is leader election over a quorum of independent Redis
// nodes, built on the mutex of package redlock: one leader among replicas
// (a reconciliation loop, a scheduler), which the others can look up and
// observe.
//
// An Election is a named redlock lock. Campaign blocks until it acquires
// the lock, and returns a Term: the leadership, kept alive by the client's
// watchdog (redlock.Lock.KeepAlive) until Resign or loss. The candidate's
// value (an address, a pod name) is recorded on the nodes as the lock's
// owner (redlock.ContextWithOwner), so Leader reads the current leader from
// a majority of the nodes (redlock.Client.Inspect) without taking anything,
// and redlock inspect and ls show it. Observe reports the leader as it
// changes, woken by the release announcements of the nodes
// (redlock.Client.Released) and polling as a fallback.
//
// # Terms end before their lock does
//
// A Term's Done closes, with Err wrapping redlock.ErrLockLost, when the
// watchdog cannot extend the lock: a safety margin before the lock's
// validity ends (redlock.WithKeepAlive), so the leader has that long to stop
// while no other candidate can lead. A leader that dies without Resign
// (killed with SIGKILL, say) is replaced when its lock expires: WithTTL
// bounds that wait.
//
// # Fences: never two leaders whose writes a fenced store accepted
//
// A lock alone cannot stop a leader that was paused past its term (a GC
// pause, a VM migration, SIGSTOP) from acting when it resumes: it does not
// know yet that its term ended. The fence can. Each term's Fence is larger
// than that of every earlier term of the election (see "Fences" in package
// redlock for the exact conditions on data loss). So a store that keeps the
// largest fence it has accepted and refuses smaller ones accepts no write of
// an older leader once the new leader has written, however late it arrives.
//
// What a leader must do with the fence: send Term.Fence with every write to
// the resources it leads (a status store, a queue, a database row), and
// make each resource refuse a write whose fence is lower than the highest it
// has accepted (compare and set in one atomic step, as
// statuslock.RedisStore does). A resource that does not check fences is
// not protected against a paused leader; stopping at Done narrows the
// window but cannot close it.
//
// # Observe's bound
//
// Observe looks at once when a release is announced (a Resign while a
// candidate waits), then quickly a few times until it sees the next leader,
// and otherwise every poll interval (WithPollInterval, default 1s). A change
// is reported at most a poll interval plus one Leader round after it
// happened, as long as a majority of the nodes answer. Observe reports
// states, not every step: a term that begins and ends between two looks is
// not reported.
//
// # Limits
//
// Leadership is a redlock lock, with its limits: a node that restarts
// empty can hand the lock to a second candidate unless it restarts no
// sooner than the TTL (see "Restarts" in package redlock); fences keep
// such a second leader's writes apart in a fenced store. Leader's Fence is
// the largest fence counter a node reported, not the leader's own: at least
// it in a look after its Campaign returned (and larger when the counters
// drifted apart), and possibly less in a look that raced the term's start
// (see Leader.Fence). Write with Term.Fence, not with it.
package election

// Package locktest lets a test check the code a user writes around a
// lock: what it does when the lock is lost halfway through a write, when
// replicas contend, and when nodes fail. It needs no Redis and runs in
// plain go test, on real time or, inside a testing/synctest bubble, on the
// bubble's fake clock (a 30 s TTL lost and taken again costs microseconds).
//
// A Quorum is a set of memory nodes (node.Memory) the test controls;
// Quorum.Client returns a *redlock.Client over them, each client over its
// own links so a node can be cut off from one client only:
//
//	synctest.Test(t, func(t *testing.T) {
//		q := locktest.NewQuorum(t, 3)
//		a, b := q.Client(), q.Client()
//		q.Node(0).Pause()      // SIGSTOP: requests wait, land on Resume
//		q.Node(1).CutOff(a)    // a's requests to node-2 fail at once
//		q.Node(2).Slow(50 * time.Millisecond)
//		q.Node(2).RestartEmpty() // its locks, fences and tombstones gone
//		q.Node(2).JumpClock(time.Minute) // its keys expire early
//		...
//	})
//
// Make the quorum and its clients inside the bubble, and release the locks
// (or stop KeepAlive) before the bubble's function returns. Clients are
// closed, and pauses, delays and cuts ended, when the test ends.
//
// To lose a lock on purpose: Quorum.ExpireNow(key) (the key is gone and its
// holder's token refused, as after a stall past the TTL), Quorum.Evict(key)
// (as Client.ForceRelease), Quorum.LoseMajority (no majority is left). The
// holder learns of the loss at its next extension: Extend returns
// redlock.ErrLockLost, a kept lock's Done closes, Do's context is
// cancelled with a cause wrapping ErrLockLost.
//
// A Recorder checks the critical sections. The code under test marks
// Enter(who, section, fence) and its leave, Wrote(who, resource, fence)
// for each write the resource accepted, and Did(who, work) for work that
// must run once. Violations are two holders inside one section, a write
// accepted with a fence older than one accepted before, and work done
// twice; Recorder.Check fails the test with them and a timeline.
//
// Outside a test (an Example function, a program), a Session stands in
// for the *testing.T: it prints failures and runs cleanups at Close.
//
// Keys passed to ExpireNow, Evict and Inspect are named as by clients with
// the default key prefix.
package locktest

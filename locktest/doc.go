// Package locktest lets a test check the code a user writes around a
// lock: what it does when the lock is lost halfway through a write, when
// replicas contend, and when nodes fail. It needs no Redis and runs in
// plain go test, on real time or, inside a testing/synctest bubble, on the
// bubble's fake clock (a 30 s TTL lost and taken again costs microseconds).
//
// A Quorum is a set of memory nodes the test controls; Quorum.Client
// returns a *redlock.Client over them, each client over links of its own:
//
//	synctest.Test(t, func(t *testing.T) {
//		q := locktest.NewQuorum(t, 3)
//		a, b := q.Client(), q.Client()
//		q.Node(0).Pause()                // SIGSTOP: requests wait, land on Resume
//		q.Node(1).CutOff(a)              // a's requests to node-2 fail at once
//		q.Node(2).Slow(50 * time.Millisecond)
//		q.Node(2).RestartEmpty()         // its locks, fences and tombstones gone
//		q.Node(2).JumpClock(time.Minute) // its keys expire early
//		...
//	})
//
// Make the quorum and its clients inside the bubble, and release the locks
// (or stop KeepAlive) before the bubble's function returns.
//
// To lose a lock on purpose: Quorum.ExpireNow(key) (the key is gone and its
// holder's token refused, as after a stall past the TTL), Quorum.Evict(key)
// (as Client.ForceRelease), Quorum.LoseMajority. The holder learns of the
// loss at its next extension: Extend returns redlock.ErrLockLost, a kept
// lock's Done closes, Do's context is cancelled. The package's stale-write
// example shows it end to end.
//
// A Recorder checks critical sections. The code under test marks
// Enter(who, section, fence) and its leave, Wrote(who, resource, fence) for
// each write the resource accepted, Did(who, work) for work that must run
// once. Recorder.Check fails the test on two holders inside one section, a
// write accepted with a fence older than one accepted before, or work done
// twice, and prints a timeline.
//
// Explore runs a workload on simulated replicas under seeded fault
// schedules (node pauses, cuts, delays, stops, restarts after the TTL, and
// replica stalls at Replica.Checkpoint), each schedule in its own bubble:
//
//	func TestWorker(t *testing.T) {
//		locktest.Explore(t, locktest.Plan{Replicas: 3, Schedules: 1000},
//			func(ctx context.Context, r *locktest.Replica) {
//				myWorker(ctx, r.Client, r.Rec, r.Checkpoint) // until ctx ends
//			})
//	}
//
// The first violating schedule fails the test with its faults, timeline
// and seed; LOCKTEST_SEED=<seed> go test -run <test> replays it.
// FirstFailure returns it instead, to assert that a bug is found.
//
// Outside a test (an Example function, a program), a Session stands in
// for the *testing.T. Keys passed to ExpireNow, Evict and Inspect are
// named as by clients with the default key prefix. For miniredis instead
// of memory nodes, see the module locktest/miniredistest.
package locktest

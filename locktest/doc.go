// Package locktest lets a test check the code a user writes around a
// lock: what it does when the lock is lost halfway through a write, when
// replicas contend, and when nodes fail. It needs no Redis and runs in
// plain go test, on real time or, inside a testing/synctest bubble, on the
// bubble's fake clock (a 30 s TTL lost and taken again costs microseconds;
// make the quorum and its clients inside the bubble, and release their
// locks before it ends).
//
// A Quorum is a set of memory nodes the test controls, each with Pause,
// CutOff(client), Slow, Stop, RestartEmpty and JumpClock; Quorum.Client
// returns a *redlock.Client over them. To lose a lock on purpose:
// Quorum.ExpireNow(key) (as after a stall past the TTL), Quorum.Evict(key)
// (as Client.ForceRelease), Quorum.LoseMajority. The holder learns of it
// at its next extension: Extend returns redlock.ErrLockLost, a kept lock's
// Done closes, Do's context is cancelled.
//
// A Recorder checks what the code under test marks: Enter(who, section,
// fence) and its leave, Wrote(who, resource, fence) for each write the
// resource accepted, Did(who, work) for work that must run once. It finds
// two holders in one section, a write accepted with a fence older than one
// accepted before, and work done twice; Check fails the test with a
// timeline. A test that a stale write is refused after a lock loss:
//
//	q := locktest.NewQuorum(t, 3)
//	a, b := q.Client(), q.Client()
//	rec := locktest.NewRecorder()
//	store := newStatusStore(rec) // refuses an older fence; rec.Wrote on each write taken
//	la, _ := a.TryAcquire(ctx, "status", 30*time.Second)
//	q.ExpireNow("status") // a's lock is lost: b takes it, with a newer fence
//	lb, _ := b.TryAcquire(ctx, "status", 30*time.Second)
//	store.Write(lb.Fence(), "fresh")
//	if err := store.Write(la.Fence(), "stale"); err == nil { t.Error("stale write taken") }
//	rec.Check(t)
//
// Explore runs a workload on replicas under seeded fault schedules (node
// pauses, cuts, delays, stops, restarts after the TTL, replica stalls at
// Replica.Checkpoint). Given a test's *testing.T, each schedule runs in a
// bubble:
//
//	var stores sync.Map // per schedule: r.Rec is the schedule's Recorder
//	locktest.Explore(t, locktest.Plan{Replicas: 3, Schedules: 1000},
//		func(ctx context.Context, r *locktest.Replica) {
//			s, _ := stores.LoadOrStore(r.Rec, newTaskStore(r.Rec))
//			myWorker(ctx, r.Client, s, r.Checkpoint) // until ctx ends
//		})
//
// The first violating schedule fails the test with its faults, timeline
// and seed; LOCKTEST_SEED=<seed> go test -run <test> replays it (Explore
// says what a seed fixes). FirstFailure returns it, to assert a bug is
// found. Outside a test (an example, a program), a Session stands in for
// the *testing.T, and Explore runs the schedules on real time, many at
// once: give the Plan a short TTL and Length, scale the worker to them, and
// trust only a verdict that does not hang on speed (fences checked by the
// resource). The package's examples show both tests whole. Keys given to
// ExpireNow, Evict and Inspect are named as with the default key prefix.
// For miniredis instead of memory nodes, see module locktest/miniredistest.
package locktest

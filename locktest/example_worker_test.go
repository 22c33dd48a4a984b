package locktest_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/locktest"
	"github.com/quorumlock/quorumlock/redlock"
)

const tasks = 10

// taskStore holds the tasks' results. complete takes a result only for a
// task not done yet, and never with a fence older than one it saw for the
// task (unless blind, the bug: it takes every result).
type taskStore struct {
	rec   *locktest.Recorder
	blind bool

	mu    sync.Mutex
	done  map[string]bool
	fence map[string]uint64
}

func newTaskStore(rec *locktest.Recorder, blind bool) *taskStore {
	return &taskStore{rec: rec, blind: blind, done: map[string]bool{}, fence: map[string]uint64{}}
}

func (s *taskStore) next() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range tasks {
		if task := "task-" + strconv.Itoa(i); !s.done[task] {
			return task, true
		}
	}
	return "", false
}

func (s *taskStore) isDone(task string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done[task]
}

func (s *taskStore) complete(who, task string, fence uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.blind && (s.done[task] || fence < s.fence[task]) {
		return false
	}
	s.done[task], s.fence[task] = true, max(s.fence[task], fence)
	s.rec.Wrote(who, task, fence)
	s.rec.Did(who, task)
	return true
}

// leaseWorker is the code under test: it takes the next task's lease,
// works on it, and completes it with the lease's fence. Its delays follow
// ttl: a 30 s TTL gives work of 2 to 8 s and retries 0.5 to 1.5 s apart.
func leaseWorker(ctx context.Context, r *locktest.Replica, store *taskStore, ttl time.Duration) {
	unit := ttl / 30000 // a millisecond of a 30 s TTL
	for ctx.Err() == nil {
		task, ok := store.next()
		if !ok {
			return
		}
		ran, _ := r.Client.TryDo(ctx, task, ttl, func(ctx context.Context) error {
			l, _ := redlock.LockFromContext(ctx)
			if store.isDone(task) {
				return nil // done by another replica since we looked
			}
			time.Sleep(time.Duration(2000+r.Rand.IntN(6000)) * unit) // the work
			if ctx.Err() != nil {
				return ctx.Err() // the lease is lost: another replica takes over
			}
			r.Checkpoint() // a stall here (GC) makes the completion late
			store.complete(r.Name, task, l.Fence())
			return nil
		})
		if !ran {
			time.Sleep(time.Duration(500+r.Rand.IntN(1000)) * unit)
		}
	}
}

// TestTaskLeaseWorkerUnderFaults runs the worker on 3 replicas under 1,000
// fault schedules (100 with -short or -race).
func TestTaskLeaseWorkerUnderFaults(t *testing.T) {
	plan := locktest.Plan{Replicas: 3, Schedules: 1000}
	if testing.Short() || raceEnabled {
		plan.Schedules = 100
	}
	var stores sync.Map // one store per schedule, by its recorder
	locktest.Explore(t, plan, func(ctx context.Context, r *locktest.Replica) {
		s, _ := stores.LoadOrStore(r.Rec, newTaskStore(r.Rec, false))
		leaseWorker(ctx, r, s.(*taskStore), 30*time.Second)
	})
}

// The worker over a store that takes every result completes a task twice
// when a replica stalls past its lease: the schedules find it, and its
// seed replays it.
func TestTaskLeaseWorkerBlindStoreIsCaught(t *testing.T) {
	var stores sync.Map
	work := func(ctx context.Context, r *locktest.Replica) {
		s, _ := stores.LoadOrStore(r.Rec, newTaskStore(r.Rec, true))
		leaseWorker(ctx, r, s.(*taskStore), 30*time.Second)
	}
	findReplayable(t, locktest.Plan{Schedules: 1000}, "done twice", work)
}

// The task-lease worker on 3 replicas under 1,000 fault schedules. In a
// test, pass the *testing.T instead of a Session: the schedules then run
// on fake time, with the worker's real TTL, and a failing seed replays.
// Here they run on real time, many at once, with a short TTL: the verdict
// does not hang on speed because the task store checks fences.
func Example_workerUnderFaults() {
	t := locktest.NewSession(os.Stdout) // in a test: the *testing.T
	defer t.Close()
	const ttl = 100 * time.Millisecond
	var stores sync.Map // each schedule's task store, by its recorder
	locktest.Explore(t, locktest.Plan{Replicas: 3, Schedules: 1000, TTL: ttl, Length: 3 * ttl},
		func(ctx context.Context, r *locktest.Replica) {
			s, _ := stores.LoadOrStore(r.Rec, newTaskStore(r.Rec, false))
			leaseWorker(ctx, r, s.(*taskStore), ttl)
		})
	schedules := 0
	stores.Range(func(any, any) bool { schedules++; return true })
	fmt.Println("schedules:", schedules, "failed:", t.Failed())
	// Output:
	// schedules: 1000 failed: false
}

// One task, three replicas, one of them stalled past its lease before it
// completes: the store refuses its late completion.
func Example_taskLeaseWorker() {
	t := locktest.NewSession(os.Stdout) // in a test: the *testing.T
	defer t.Close()
	q := locktest.NewQuorum(t, 3)
	a, b := q.Client(), q.Client()
	rec := locktest.NewRecorder()
	store := newTaskStore(rec, false)
	ctx := context.Background()

	la, _ := a.TryAcquire(ctx, "task-0", 30*time.Second)
	q.ExpireNow("task-0") // a stalls past its lease
	lb, _ := b.TryAcquire(ctx, "task-0", 30*time.Second)
	fmt.Println("b completes:", store.complete("b", "task-0", lb.Fence()))
	fmt.Println("a completes late:", store.complete("a", "task-0", la.Fence()))
	fmt.Println("violations:", len(rec.Violations()))
	_ = lb.Release(ctx)
	// Output:
	// b completes: true
	// a completes late: false
	// violations: 0
}

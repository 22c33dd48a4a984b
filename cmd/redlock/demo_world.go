package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/statuslock"
)

// world is the simulated reality the replicas act on: a fenced status store
// (the resource the status locks protect) and, per service, what its
// containers really do, which the reconcilers compare with the stored status.
type world struct {
	services []string
	store    statuslock.Store
	stats    *demoStats
	ttl      time.Duration
	start    time.Time
	drainAt  time.Time // no new requests or crashes after it, so the statuses settle

	mu     sync.Mutex
	actual map[string]statuslock.Status // what the containers do: RUNNING, CRASHING or STOPPED
	inside map[string]*holder           // who is in a service's critical section now
}

// holder is one critical section in progress; valid reports whether its
// lock is still ours by the holder's own knowledge.
type holder struct {
	who   string
	fence uint64
	valid func() bool
}

func newWorld(services []string, store statuslock.Store, st *demoStats, ttl time.Duration) *world {
	w := &world{services: services, store: store, stats: st, ttl: ttl,
		actual: map[string]statuslock.Status{}, inside: map[string]*holder{}}
	for _, s := range services {
		w.actual[s] = statuslock.StatusStopped
	}
	return w
}

// enter records a critical section; two holders whose locks are both valid
// at once in the same service are an overlap, which the lock must prevent.
// The returned func leaves it.
func (w *world) enter(svc string, h *holder) (leave func()) {
	w.mu.Lock()
	if prev := w.inside[svc]; prev != nil && prev.valid() {
		w.stats.overlap(svc, fmt.Sprintf("%s (fence %d) entered while %s (fence %d) still held the lock", h.who, h.fence, prev.who, prev.fence))
	}
	w.inside[svc] = h
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		if w.inside[svc] == h {
			delete(w.inside, svc)
		}
		w.mu.Unlock()
	}
}

// heldBy reports whether the lock of a critical section run under ctx is
// still held: its context not cancelled and, by the lock's own clock, its
// validity not over. A loss signal that comes late on a starved machine
// (the context still live past ValidUntil) is not a second holder: the
// lock no longer claims exclusivity then; the fence guards the writes.
func heldBy(ctx context.Context) func() bool {
	lock, ok := redlock.LockFromContext(ctx)
	return func() bool {
		return ctx.Err() == nil && (!ok || time.Now().Before(lock.ValidUntil()))
	}
}

// status reads a service's stored status; never written means IDLE.
func (w *world) status(ctx context.Context, svc string) statuslock.Record {
	r, err := w.store.Get(ctx, svc)
	if err != nil {
		return statuslock.Record{ServiceID: svc, Status: statuslock.StatusIdle}
	}
	return r
}

// write stores a status with the writer's fence, counting refusals.
func (w *world) write(ctx context.Context, svc string, s statuslock.Status, fence uint64) error {
	err := w.store.Set(ctx, svc, s, fence)
	switch {
	case err == nil:
		w.stats.wrote(svc)
	case errors.Is(err, statuslock.ErrStaleFence):
		w.stats.fenced(svc)
	}
	return err
}

func (w *world) setActual(svc string, s statuslock.Status) {
	w.mu.Lock()
	w.actual[svc] = s
	w.mu.Unlock()
}

func (w *world) getActual(svc string) statuslock.Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.actual[svc]
}

// replica is one simulated instance of the control plane: an API, a worker
// and a reconciler sharing one lock client.
type replica struct {
	id     int
	locker *statuslock.Locker
	world  *world
	recon  *statuslock.Reconciler
}

func (r *replica) name(role string) string { return fmt.Sprintf("%s-%d", role, r.id) }

// locked runs fn under the service's status lock, recording the critical
// section for the overlap check.
func (r *replica) locked(ctx context.Context, who, svc string, fn func(ctx context.Context, fence uint64) error) error {
	return r.locker.WithStatusLock(ctx, svc, func(ctx context.Context, fence uint64) error {
		defer r.world.enter(svc, &holder{who: who, fence: fence, valid: heldBy(ctx)})()
		return fn(ctx, fence)
	})
}

// api takes deploy and stop requests: FAILED, STOPPED, IDLE or CRASHING
// services get redeployed, a RUNNING one is sometimes stopped.
func (r *replica) api(ctx context.Context) {
	for sleep(ctx, jitter(60*time.Millisecond, 120*time.Millisecond)) {
		if time.Now().After(r.world.drainAt) {
			continue
		}
		svc := r.world.services[rand.N(len(r.world.services))]
		_ = r.locked(ctx, r.name("api"), svc, func(ctx context.Context, fence uint64) error {
			var next statuslock.Status
			switch cur := r.world.status(ctx, svc).Status; {
			case cur == statuslock.StatusRunning && rand.N(4) == 0:
				next = statuslock.StatusStopped
			case cur == statuslock.StatusIdle, cur == statuslock.StatusFailed, cur == statuslock.StatusStopped, cur == statuslock.StatusCrashing:
				next = statuslock.StatusDeploying
			default:
				return nil
			}
			if err := r.world.write(ctx, svc, next, fence); err != nil {
				return err
			}
			if next == statuslock.StatusStopped {
				r.world.setActual(svc, statuslock.StatusStopped)
			}
			return nil
		})
	}
}

// worker deploys services that are DEPLOYING: it holds the status lock for
// the whole build, longer than the TTL, so the lock is extended meanwhile.
func (r *replica) worker(ctx context.Context) {
	for sleep(ctx, jitter(30*time.Millisecond, 60*time.Millisecond)) {
		svc := r.pickDeploying(ctx)
		if svc == "" {
			continue
		}
		_ = r.locked(ctx, r.name("worker"), svc, func(lctx context.Context, fence uint64) error {
			if r.world.status(lctx, svc).Status != statuslock.StatusDeploying {
				return nil // someone else deployed it meanwhile
			}
			build := jitter(r.world.ttl/2, 3*r.world.ttl/2)
			t := time.NewTimer(build)
			defer t.Stop()
			select {
			case <-t.C:
			case <-lctx.Done():
				return context.Cause(lctx) // lost the lock mid-build: stop
			}
			next, actual := statuslock.StatusRunning, statuslock.StatusRunning
			if rand.N(6) == 0 {
				next, actual = statuslock.StatusFailed, statuslock.StatusStopped
			}
			if err := r.world.write(lctx, svc, next, fence); err != nil {
				return err
			}
			r.world.setActual(svc, actual)
			return nil
		})
	}
}

// pickDeploying peeks (without the lock) for a service to deploy.
func (r *replica) pickDeploying(ctx context.Context) string {
	off := rand.N(len(r.world.services))
	for i := range r.world.services {
		svc := r.world.services[(off+i)%len(r.world.services)]
		if r.world.status(ctx, svc).Status == statuslock.StatusDeploying {
			return svc
		}
	}
	return ""
}

// reconcile brings the stored status in line with what the containers do,
// and re-asserts it otherwise (the reconciler's heartbeat write). Now and
// then a running service starts crashing, for the reconciler to notice.
func (r *replica) reconcile(ctx context.Context, svc string, fence uint64) error {
	w := r.world
	defer w.enter(svc, &holder{who: r.name("reconciler"), fence: fence, valid: heldBy(ctx)})()
	cur := w.status(ctx, svc).Status
	actual := w.getActual(svc)
	if actual == statuslock.StatusRunning && rand.N(8) == 0 && time.Now().Before(w.drainAt) {
		actual = statuslock.StatusCrashing
		w.setActual(svc, actual)
	}
	next := cur
	switch {
	case cur == statuslock.StatusRunning && actual == statuslock.StatusCrashing:
		next = statuslock.StatusCrashing
	case cur == statuslock.StatusCrashing && actual == statuslock.StatusRunning:
		next = statuslock.StatusRunning
	case cur == statuslock.StatusIdle:
		return nil // nothing deployed yet: nothing to reconcile
	}
	return w.write(ctx, svc, next, fence)
}

func (r *replica) startReconciler(ctx context.Context, services []string, ttl time.Duration) error {
	rec, err := statuslock.NewReconciler(r.locker,
		func(context.Context) ([]string, error) { return services, nil },
		r.reconcile,
		statuslock.WithInterval(jitter(250*time.Millisecond, 350*time.Millisecond)),
		statuslock.WithReconcileTTL(ttl))
	if err != nil {
		return err
	}
	r.recon = rec
	return rec.Start(ctx)
}

func (r *replica) stopReconciler() {
	if r.recon == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.recon.Stop(ctx)
}

// pausedHolder takes svc's status lock by hand (no auto-extension), then
// stalls past its TTL as a process in a long GC pause or a frozen VM would,
// until a newer holder has written, and then writes late with its old
// fence: the fenced store must refuse that write.
func (r *replica) pausedHolder(ctx context.Context, svc string, out *progress) {
	who := r.name("api")
	lock, err := r.locker.Acquire(ctx, svc)
	if err != nil {
		out.event(fmt.Sprintf("%s could not take %s's lock to pause with it: %v", who, svc, err))
		return
	}
	fence := lock.Fence()
	leave := r.world.enter(svc, &holder{who: who + " (paused)", fence: fence, valid: func() bool { return time.Now().Before(lock.ValidUntil()) }})
	cur := r.world.status(ctx, svc).Status
	out.event(fmt.Sprintf("%s holds %s (fence %d, status %s) and pauses past its %s TTL", who, svc, fence, cur, r.world.ttl))
	began := time.Now()
	deadline := began.Add(10 * r.world.ttl)
	for time.Now().Before(deadline) {
		time.Sleep(r.world.ttl / 10)
		if time.Now().After(lock.ValidUntil()) && r.world.status(ctx, svc).Fence > fence {
			break // a newer holder has written: now write late
		}
	}
	if r.world.status(ctx, svc).Fence <= fence {
		// Nobody took the lock meanwhile (the demo was ending, or a busy
		// machine slowed the others): a newer holder writes now, so that
		// the late write below always meets a newer fence.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		err := r.locked(wctx, r.name("worker")+" (newer holder)", svc, func(ctx context.Context, f uint64) error {
			return r.world.write(ctx, svc, r.world.status(ctx, svc).Status, f)
		})
		cancel()
		if err != nil {
			out.event(fmt.Sprintf("%s: a newer holder could not write: %v", svc, err))
		}
	}
	paused := time.Since(began)
	err = r.world.write(context.WithoutCancel(ctx), svc, statuslock.StatusStopped, fence)
	leave()
	now := r.world.status(ctx, svc)
	switch {
	case errors.Is(err, statuslock.ErrStaleFence):
		r.world.stats.pause(fmt.Sprintf("%s paused %s holding %s with fence %d; its late write was refused (store at fence %d)",
			who, paused.Round(time.Millisecond), svc, fence, now.Fence), true)
	case err == nil:
		r.world.stats.pause(fmt.Sprintf("%s paused %s holding %s with fence %d; no newer holder wrote meanwhile, so its late write was accepted",
			who, paused.Round(time.Millisecond), svc, fence), false)
	default:
		r.world.stats.pause(fmt.Sprintf("%s's late write failed: %v", who, err), false)
	}
	out.event(fmt.Sprintf("%s resumed after %s: late write with fence %d: %s", who, paused.Round(time.Millisecond), fence, writeResult(err)))
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_ = lock.Release(rctx) // expired long ago: ErrLockLost, keys already gone
}

func writeResult(err error) string {
	switch {
	case err == nil:
		return "accepted"
	case errors.Is(err, statuslock.ErrStaleFence):
		return "refused (stale fence)"
	}
	return err.Error()
}

// jitter is a random duration in [lo, hi).
func jitter(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + rand.N(hi-lo)
}

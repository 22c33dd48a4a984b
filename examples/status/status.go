package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/sqlfence"
	"github.com/quorumlock/quorumlock/statuslock"
)

// containers is the reality the statuses describe: each service's
// container state, as the container runtime would report it.
type containers struct {
	mu    sync.Mutex
	state map[string]string // "running", "crashing", "" (none)
}

func (c *containers) set(svc, s string) { c.mu.Lock(); c.state[svc] = s; c.mu.Unlock() }
func (c *containers) get(svc string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state[svc]
}

// expected is the status a service's containers call for.
func expected(container string) statuslock.Status {
	switch container {
	case "running":
		return statuslock.StatusRunning
	case "crashing":
		return statuslock.StatusCrashing
	default:
		return statuslock.StatusFailed
	}
}

// config of a run.
type config struct {
	Services int
	Paused   string // the service whose worker freezes holding its status lock
	Crashing string // a service whose container crashes after it was RUNNING
	PauseTTL time.Duration
}

// outcome is what happened.
type outcome struct {
	Final       map[string]statuslock.Status
	Wrong       []string // services whose final status is not what their containers call for
	Passes      int      // reconciler passes until every service was reconciled
	Corrected   []string // services the reconciler changed
	LateRunning error    // the paused worker's late RUNNING
	Errors      []error
}

// run: the API sets DEPLOYING on every service, the workers deploy and set
// RUNNING or FAILED (every fifth deployment fails), the worker of cfg.Paused
// freezes holding its lock, cfg.Crashing's container crashes, and the
// reconciler passes until every service was reconciled; then the frozen
// worker wakes up and writes RUNNING.
func run(ctx context.Context, db *sql.DB, newClient func(owner string) (*redlock.Client, error), cfg config) (*outcome, error) {
	store, err := sqlfence.NewStatusStore(db, "")
	if err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, store.StatusSchema()); err != nil {
		return nil, err
	}
	locker := func(owner string, opts ...statuslock.Option) (*statuslock.Locker, error) {
		c, err := newClient(owner)
		if err != nil {
			return nil, err
		}
		return statuslock.New(c, opts...)
	}
	api, err := locker("api")
	if err != nil {
		return nil, err
	}
	worker, err := locker("worker")
	if err != nil {
		return nil, err
	}
	frozen, err := locker("worker-paused", statuslock.WithTTL(cfg.PauseTTL))
	if err != nil {
		return nil, err
	}
	reconcilerLocks, err := locker("reconciler")
	if err != nil {
		return nil, err
	}
	for _, l := range []*statuslock.Locker{api, worker, frozen, reconcilerLocks} {
		defer l.Client().Close()
	}

	var services []string
	for i := range cfg.Services {
		services = append(services, fmt.Sprintf("svc-%02d", i+1))
	}
	reality := &containers{state: map[string]string{}}
	out := &outcome{Final: map[string]statuslock.Status{}}
	var mu sync.Mutex
	fail := func(err error) { mu.Lock(); out.Errors = append(out.Errors, err); mu.Unlock() }

	// API: POST /services/:id/deploy, then the job goes to the worker.
	// Worker: deploys, then writes the result under the status lock.
	var wg sync.WaitGroup
	var pausedLock *statuslock.Lock
	for i, svc := range services {
		wg.Go(func() {
			err := api.WithStatusLock(ctx, svc, func(ctx context.Context, fence uint64) error {
				return store.Set(ctx, svc, statuslock.StatusDeploying, fence)
			})
			if err != nil {
				fail(fmt.Errorf("api %s: %w", svc, err))
				return
			}
			if svc == cfg.Paused {
				// The worker takes the lock to write RUNNING and freezes
				// (a GC pause, a VM migration) before it can write.
				l, err := frozen.Acquire(ctx, svc)
				if err != nil {
					fail(fmt.Errorf("paused worker %s: %w", svc, err))
					return
				}
				mu.Lock()
				pausedLock = l
				mu.Unlock()
				return
			}
			result := statuslock.StatusRunning
			if i%5 == 4 {
				result = statuslock.StatusFailed // the deployment failed: no container
			} else {
				reality.set(svc, "running")
			}
			err = worker.WithStatusLock(ctx, svc, func(ctx context.Context, fence uint64) error {
				return store.Set(ctx, svc, result, fence)
			})
			if err != nil {
				fail(fmt.Errorf("worker %s: %w", svc, err))
			}
		})
	}
	wg.Wait()
	if cfg.Crashing != "" {
		reality.set(cfg.Crashing, "crashing")
	}

	// The reconciler: passes until every service was reconciled (the paused
	// one is skipped while its frozen holder's lock is valid).
	var corrected []string
	rec, err := statuslock.NewReconciler(reconcilerLocks,
		func(context.Context) ([]string, error) { return services, nil },
		func(ctx context.Context, svc string, fence uint64) error {
			want := expected(reality.get(svc))
			cur, err := store.Get(ctx, svc)
			if err != nil && !errors.Is(err, statuslock.ErrNotFound) {
				return err
			}
			if cur.Status == want {
				return nil
			}
			mu.Lock()
			corrected = append(corrected, fmt.Sprintf("%s %s->%s", svc, cur.Status, want))
			mu.Unlock()
			return store.Set(ctx, svc, want, fence)
		})
	if err != nil {
		return nil, err
	}
	done := map[string]bool{}
	for out.Passes = 1; len(done) < len(services); out.Passes++ {
		if out.Passes > 10_000 { // a hang guard, not a speed limit
			return nil, fmt.Errorf("%d services never reconciled", len(services)-len(done))
		}
		pass, err := rec.RunOnce(ctx)
		if err != nil {
			return nil, err
		}
		for _, svc := range pass.Reconciled {
			done[svc] = true
		}
		for svc, err := range pass.Failed {
			fail(fmt.Errorf("reconcile %s: %w", svc, err))
			done[svc] = true
		}
		if len(done) < len(services) {
			time.Sleep(cfg.PauseTTL / 10)
		}
	}
	out.Passes--
	out.Corrected = corrected

	// The frozen worker wakes up and writes RUNNING with its lock's fence.
	if pausedLock != nil {
		out.LateRunning = store.Set(ctx, cfg.Paused, statuslock.StatusRunning, pausedLock.Fence())
	}

	for _, svc := range services {
		rec, err := store.Get(ctx, svc)
		if err != nil {
			return nil, err
		}
		out.Final[svc] = rec.Status
		if rec.Status != expected(reality.get(svc)) {
			out.Wrong = append(out.Wrong, svc)
		}
	}
	return out, nil
}

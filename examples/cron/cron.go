package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/tick"
)

// newLockClient is the replica's lock client: on the configured nodes, or,
// when none are configured, the explicit single-instance mode (one
// in-process node, logged as a warning): fine for local development, not
// for replicas.
func newLockClient(nodes []node.Node, owner string, logger *slog.Logger) (c *redlock.Client, single bool, err error) {
	if len(nodes) == 0 {
		logger.Warn("no lock nodes configured: single-instance mode, the job is not protected across replicas", "owner", owner)
		c, err = redlock.NewLocal(redlock.WithOwner(owner), redlock.WithLogger(logger))
		return c, true, err
	}
	c, err = redlock.New(nodes, redlock.WithOwner(owner), redlock.WithLogger(logger))
	return c, false, err
}

// replica is one scheduler: its name and its lock client.
type replica struct {
	name   string
	client *redlock.Client
}

// strategy runs a replica's job for the tick scheduled at, or not; ran
// says whether it did.
type strategy func(ctx context.Context, r replica, job string, at time.Time, fn func(context.Context) error) (ran bool, err error)

// oncePerTick is the fix: the tick claim of package tick. Its record turns
// away every replica that comes after the run, however short the job.
func oncePerTick(ctx context.Context, r replica, job string, at time.Time, fn func(context.Context) error) (bool, error) {
	res, err := tick.Run(ctx, r.client, job, tick.At(at), fn)
	return res.Ran, err
}

// plainLock is broken on purpose: one attempt at the job's lock, released
// at the end, with no record of the tick. It keeps runs from overlapping,
// not a later replica from running the same tick again.
func plainLock(ctx context.Context, r replica, job string, _ time.Time, fn func(context.Context) error) (bool, error) {
	return r.client.TryDo(ctx, job, 30*time.Second, fn)
}

// result is what the schedulers did.
type result struct {
	Ticks     int
	RunsOf    []int            // per tick, how many replicas ran the job
	ByReplica map[string]int   // runs per replica
	Errors    map[string]error // per replica, the last unexpected error
}

// runSchedulers fires every replica's scheduler, ticks times, with an
// instant job. On each tick all replicas but the last fire at the same
// moment; with late, the last fires only after they are done (a replica
// whose clock is behind, or that started slowly), else with them.
func runSchedulers(ctx context.Context, replicas []replica, ticks int, job string, late bool, run strategy) result {
	res := result{Ticks: ticks, RunsOf: make([]int, ticks), ByReplica: map[string]int{}, Errors: map[string]error{}}
	var mu sync.Mutex
	base := time.Date(2026, 11, 24, 17, 0, 0, 0, time.UTC)
	fire := func(k int, r replica) {
		ran, err := run(ctx, r, job, base.Add(time.Duration(k)*time.Minute), func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			res.RunsOf[k]++ // the job itself
			res.ByReplica[r.name]++
			return nil
		})
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			res.Errors[r.name] = fmt.Errorf("tick %d (ran %v): %w", k, ran, err)
		}
	}
	for k := range ticks {
		together := replicas
		if late && len(replicas) > 1 {
			together = replicas[:len(replicas)-1]
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, r := range together {
			wg.Go(func() { <-start; fire(k, r) })
		}
		close(start)
		wg.Wait()
		if len(together) < len(replicas) {
			fire(k, replicas[len(replicas)-1])
		}
	}
	return res
}

// exactlyOnce is the number of ticks on which exactly one replica ran.
func (r result) exactlyOnce() int {
	n := 0
	for _, runs := range r.RunsOf {
		if runs == 1 {
			n++
		}
	}
	return n
}

// twice is the number of ticks on which more than one replica ran.
func (r result) twice() int {
	n := 0
	for _, runs := range r.RunsOf {
		if runs > 1 {
			n++
		}
	}
	return n
}

func (r result) String() string {
	missed := r.Ticks - r.exactlyOnce() - r.twice()
	return fmt.Sprintf("%d ticks: exactly one run on %d, none on %d, more than one on %d; runs by replica %v; errors %d",
		r.Ticks, r.exactlyOnce(), missed, r.twice(), r.ByReplica, len(r.Errors))
}

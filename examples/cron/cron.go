package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
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

// result is what the schedulers did.
type result struct {
	Ticks     int
	RunsOf    []int            // per tick, how many replicas ran the job
	ByReplica map[string]int   // runs per replica
	Errors    map[string]error // per replica, the last unexpected error
	// SplitGiveUps: attempts that ended "not acquired" after the split-vote
	// rounds ran out (ErrNotAcquired saying "split vote"); the tick is judged
	// by its run count, so one is harmless when another replica ran it.
	SplitGiveUps int
}

// runSchedulers fires every replica's scheduler at the same moment, ticks
// times. On a tick each replica makes a single attempt at the job's lock
// (TryAcquire, as redlock exec -n does); the replica that gets it runs the
// job and keeps the lock until every replica's attempt for the tick is over
// (a job outlasts the replicas' skew), then releases it.
func runSchedulers(ctx context.Context, replicas []replica, ticks int, job string) result {
	res := result{Ticks: ticks, RunsOf: make([]int, ticks), ByReplica: map[string]int{}, Errors: map[string]error{}}
	var mu sync.Mutex
	for tick := range ticks {
		var attempted, done sync.WaitGroup
		attempted.Add(len(replicas))
		done.Add(len(replicas))
		start := make(chan struct{})
		for _, r := range replicas {
			go func() {
				defer done.Done()
				<-start
				lock, err := r.client.TryAcquire(ctx, job, 30*time.Second)
				attempted.Done()
				if err != nil {
					mu.Lock()
					switch {
					case errors.Is(err, redlock.ErrNotAcquired) && isSplit(err):
						res.SplitGiveUps++ // the tick's verdict is its run count
					case !errors.Is(err, redlock.ErrNotAcquired):
						res.Errors[r.name] = err
					}
					mu.Unlock()
					return
				}
				mu.Lock()
				res.RunsOf[tick]++ // the job itself
				res.ByReplica[r.name]++
				mu.Unlock()
				attempted.Wait()
				if err := lock.Release(context.WithoutCancel(ctx)); err != nil {
					mu.Lock()
					res.Errors[r.name] = err
					mu.Unlock()
				}
			}()
		}
		close(start)
		done.Wait()
	}
	return res
}

// isSplit: the attempt gave up on a split vote (nobody won the tick).
func isSplit(err error) bool { return strings.Contains(err.Error(), "split vote") }

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

func (r result) String() string {
	missed, twice := 0, 0
	for _, runs := range r.RunsOf {
		switch {
		case runs == 0:
			missed++
		case runs > 1:
			twice++
		}
	}
	return fmt.Sprintf("%d ticks: exactly one run on %d, none on %d, more than one on %d; runs by replica %v; split-vote give-ups %d; errors %d",
		r.Ticks, r.exactlyOnce(), missed, twice, r.ByReplica, r.SplitGiveUps, len(r.Errors))
}

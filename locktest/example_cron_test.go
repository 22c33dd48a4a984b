package locktest_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/locktest"
)

const period = time.Minute

// cronReplica is the code under test: at every minute, late by its skew,
// it takes the tick's lock for a period and runs the job, unless the lock
// came too late (past half the period, when the tick's lock may have
// expired). It leaves the lock to expire, so that a replica coming later
// finds the tick taken (unless releaseEarly, the bug).
func cronReplica(ctx context.Context, r *locktest.Replica, skew time.Duration, releaseEarly bool) {
	for {
		tick := time.Now().Truncate(period).Add(period)
		t := time.NewTimer(time.Until(tick.Add(skew)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		name := "report-" + tick.Format("15:04")
		l, err := r.Client.TryAcquire(ctx, name, period)
		if err != nil || time.Since(tick) > period/2 {
			continue // taken by another replica, no quorum, or too late: not ours
		}
		r.Rec.Did(r.Name, name)
		time.Sleep(time.Duration(1000+r.Rand.IntN(3000)) * time.Millisecond) // the job
		if releaseEarly {
			_ = l.Release(ctx)
		}
	}
}

func cronPlan() locktest.Plan {
	p := locktest.Plan{Replicas: 3, Schedules: 1000, Length: 5 * period, TTL: period}
	if testing.Short() || raceEnabled {
		p.Schedules = 100
	}
	return p
}

// Each tick runs on one replica at most, replicas 5 s apart, under the
// schedules' faults.
func TestCronOnThreeReplicasUnderFaults(t *testing.T) {
	locktest.Explore(t, cronPlan(), func(ctx context.Context, r *locktest.Replica) {
		cronReplica(ctx, r, time.Duration(r.ID)*5*time.Second, false)
	})
}

// A cron job that releases its lock when the job ends runs a tick again on
// a replica that comes later: caught, and replayed by its seed.
func TestCronReleasingEarlyIsCaught(t *testing.T) {
	work := func(ctx context.Context, r *locktest.Replica) {
		cronReplica(ctx, r, time.Duration(r.ID)*5*time.Second, true)
	}
	findReplayable(t, cronPlan(), "done twice", work)
}

// Three replicas try one tick: one runs it.
func Example_cronOnThreeReplicas() {
	t := locktest.NewSession(os.Stdout) // in a test: the *testing.T
	defer t.Close()
	q := locktest.NewQuorum(t, 3)
	rec := locktest.NewRecorder()
	ctx := context.Background()
	for _, who := range []string{"replica-1", "replica-2", "replica-3"} {
		c := q.Client()
		if _, err := c.TryAcquire(ctx, "report-00:01", 30*time.Second); err == nil {
			rec.Did(who, "report-00:01")
		}
	}
	fmt.Println("violations:", len(rec.Violations()))
	// Output:
	// violations: 0
}

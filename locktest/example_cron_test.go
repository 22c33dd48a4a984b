package locktest_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/locktest"
	"github.com/quorumlock/quorumlock/tick"
)

const period = time.Minute

// cronReplica is the code under test: at every minute, late by its skew,
// it runs the job through the tick claim, which turns away a replica that
// comes after the tick ran. With plainLock (the bug) it takes a lock for the
// job and releases it when the job ends, so a replica coming later runs the
// tick again.
func cronReplica(ctx context.Context, r *locktest.Replica, skew time.Duration, plainLock bool) {
	for {
		at := time.Now().Truncate(period).Add(period)
		t := time.NewTimer(time.Until(at.Add(skew)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		name := "report-" + at.Format("15:04")
		job := func(ctx context.Context) error {
			r.Rec.Did(r.Name, name)
			time.Sleep(time.Duration(1000+r.Rand.IntN(3000)) * time.Millisecond) // the job
			return nil
		}
		if plainLock {
			_, _ = r.Client.TryDo(ctx, name, period, job)
			continue
		}
		_, _ = tick.Run(ctx, r.Client, "report", tick.At(at), job)
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

// A cron job on a plain lock, released when the job ends, runs a tick again
// on a replica that comes later: caught, and replayed by its seed.
func TestCronReleasingEarlyIsCaught(t *testing.T) {
	work := func(ctx context.Context, r *locktest.Replica) {
		cronReplica(ctx, r, time.Duration(r.ID)*5*time.Second, true)
	}
	findReplayable(t, cronPlan(), "done twice", work)
}

// Three replicas claim one tick, one after the other: one runs it.
func Example_cronOnThreeReplicas() {
	t := locktest.NewSession(os.Stdout) // in a test: the *testing.T
	defer t.Close()
	q := locktest.NewQuorum(t, 3)
	rec := locktest.NewRecorder()
	ctx := context.Background()
	at := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	for _, who := range []string{"replica-1", "replica-2", "replica-3"} {
		res, err := tick.Run(ctx, q.Client(), "report", tick.At(at), func(ctx context.Context) error {
			rec.Did(who, "report-00:01")
			return nil
		})
		fmt.Println(who, "ran:", res.Ran, err)
	}
	fmt.Println("violations:", len(rec.Violations()))
	// Output:
	// replica-1 ran: true <nil>
	// replica-2 ran: false <nil>
	// replica-3 ran: false <nil>
	// violations: 0
}

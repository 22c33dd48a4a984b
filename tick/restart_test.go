package tick_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/tick"
)

// A tick's records outlive a rolling restart: the three nodes restarted
// empty one after the other, each followed by the client's recovery
// period (far shorter than the retention). A replica that fires after
// each restart never runs the tick again: the nodes that lost the records
// sit out the retention, which the nodes were told of.
func TestRollingRestartDoesNotRunATickAgain(t *testing.T) {
	t.Parallel()
	const recovery = 3 * time.Second
	cl := redistest.StartT(t, 3)
	cs := clientsOn(t, nodesOf(cl), 2, redlock.WithRecoveryPeriod(recovery))
	ctx, job, at := ctxFor(t, 2*time.Minute), jobName(t), tickTime(0)
	var runs atomic.Int32
	fn := func(context.Context) error { runs.Add(1); return nil }
	if r, err := tick.Run(ctx, cs[0], job, tick.Every(period), fn, clockAt(at), tick.WithClaimTTL(recovery)); err != nil || !r.Ran {
		t.Fatalf("the first run: %v, %v", r, err)
	}
	for i, n := range cl.Nodes() {
		if err := n.FlushAll(ctx); err != nil {
			t.Fatal(err)
		}
		for wiped := time.Now(); time.Since(wiped) < recovery+500*time.Millisecond; time.Sleep(200 * time.Millisecond) {
			r, err := tick.Run(ctx, cs[1], job, tick.Every(period), fn, clockAt(at), tick.WithClaimTTL(recovery))
			if r.Ran || runs.Load() != 1 {
				t.Fatalf("node %d restarted empty %s ago: the tick ran again (%v, %v)", i, time.Since(wiped).Round(time.Millisecond), r, err)
			}
		}
	}
}

package tick_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/tick"
)

const ticks = 300

// TestOneRunPerTickAllTogether: three replicas fire every tick at the same
// instant with a job that takes no time; each tick runs exactly once.
func TestOneRunPerTickAllTogether(t *testing.T) {
	cs, _ := replicas(t, 3, 3)
	ctx, job, runs := ctxFor(t, 10*time.Minute), jobName(t), newCounter()
	for k := range ticks {
		at := tickTime(k)
		name := at.UTC().Format(time.RFC3339Nano)
		res := fire(t, ctx, cs, job, []time.Time{at, at, at}, runs.job(name))
		ranOnce(t, runs.count(name), res)
	}
}

// TestOneRunPerTickLateReplica: the third replica fires only after the
// other two have returned (the tick has run and its claim is released);
// the tick's record turns it away.
func TestOneRunPerTickLateReplica(t *testing.T) {
	cs, _ := replicas(t, 3, 3)
	ctx, job, runs := ctxFor(t, 10*time.Minute), jobName(t), newCounter()
	for k := range ticks {
		at := tickTime(k)
		name := at.UTC().Format(time.RFC3339Nano)
		first := fire(t, ctx, cs[:2], job, []time.Time{at, at}, runs.job(name))
		late, err := tick.Run(ctx, cs[2], job, tick.Every(period), runs.job(name), clockAt(at))
		if err != nil {
			t.Fatal(err)
		}
		if late.Status != tick.Done || late.Record.Outcome != tick.OutcomeOK || late.Record.Finished.IsZero() {
			t.Fatalf("the late replica: %s", late)
		}
		ranOnce(t, runs.count(name), append(first, late))
	}
}

// TestOneRunPerTickSkewedClocks: replica clocks are off by up to 40% of the
// period either way; they all name the nearest boundary, and the tick runs
// once.
func TestOneRunPerTickSkewedClocks(t *testing.T) {
	cs, _ := replicas(t, 3, 3)
	ctx, job, runs := ctxFor(t, 10*time.Minute), jobName(t), newCounter()
	rng := rand.New(rand.NewPCG(1, 2))
	skew := func() time.Duration { return time.Duration((rng.Float64()*0.8 - 0.4) * float64(period)) }
	for k := range ticks {
		at := tickTime(k)
		name := at.UTC().Format(time.RFC3339Nano)
		clocks := []time.Time{at.Add(-period * 4 / 10), at.Add(skew()), at.Add(period * 4 / 10)}
		if k%2 == 1 {
			clocks[0], clocks[2] = at.Add(skew()), at.Add(skew())
		}
		res := fire(t, ctx, cs, job, clocks, runs.job(name))
		for _, r := range res {
			if r.Tick != name {
				t.Fatalf("a replica named tick %s, not %s", r.Tick, name)
			}
		}
		ranOnce(t, runs.count(name), res)
	}
}

// TestSplitVoteOnTheClaimHasOneRunner: five replicas claim each tick at the
// same instant on five nodes, where votes split; one runs it.
func TestSplitVoteOnTheClaimHasOneRunner(t *testing.T) {
	cs, _ := replicas(t, 5, 5)
	ctx, job, runs := ctxFor(t, 10*time.Minute), jobName(t), newCounter()
	for k := range 100 {
		at := tickTime(k)
		name := at.UTC().Format(time.RFC3339Nano)
		res := fire(t, ctx, cs, job, []time.Time{at, at, at, at, at}, runs.job(name))
		ranOnce(t, runs.count(name), res)
	}
}

// TestOneRunPerTickOnMemoryNodes: the same on memory nodes shared by three
// clients, and on one redlock.NewLocal client used by three replicas.
func TestOneRunPerTickOnMemoryNodes(t *testing.T) {
	t.Run("shared memory nodes", func(t *testing.T) {
		cs := clientsOn(t, memoryNodes(), 3)
		oneRunPerTick(t, cs)
	})
	t.Run("NewLocal", func(t *testing.T) {
		c, err := redlock.NewLocal()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		oneRunPerTick(t, []*redlock.Client{c, c, c})
	})
}

func oneRunPerTick(t *testing.T, cs []*redlock.Client) {
	ctx, job, runs := ctxFor(t, 5*time.Minute), jobName(t), newCounter()
	for k := range ticks {
		at := tickTime(k)
		name := at.UTC().Format(time.RFC3339Nano)
		res := fire(t, ctx, cs, job, []time.Time{at, at, at}, runs.job(name))
		ranOnce(t, runs.count(name), res)
	}
}

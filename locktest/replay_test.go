package locktest_test

import (
	"context"
	"testing"

	"github.com/quorumlock/quorumlock/locktest"
)

// replays is how many times a found seed is replayed.
const replays = 20

// maxSeeds is how many found seeds are tried: under the race detector
// the scheduler breaks more ties, and with 5 seeds the cron test failed 3
// runs in 16, every seed replaying identically 19 times in 20 or fewer.
const maxSeeds = 15

// findReplayable runs plan until a schedule shows a violation of kind, and
// checks that its seed, replayed 20 times, fails each time exactly as it
// did: the same faults, violations and timeline, line for line (times,
// fences, who did what). A seed fixes the faults, the replicas' Rand, the
// clients' tokens and split-vote jitter; goroutines runnable at one fake
// instant still run in the scheduler's order, so a schedule whose steps
// share an instant can replay differently: such a seed is logged with its
// rate and the search goes on, up to maxSeeds seeds.
func findReplayable(t *testing.T, plan locktest.Plan, kind string, work func(context.Context, *locktest.Replica)) {
	t.Helper()
	for range maxSeeds {
		f := locktest.FirstFailure(t, plan, work)
		if f == nil {
			t.Fatalf("schedules from seed %d found no %s", plan.Seed, kind)
		}
		if !has(f, kind) {
			t.Fatalf("found %v, want a %s", f, kind)
		}
		same := identicalReplays(t, plan, f, work)
		if same == replays {
			t.Logf("found, and replayed identically %d times, as a user would see it:\n%v", replays, f)
			return
		}
		t.Logf("seed %d replayed identically %d times in %d (steps sharing an instant)", f.Seed, same, replays)
		plan.Schedules -= int(f.Seed + 1 - max(plan.Seed, 1))
		plan.Seed = f.Seed + 1
	}
	t.Fatal("no found seed replayed identically")
}

// identicalReplays replays the seed of f and counts the replays that fail
// exactly as f: same seed, faults, violations and timeline.
func identicalReplays(t *testing.T, plan locktest.Plan, f *locktest.Failure, work func(context.Context, *locktest.Replica)) int {
	t.Helper()
	replay := plan
	replay.Seed, replay.Schedules = f.Seed, 1
	same := 0
	for range replays {
		if again := locktest.FirstFailure(t, replay, work); again != nil && again.Error() == f.Error() {
			same++
		}
	}
	return same
}

func has(f *locktest.Failure, kind string) bool {
	for _, v := range f.Violations {
		if v.Kind == kind {
			return true
		}
	}
	return false
}

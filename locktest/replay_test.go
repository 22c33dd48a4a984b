package locktest_test

import (
	"context"
	"testing"

	"github.com/quorumlock/quorumlock/locktest"
)

// findReplayable runs plan until a schedule shows a violation of kind, and
// checks that its seed replays the same first violation 5 times in 5.
// Goroutines runnable at one fake instant run in the scheduler's order and
// the client draws its split-vote jitter from a source no seed fixes, so
// some violations depend on an interleaving and replay only sometimes:
// those are logged with their rate and the search goes on, up to 5 seeds.
func findReplayable(t *testing.T, plan locktest.Plan, kind string, work func(context.Context, *locktest.Replica)) {
	t.Helper()
	for range 5 {
		f := locktest.FirstFailure(t, plan, work)
		if f == nil {
			t.Fatalf("schedules from seed %d found no %s", plan.Seed, kind)
		}
		if !has(f, kind) {
			t.Fatalf("found %v, want a %s", f, kind)
		}
		replay := plan
		replay.Seed, replay.Schedules = f.Seed, 1
		same := 0
		for range 5 {
			if again := locktest.FirstFailure(t, replay, work); again != nil && again.Violations[0] == f.Violations[0] {
				same++
			}
		}
		if same == 5 {
			t.Logf("found, as a user would see it:\n%v", f)
			return
		}
		t.Logf("seed %d replayed its violation %d times in 5 (an interleaving)", f.Seed, same)
		plan.Schedules -= int(f.Seed + 1 - max(plan.Seed, 1))
		plan.Seed = f.Seed + 1
	}
	t.Fatal("no found seed replayed its violation")
}

func has(f *locktest.Failure, kind string) bool {
	for _, v := range f.Violations {
		if v.Kind == kind {
			return true
		}
	}
	return false
}

package locktest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/locktest"
	"github.com/quorumlock/quorumlock/redlock"
)

// seededBug does work twice on the schedules whose first replica draws 0
// of 8 from its Rand: a bug that follows the seed, whatever the speed.
func seededBug(ctx context.Context, r *locktest.Replica) {
	if r.ID == 0 && r.Rand.IntN(8) == 0 {
		r.Rec.Did(r.Name, "job")
		r.Rec.Did(r.Name, "job")
	}
}

// On real time (a Session for the TB) the schedules run many at once, and
// FirstFailure still returns the lowest failing seed: the one the bubbles
// of a *testing.T find, one schedule after the other.
func TestRealTimeFindsTheLowestFailingSeed(t *testing.T) {
	plan := locktest.Plan{Seed: 1, Schedules: 500, TTL: 50 * time.Millisecond, Length: 100 * time.Millisecond}
	var out strings.Builder
	s := locktest.NewSession(&out)
	defer s.Close()
	onReal := locktest.FirstFailure(s, plan, seededBug)
	onFake := locktest.FirstFailure(t, plan, seededBug)
	if onReal == nil || onFake == nil {
		t.Fatalf("found %v on real time and %v on fake time, want a failure on both", onReal, onFake)
	}
	if onReal.Seed != onFake.Seed || onReal.Violations[0].Kind != "done twice" {
		t.Fatalf("real time found seed %d (%v), fake time seed %d", onReal.Seed, onReal.Violations, onFake.Seed)
	}
	below := plan
	below.Schedules = int(onReal.Seed - plan.Seed)
	if f := locktest.FirstFailure(s, below, seededBug); f != nil {
		t.Fatalf("seed %d fails too, below the one found, %d", f.Seed, onReal.Seed)
	}
	if out.Len() > 0 || s.Failed() {
		t.Fatalf("the session failed: %s", out.String())
	}
}

// Explore on real time reports the failure to its TB, with the seed and
// what it can replay.
func TestRealTimeExploreReportsToItsTB(t *testing.T) {
	var out strings.Builder
	s := locktest.NewSession(&out)
	defer s.Close()
	locktest.Explore(s, locktest.Plan{Schedules: 100, TTL: 50 * time.Millisecond, Length: 100 * time.Millisecond}, seededBug)
	want := fmt.Sprintf("on real time, %s=", locktest.ReplayEnv)
	if !s.Failed() || !strings.Contains(out.String(), "done twice") || !strings.Contains(out.String(), want) {
		t.Fatalf("the session got:\n%s\nwant a done twice and %q", out.String(), want)
	}
}

// A plan that cannot run (a nil option) fails the TB once, before any
// schedule, instead of once per schedule or a panic.
func TestPlanThatCannotRunFailsOnce(t *testing.T) {
	plan := locktest.Plan{Schedules: 50, TTL: 50 * time.Millisecond, Length: 100 * time.Millisecond,
		Options: []redlock.Option{nil}}
	var out strings.Builder
	s := locktest.NewSession(&out)
	defer s.Close()
	if f := locktest.FirstFailure(s, plan, seededBug); f != nil {
		t.Fatalf("found %v", f)
	}
	if n := strings.Count(out.String(), "FAIL"); n != 1 || !strings.Contains(out.String(), "nil option") {
		t.Fatalf("the session got %d failures:\n%s\nwant one, about the nil option", n, out.String())
	}
}

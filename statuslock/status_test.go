package statuslock_test

import (
	"testing"

	"github.com/quorumlock/quorumlock/statuslock"
)

func TestStatus(t *testing.T) {
	want := []string{"IDLE", "DEPLOYING", "RUNNING", "STOPPED", "FAILED", "CRASHING"}
	got := statuslock.Statuses()
	if len(got) != len(want) {
		t.Fatalf("Statuses() = %v", got)
	}
	for i, s := range got {
		if !s.Valid() || s.String() != want[i] {
			t.Errorf("status %d: %q valid=%v", i, s, s.Valid())
		}
	}
	for _, s := range []statuslock.Status{"", "running", "BOGUS"} {
		if s.Valid() {
			t.Errorf("%q is valid", s)
		}
	}
	for _, tc := range []struct {
		from, to statuslock.Status
		ok       bool
	}{
		{statuslock.StatusIdle, statuslock.StatusDeploying, true},
		{statuslock.StatusDeploying, statuslock.StatusRunning, true},
		{statuslock.StatusDeploying, statuslock.StatusFailed, true},
		{statuslock.StatusRunning, statuslock.StatusRunning, true},
		{statuslock.StatusIdle, statuslock.StatusRunning, false},
		{statuslock.StatusFailed, statuslock.StatusRunning, false},
		{statuslock.StatusRunning, "BOGUS", false},
	} {
		if got := tc.from.CanTransitionTo(tc.to); got != tc.ok {
			t.Errorf("%s -> %s = %v, want %v", tc.from, tc.to, got, tc.ok)
		}
	}
}

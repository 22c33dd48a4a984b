package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/examples/internal/seed"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/statuslock"
)

// API, worker and reconciler on 5 real nodes write 10 services' statuses
// into a real PostgreSQL: the final statuses are what the containers call for
// (the crashed one CRASHING, the failed deployments and the paused worker's
// service FAILED, the others RUNNING), and the paused worker's late RUNNING
// is refused by the database.
func TestFinalStatusesAndLateWriteRefused(t *testing.T) {
	env := seed.StartT(t, 5, true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard
	defer cancel()
	cfg := config{Services: 10, Paused: "svc-03", Crashing: "svc-07", PauseTTL: time.Second}
	out, err := run(ctx, env.DB, func(owner string) (*redlock.Client, error) {
		return redlock.New(env.Nodes(), redlock.WithOwner(owner))
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(out.summary(cfg))
	if !errors.Is(out.LateRunning, statuslock.ErrStaleFence) {
		t.Fatalf("late RUNNING: %v, want ErrStaleFence", out.LateRunning)
	}
	want := map[string]statuslock.Status{
		"svc-01": "RUNNING", "svc-02": "RUNNING", "svc-03": "FAILED", "svc-04": "RUNNING", "svc-05": "FAILED",
		"svc-06": "RUNNING", "svc-07": "CRASHING", "svc-08": "RUNNING", "svc-09": "RUNNING", "svc-10": "FAILED",
	}
	for svc, s := range want {
		if out.Final[svc] != s {
			t.Errorf("%s: %s, want %s", svc, out.Final[svc], s)
		}
	}
	if len(out.Errors) != 0 || len(out.Wrong) != 0 {
		t.Fatalf("errors %v, wrong %v", out.Errors, out.Wrong)
	}
}

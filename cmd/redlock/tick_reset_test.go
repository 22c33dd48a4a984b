package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// tick reset forgets a tick's records, after confirmation, so that the next
// replica that asks runs it; it refuses while the tick runs.
func TestTickReset(t *testing.T) {
	c := redistest.StartT(t, 3)
	file := filepath.Join(t.TempDir(), "runs")
	job := append([]string{"exec", "--tick", "t1", "report"}, appendJob(file)...)
	if r := runBin(t, c.Addrs(), job...); r.code != 0 {
		t.Fatalf("first run: exit %d", r.code)
	}
	if r := runBin(t, c.Addrs(), job...); r.code != exitConflict {
		t.Fatalf("second run: exit %d, want %d (already ran)", r.code, exitConflict)
	}
	r := runBin(t, c.Addrs(), "tick", "reset", "report", "t1")
	if r.code != exitUsage {
		t.Errorf("no terminal, no --yes: exit %d, want %d", r.code, exitUsage)
	}
	oneLine(t, r.stderr, "refusing to reset a tick without confirmation")
	r = runBin(t, c.Addrs(), "tick", "reset", "--yes", "report", "t1")
	if r.code != 0 || !strings.Contains(r.stdout, "job report tick t1: done by ") || !strings.Contains(r.stdout, "reset job report tick t1: the next replica that asks runs it") {
		t.Errorf("reset: exit %d, stdout %q", r.code, r.stdout)
	}
	if r := runBin(t, c.Addrs(), job...); r.code != 0 || lines(t, file) != 2 {
		t.Errorf("after reset: exit %d, %d runs; want 0 and 2", r.code, lines(t, file))
	}

	r = runBin(t, c.Addrs(), "tick", "reset", "--yes", "report", "never")
	if r.code != exitConflict {
		t.Errorf("no records: exit %d, want %d", r.code, exitConflict)
	}
	oneLine(t, r.stderr, "job report tick never has no record: nothing to reset")

	client := lockClient(t, c)
	hold(t, client, "tick:report@t2", time.Minute) // a run in progress
	r = runBin(t, c.Addrs(), "tick", "reset", "--yes", "report", "t2")
	if r.code != exitConflict {
		t.Errorf("running: exit %d, want %d", r.code, exitConflict)
	}
	oneLine(t, r.stderr, "job report tick t2 is running")

	for _, args := range [][]string{{"tick"}, {"tick", "reset", "report"}, {"tick", "reset", "--yes", "a b", "t"}, {"tick", "rerun", "report", "t1"}} {
		if r := runBin(t, c.Addrs(), args...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, r.code, exitUsage)
		}
	}
}

// An at-most-once tick whose runner died is "claimed, not finished" and
// never runs again by itself; tick reset lets it run.
func TestTickResetUnfinished(t *testing.T) {
	c := redistest.StartT(t, 3)
	file := filepath.Join(t.TempDir(), "runs")
	client := lockClient(t, c)
	ctx := redlock.ContextWithOwner(t.Context(), `{"r":"replica-z/77/exec report","f":5}`)
	if _, err := client.Acquire(ctx, "tick:report@t3#claimed", time.Minute); err != nil { // what a runner that died leaves
		t.Fatal(err)
	}
	job := append([]string{"exec", "--tick", "t3", "report"}, appendJob(file)...)
	r := runBin(t, c.Addrs(), job...)
	if r.code != exitConflict || !strings.Contains(r.stderr, "claimed, not finished") {
		t.Fatalf("unfinished tick: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runBin(t, c.Addrs(), "tick", "reset", "--yes", "report", "t3")
	if r.code != 0 || !strings.Contains(r.stdout, "job report tick t3: claimed by replica-z/77/exec report, fence 5") {
		t.Errorf("reset: exit %d, stdout %q", r.code, r.stdout)
	}
	if r := runBin(t, c.Addrs(), job...); r.code != 0 || lines(t, file) != 1 {
		t.Errorf("after reset: exit %d, %d runs; want 0 and 1", r.code, lines(t, file))
	}
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// appendJob is the instant job of the once-per tests: one line per run.
func appendJob(file string) []string { return []string{"--", "sh", "-c", "echo x >> " + file} }

func lines(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// onceRounds runs rounds of three `exec --once-per 1h` processes on fresh
// keys, started by start, and checks that the job ran once per round and
// that the others said why.
func onceRounds(t *testing.T, start func(args []string) []result) {
	rounds := 50
	if testing.Short() {
		rounds = 10
	}
	file := filepath.Join(t.TempDir(), "runs")
	for k := range rounds {
		awayFromHalfHour()
		args := append([]string{"exec", "--once-per", "1h", fmt.Sprintf("job-%d", k)}, appendJob(file)...)
		res := start(args)
		ran := 0
		for _, r := range res {
			switch {
			case r.code == 0:
				ran++
			case r.code == exitConflict && strings.Contains(r.stderr, "tick ") && (strings.Contains(r.stderr, "already ran") || strings.Contains(r.stderr, "running elsewhere")):
			default:
				t.Fatalf("round %d: exit %d, stderr %q", k, r.code, r.stderr)
			}
		}
		if got := lines(t, file); got != k+1 || ran != 1 {
			t.Fatalf("round %d: the file has %d lines after %d rounds; %d processes say they ran", k, got, k+1, ran)
		}
	}
}

// TestExecOncePerTickTogether: three replicas start together; the job runs
// once per round.
func TestExecOncePerTickTogether(t *testing.T) {
	c := redistest.StartT(t, 3)
	onceRounds(t, func(args []string) []result {
		res := make([]result, 3)
		var wg sync.WaitGroup
		for i := range res {
			wg.Go(func() { res[i] = runBin(t, c.Addrs(), args...) })
		}
		wg.Wait()
		return res
	})
}

// TestExecOncePerTickLateReplica: the third replica starts only after the
// first has exited; the tick's record turns it away.
func TestExecOncePerTickLateReplica(t *testing.T) {
	c := redistest.StartT(t, 3)
	onceRounds(t, func(args []string) []result {
		res := make([]result, 3)
		var wg sync.WaitGroup
		wg.Go(func() { res[1] = runBin(t, c.Addrs(), args...) })
		res[0] = runBin(t, c.Addrs(), args...)
		res[2] = runBin(t, c.Addrs(), args...)
		wg.Wait()
		return res
	})
}

// TestExecNamedTick: --tick names the tick; the second run of it exits 1
// with a line naming the tick, the runner and its outcome; another tick runs.
func TestExecNamedTick(t *testing.T) {
	c := redistest.StartT(t, 3)
	file := filepath.Join(t.TempDir(), "runs")
	job := append([]string{"exec", "--tick", "2026-01-02T03:04", "--owner", "replica-a", "report"}, appendJob(file)...)
	if r := runBin(t, c.Addrs(), job...); r.code != 0 {
		t.Fatalf("first run: exit %d", r.code)
	}
	r := runBin(t, c.Addrs(), job...)
	if r.code != exitConflict || !strings.Contains(r.stderr, "tick 2026-01-02T03:04: already ran; by replica-a") || !strings.Contains(r.stderr, "outcome ok") {
		t.Fatalf("second run: exit %d, stderr %q", r.code, r.stderr)
	}
	job[2] = "2026-01-02T03:05"
	if r := runBin(t, c.Addrs(), job...); r.code != 0 || lines(t, file) != 2 {
		t.Fatalf("the next tick: exit %d, %d runs", r.code, lines(t, file))
	}
}

// TestExecTickBadUsage: bad tick flags exit 2 and run nothing.
func TestExecTickBadUsage(t *testing.T) {
	c := redistest.StartT(t, 3)
	file := filepath.Join(t.TempDir(), "runs")
	for _, flags := range [][]string{
		{"--once-per", "0"}, {"--once-per", "-5s"}, {"--tick", "a b"}, {"--tick", "{x}"},
		{"--once-per", "1h", "--tick", "t"}, {"--once-per", "1h", "-w", "5"}, {"--once-per", "1h", "--min-hold", "1m"},
		{"--at-least-once"}, {"--min-hold", "-1s"}, {"--once-per", "1h", "--retention", "1m"},
	} {
		args := append(append([]string{"exec"}, flags...), "job")
		if r := runBin(t, c.Addrs(), append(args, appendJob(file)...)...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d", flags, r.code, exitUsage)
		}
	}
	if n := lines(t, file); n != 0 {
		t.Fatalf("bad usage ran the job %d times", n)
	}
}

// TestExecMinHold: with --min-hold the lock stays after CMD exits, and a
// replica that comes next finds it held.
func TestExecMinHold(t *testing.T) {
	c := redistest.StartT(t, 3)
	if r := runBin(t, c.Addrs(), "exec", "--min-hold", "10m", "job:held", "--", "true"); r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	if r := runBin(t, c.Addrs(), "exec", "-n", "job:held", "--", "true"); r.code != exitConflict {
		t.Fatalf("the next replica during the hold: exit %d, want %d", r.code, exitConflict)
	}
}

// awayFromHalfHour waits while the clock is within a minute of a half
// hour, where `--once-per 1h` of processes started a moment apart could
// round to two different hours.
func awayFromHalfHour() {
	for {
		off := time.Now().UTC().Sub(time.Now().UTC().Truncate(time.Hour)) - 30*time.Minute
		if off < -time.Minute || off > time.Minute {
			return
		}
		time.Sleep(time.Minute + time.Second - off)
	}
}

// TestLsAndInspectShowTickRecords: after a tick ran, ls lists its records
// and inspect describes them: job, tick, state, runner, fence, outcome.
func TestLsAndInspectShowTickRecords(t *testing.T) {
	c := redistest.StartT(t, 3)
	if r := runBin(t, c.Addrs(), "exec", "--tick", "t1", "--owner", "replica-a", "report", "--", "sh", "-c", "exit 3"); r.code != 3 {
		t.Fatalf("exit %d, want the command's 3", r.code)
	}
	r := runBin(t, c.Addrs(), "ls", "tick:*")
	if r.code != 0 || !strings.Contains(r.stdout, "job report tick t1: claimed by replica-a") || !strings.Contains(r.stdout, "job report tick t1: done by replica-a") || !strings.Contains(r.stdout, "outcome exit status 3") {
		t.Fatalf("ls: exit %d, stdout %q", r.code, r.stdout)
	}
	r = runBin(t, c.Addrs(), "inspect", "tick:report@t1#done")
	if r.code != 0 || !strings.Contains(r.stdout, "job report tick t1: done by replica-a, fence ") {
		t.Fatalf("inspect: exit %d, stdout %q", r.code, r.stdout)
	}
}

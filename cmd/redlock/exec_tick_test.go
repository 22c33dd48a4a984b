package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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

// TestLsAndInspectShowTickRecords: after a tick ran, ls leaves its keys
// out of the locks; ls --ticks (or a "tick:" pattern) shows one row per
// tick, and inspect shows a record's runner in words, not its encoding.
func TestLsAndInspectShowTickRecords(t *testing.T) {
	c := redistest.StartT(t, 3)
	if r := runBin(t, c.Addrs(), "exec", "--tick", "t1", "--owner", "replica-a", "report", "--", "sh", "-c", "exit 3"); r.code != 3 {
		t.Fatalf("exit %d, want the command's 3", r.code)
	}
	hold(t, lockClient(t, c), "deploy:billing", time.Minute)
	r := runBin(t, c.Addrs(), "ls")
	if r.code != 0 || !strings.Contains(r.stdout, "deploy:billing") || strings.Contains(r.stdout, "tick:") || strings.Contains(r.stdout, `"r":`) ||
		!strings.Contains(r.stdout, "(2 records of ticks not shown: ls --ticks lists them)") {
		t.Errorf("ls: exit %d, stdout %q; want the lock, no tick keys, and a line saying they are left out", r.code, r.stdout)
	}
	for _, args := range [][]string{{"ls", "--ticks"}, {"ls", "tick:*"}} {
		r := runBin(t, c.Addrs(), args...)
		row := rowOf(r.stdout, "report")
		if r.code != 0 || !strings.Contains(r.stdout, "JOB     TICK  STATE") || !strings.Contains(row, "t1    done   replica-a") ||
			!strings.Contains(row, `"exit status 3"`) || strings.Contains(r.stdout, `"r":`) {
			t.Errorf("%v: exit %d, tick row %q, stdout %q", args, r.code, row, r.stdout)
		}
	}
	r = runBin(t, c.Addrs(), "ls", "-o", "json", "--ticks")
	if r.code != 0 || !strings.Contains(r.stdout, `"tick":{"job":"report","tick":"t1","kind":"done","runner":"replica-a","fence":`) ||
		!strings.Contains(r.stdout, `"outcome":"exit status 3"`) {
		t.Errorf("ls -o json --ticks: exit %d, stdout %q", r.code, r.stdout)
	}
	r = runBin(t, c.Addrs(), "inspect", "tick:report@t1#done")
	if r.code != 0 || !strings.Contains(r.stdout, "job report tick t1: done by replica-a, fence ") ||
		!regexp.MustCompile(`(?m)^owner +replica-a$`).MatchString(r.stdout) || strings.Contains(r.stdout, `"r":`) {
		t.Errorf("inspect: exit %d, stdout %q; want owner replica-a, not its record's JSON", r.code, r.stdout)
	}
}

// --scheduled-at names the tick by when the scheduler fired: a replica
// started late (01:43 for the 01:00 run of an hourly job) still claims
// 01:00, not the 02:00 tick that its clock is nearest to.
func TestExecScheduledAt(t *testing.T) {
	c := redistest.StartT(t, 3)
	file := filepath.Join(t.TempDir(), "runs")
	run := func(at string) result {
		return runBin(t, c.Addrs(), append([]string{"exec", "--once-per", "1h", "--scheduled-at", at, "report"}, appendJob(file)...)...)
	}
	if r := run("2026-01-02T01:00:02Z"); r.code != 0 {
		t.Fatalf("on time: exit %d", r.code)
	}
	r := run("2026-01-02T01:00:00Z")
	if r.code != exitConflict || !strings.Contains(r.stderr, "tick 2026-01-02T01:00:00Z: already ran") {
		t.Errorf("the same tick again: exit %d, stderr %q; want %d, already ran", r.code, r.stderr, exitConflict)
	}
	if r := run("1767319380"); r.code != 0 { // 2026-01-02T02:03:00Z in Unix seconds: the 02:00 tick, not yet run
		t.Errorf("Unix seconds: exit %d, want 0", r.code)
	}
	if got := lines(t, file); got != 2 {
		t.Errorf("%d runs, want 2 (01:00 once, 02:00 once)", got)
	}
	for _, args := range [][]string{
		{"exec", "--scheduled-at", "2026-01-02T01:00:00Z", "report", "--", "true"},
		{"exec", "--tick", "t", "--scheduled-at", "2026-01-02T01:00:00Z", "report", "--", "true"},
		{"exec", "--once-per", "1h", "--scheduled-at", "yesterday", "report", "--", "true"},
	} {
		r := runBin(t, c.Addrs(), args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--scheduled-at") {
			t.Errorf("%v: exit %d, stderr %q; want %d naming --scheduled-at", args, r.code, r.stderr, exitUsage)
		}
	}
}

// The help says that a tick is the nearest boundary, so that a manual run
// uses up the next scheduled one.
func TestExecHelpSaysNearestTick(t *testing.T) {
	r := runBin(t, nil, "help", "exec")
	if r.code != 0 || !strings.Contains(r.stdout, "a run at 01:43 claims the\n                 02:00 tick") {
		t.Errorf("help exec: exit %d, lacks the 01:43 example:\n%s", r.code, r.stdout)
	}
}

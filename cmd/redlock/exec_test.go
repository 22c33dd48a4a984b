package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

func TestExecChildSeesKeyAndFence(t *testing.T) {
	c := redistest.StartT(t, 3)
	r := runBin(t, c.Addrs(), "exec", "job:env", "--", "sh", "-c", `echo "key=$REDLOCK_KEY fence=$REDLOCK_FENCE"`)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0", r.code)
	}
	var first, second uint64
	if _, err := fmt.Sscanf(strings.TrimSpace(r.stdout), "key=job:env fence=%d", &first); err != nil || first == 0 {
		t.Errorf("stdout = %q, want key=job:env fence=<n> (%v)", r.stdout, err)
	}
	// The next holder gets a larger fence, and the lock was released.
	r = runBin(t, c.Addrs(), "exec", "-n", "job:env", "sh", "-c", `echo "fence=$REDLOCK_FENCE"`)
	// Greater, not necessarily first+1: a node that missed the first
	// acquisition seeds its new counter from the clock, further up.
	if _, err := fmt.Sscanf(strings.TrimSpace(r.stdout), "fence=%d", &second); r.code != 0 || err != nil || second <= first {
		t.Errorf("second run: exit %d, stdout %q; want 0 and a fence above %d", r.code, r.stdout, first)
	}
}

func TestExecPassesChildExitCode(t *testing.T) {
	c := redistest.StartT(t, 3)
	for _, code := range []string{"0", "7", "42"} {
		r := runBin(t, c.Addrs(), "exec", "job:code", "--", "sh", "-c", "exit "+code)
		if got := r.code; got != atoi(t, code) {
			t.Errorf("child exit %s: redlock exit %d", code, got)
		}
	}
	r := runBin(t, c.Addrs(), "exec", "job:code", "--", "sh", "-c", "kill -KILL $$")
	if r.code != 128+9 {
		t.Errorf("child killed by SIGKILL: exit %d, want 137", r.code)
	}
}

func TestExecNonblockConflict(t *testing.T) {
	c := redistest.StartT(t, 3)
	hold(t, lockClient(t, c), "job:busy", 30*time.Second)
	marker := filepath.Join(t.TempDir(), "ran")
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"exec", "-n", "job:busy", "--", "touch", marker}, 1},
		{[]string{"exec", "-n", "-E", "7", "job:busy", "--", "touch", marker}, 7},
		{[]string{"exec", "job:busy", "-n", "-E", "9", "--", "touch", marker}, 9}, // flags after KEY
	} {
		r := runBin(t, c.Addrs(), tc.args...)
		if r.code != tc.want {
			t.Errorf("%v: exit %d, want %d", tc.args, r.code, tc.want)
		}
		oneLine(t, r.stderr, "held by another holder")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran although the lock was held elsewhere")
	}
}

func TestExecWaitTimeout(t *testing.T) {
	c := redistest.StartT(t, 3)
	hold(t, lockClient(t, c), "job:wait", 30*time.Second)
	r := runBin(t, c.Addrs(), "exec", "-w", "300ms", "job:wait", "--", "true")
	if r.code != exitConflict {
		t.Errorf("exit %d, want %d", r.code, exitConflict)
	}
	oneLine(t, r.stderr, "timed out after 300ms")
	if r.took > 25*time.Second { // the lock is held for 30 s: a hang guard, not a speed check
		t.Errorf("took %s to time out after 300ms", r.took)
	}
	r = runBin(t, c.Addrs(), "exec", "-w", "300ms", "-E", "75", "job:wait", "--", "true")
	if r.code != 75 {
		t.Errorf("with -E 75: exit %d", r.code)
	}
}

func TestExecWaitsForRelease(t *testing.T) {
	c := redistest.StartT(t, 3)
	l := hold(t, lockClient(t, c), "job:queue", 30*time.Second)
	go func() {
		time.Sleep(500 * time.Millisecond)
		_ = l.Release(context.Background())
	}()
	r := runBin(t, c.Addrs(), "exec", "-w", "20s", "job:queue", "--", "true")
	if r.code != 0 {
		t.Errorf("exit %d, want 0 once the holder released", r.code)
	}
}

// The lock is lost while the command runs (2 of 3 nodes die, or come back
// empty): the command gets SIGTERM and redlock exits 4, long before the
// command's 30 s. A 3 s TTL gives node timeouts (300 ms) a loaded machine meets.
func TestExecLockLostTerminatesChild(t *testing.T) {
	for _, how := range []string{"kill", "restart-empty"} {
		t.Run(how, func(t *testing.T) {
			c := redistest.StartT(t, 3)
			dir := t.TempDir()
			started, termed := filepath.Join(dir, "started"), filepath.Join(dir, "term")
			script := `trap 'echo TERM > "$2"; kill $! 2>/dev/null; exit 0' TERM; touch "$1"; sleep 30 & wait`
			done := make(chan result, 1)
			go func() {
				done <- runBin(t, c.Addrs(), "exec", "--ttl", "3s", "--grace", "3s", "job:lost", "--", "sh", "-c", script, "sh", started, termed)
			}()
			waitFile(t, started, 2*time.Minute) // hang guard
			for _, n := range c.Nodes()[:2] {
				var err error
				if how == "kill" {
					err = n.Kill()
				} else {
					err = n.Restart(t.Context())
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			r := <-done
			if r.code != exitLockLost {
				t.Errorf("exit %d, want %d (lock lost)", r.code, exitLockLost)
			}
			if r.took > 25*time.Second { // the child sleeps 30 s unless stopped
				t.Errorf("took %s: the child was not stopped on loss", r.took)
			}
			if b, err := os.ReadFile(termed); err != nil || !strings.Contains(string(b), "TERM") {
				t.Errorf("child did not get SIGTERM: %v %q", err, b)
			}
			oneLine(t, r.stderr, "lost while")
		})
	}
}

func TestExecCommandNotFound(t *testing.T) {
	c := redistest.StartT(t, 3)
	r := runBin(t, c.Addrs(), "exec", "job:nf", "--", "no-such-command-xyz")
	if r.code != exitNotFound {
		t.Errorf("exit %d, want 127", r.code)
	}
	oneLine(t, r.stderr, "no-such-command-xyz: command not found")
}

// 126: found but not executable, as shells report it; 127: not found.
func TestExecNotExecutable(t *testing.T) {
	c := redistest.StartT(t, 3)
	dir := t.TempDir()
	noPerm, badFormat := filepath.Join(dir, "no-perm"), filepath.Join(dir, "bad-format")
	if err := os.WriteFile(noPerm, []byte("#!/bin/sh\ntouch ran\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(badFormat, []byte("\x7fELF garbage"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd, msg string
		want     int
	}{
		{dir, "is a directory", exitCannotExec},
		{noPerm, "permission denied", exitCannotExec},
		{badFormat, "exec format error", exitCannotExec},
		{filepath.Join(dir, "missing"), "no such file or directory", exitNotFound},
		{"no-such-command-xyz", "command not found", exitNotFound},
	} {
		r := runBin(t, c.Addrs(), "exec", "job:noexec", "--", tc.cmd)
		if r.code != tc.want {
			t.Errorf("%s: exit %d, want %d", tc.cmd, r.code, tc.want)
		}
		oneLine(t, r.stderr, tc.msg)
	}
	// The lock was released each time: a later holder gets it at once.
	if r := runBin(t, c.Addrs(), "exec", "-n", "job:noexec", "--", "true"); r.code != 0 {
		t.Errorf("after the failed starts: exit %d, want 0 (lock released)", r.code)
	}
}

// -w 0 does not wait, as in flock(1): the lock is held for 10 minutes, far
// beyond runBin's hang guard, so a -w 0 that waited would fail the test.
func TestExecWaitZero(t *testing.T) {
	c := redistest.StartT(t, 3)
	hold(t, lockClient(t, c), "job:w0", 10*time.Minute)
	for _, w := range []string{"0", "0s"} {
		r := runBin(t, c.Addrs(), "exec", "-w", w, "job:w0", "--", "true")
		if r.code != exitConflict {
			t.Errorf("-w %s: exit %d, want %d", w, r.code, exitConflict)
		}
		oneLine(t, r.stderr, "held by another holder")
	}
}

func TestExecBadUsage(t *testing.T) {
	nodes := []string{"127.0.0.1:1"} // never dialled: usage is checked first
	for _, args := range [][]string{
		{"exec", "--bogus", "k", "--", "true"},
		{"exec", "-w", "soon", "k", "--", "true"},
		{"exec", "k"},
		{"exec", "--", "echo", "hi"},
		{"exec"},
		{"exec", "-n", "-w", "1s", "k", "--", "true"},
		{"exec", "-E", "300", "k", "--", "true"},
		{"exec", "--ttl", "0s", "k", "--", "true"},
		{"frobnicate"},
		{"ls", "a", "b"},
		{"demo", "--duration", "soon"},
		{"exec", "-w", "-1", "k", "--", "true"},
		{"ls", "-o", "yaml"},
		{"doctor", "extra"},
	} {
		r := runBin(t, nodes, args...)
		if r.code != exitUsage {
			t.Errorf("%v: exit %d, want 2", args, r.code)
		}
		oneLine(t, r.stderr, "redlock")
	}
	// A bad duration shows the fix.
	for _, flag := range []string{"-w", "--ttl", "--grace"} {
		r := runBin(t, nodes, "exec", flag, "5x", "k", "--", "true")
		if r.code != exitUsage {
			t.Errorf("%s 5x: exit %d, want 2", flag, r.code)
		}
		oneLine(t, r.stderr, "give seconds (30, 1.5) or a unit (500ms, 30s, 2m)")
	}
	r := runBin(t, nil, "exec", "k", "--", "true")
	if r.code != exitUsage {
		t.Errorf("no nodes: exit %d, want 2", r.code)
	}
	oneLine(t, r.stderr, "REDLOCK_NODES")
}

func TestExecNodesUnreachable(t *testing.T) {
	r := runBin(t, []string{freeAddr(t), freeAddr(t), freeAddr(t)}, "exec", "k", "--", "true")
	if r.code != exitUnreachable {
		t.Errorf("exit %d, want 3", r.code)
	}
	oneLine(t, r.stderr, "nodes reachable")
	r = runBin(t, []string{freeAddr(t), freeAddr(t), freeAddr(t)}, "ls")
	if r.code != exitUnreachable {
		t.Errorf("ls: exit %d, want 3", r.code)
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"exec", "-h"}, {"help", "ls"}, {"demo", "--help"}} {
		r := runBin(t, nil, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Usage") {
			t.Errorf("%v: exit %d, stdout %q", args, r.code, r.stdout)
		}
	}
}

// The help says what no -n and no -w means: waiting forever.
func TestExecHelpSaysDefaultWaitsForever(t *testing.T) {
	r := runBin(t, nil, "exec", "-h")
	if r.code != 0 || !strings.Contains(r.stdout, "Without -n or -w, exec waits for the lock as long as it takes (forever)") {
		t.Errorf("exec -h: exit %d, stdout lacks the default wait:\n%s", r.code, r.stdout)
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		r := runBin(t, nil, arg)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "redlock ") || strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stdout, " go1.") {
			t.Errorf("redlock %s: exit %d, stdout %q; want 0 and one line \"redlock VERSION ... goX\"", arg, r.code, r.stdout)
		}
	}
}

func waitFile(t *testing.T, path string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not created within %s", path, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// A password in a bad REDLOCK_NODES is not echoed, and CMD does not get
// REDLOCK_NODES (which may hold passwords).
func TestExecKeepsNodePasswordsSecret(t *testing.T) {
	r := runBin(t, []string{"redis://user:s3cret@127.0.0.1:bad"}, "exec", "k", "--", "true")
	if r.code != exitUsage || strings.Contains(r.stderr, "s3cret") {
		t.Errorf("bad node URL: exit %d, stderr %q; want %d without the password", r.code, r.stderr, exitUsage)
	}
	c := redistest.StartT(t, 1)
	r = runBin(t, c.Addrs(), "exec", "--single-node", "job:env-nodes", "--", "sh", "-c", `echo "nodes=${REDLOCK_NODES-unset}"`)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "nodes=unset" {
		t.Errorf("CMD's environment: exit %d, stdout %q; want REDLOCK_NODES unset", r.code, r.stdout)
	}
}

// --nodes-file keeps a password off the command line: the file's nodes
// (one per line, # comments) are used; it excludes --nodes, and that
// conflict does not echo a password either.
func TestNodesFile(t *testing.T) {
	c := redistest.StartT(t, 1)
	configSet(t, c.Clients()[0], "requirepass", "s3cret")
	file := filepath.Join(t.TempDir(), "nodes")
	content := "# the lock's nodes\n\nredis://:s3cret@" + c.Addrs()[0] + "\n"
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, nil, "exec", "--single-node", "--nodes-file", file, "-n", "job:file", "--", "true")
	if r.code != 0 {
		t.Errorf("exec --nodes-file: exit %d, want 0", r.code)
	}
	for _, args := range [][]string{
		{"ls", "--nodes-file", file, "--nodes", "redis://:s3cret@127.0.0.1:1"},
		{"ls", "--nodes", "redis://:s3cret@127.0.0.1:1", "--nodes-file", file},
		{"ls", "--nodes-file", filepath.Join(t.TempDir(), "missing")},
		{"ls", "--nodes-file", os.DevNull}, // lists no nodes
	} {
		r := runBin(t, nil, args...)
		if r.code != exitUsage || strings.Contains(r.stderr, "s3cret") {
			t.Errorf("%v: exit %d, stderr %q; want %d without the password", args, r.code, r.stderr, exitUsage)
		}
	}
}

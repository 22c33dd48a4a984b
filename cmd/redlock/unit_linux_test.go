package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// A job that ignores SIGTERM and starts a background child and a child in
// a session of its own (setsid): all of it must be gone once redlock is
// SIGKILLed, whatever stdin is. In the terminal case CMD shares redlock's
// process group; otherwise it has its own.
func TestExecKilledRedlockLeavesNoProcess(t *testing.T) {
	c := redistest.StartT(t, 3)
	for _, stdin := range []string{"devnull", "pipe", "pty"} {
		t.Run(stdin, func(t *testing.T) {
			dir := t.TempDir()
			ready := filepath.Join(dir, "ready")
			script := `trap "" TERM HUP INT; sleep 300 & setsid sh -c 'trap "" TERM HUP; sleep 300; :' & echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; wait`
			cmd := exec.Command(bin, "exec", "--ttl", "5s", "--grace", "1s", "job:killed-"+stdin, "--", "sh", "-c", script, "sh", ready)
			cmd.Env = append(withoutNodesEnv(), nodesEnv+"="+strings.Join(c.Addrs(), ","))
			setStdin(t, cmd, stdin)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			waitFile(t, ready, 2*time.Minute) // hang guard
			shPID := readPID(t, ready)

			// CMD has its own process group unless stdin is a terminal.
			ownGroup := procStat(t, shPID).pgid != procStat(t, cmd.Process.Pid).pgid
			if want := stdin != "pty"; ownGroup != want {
				t.Errorf("CMD in a process group of its own: %v, want %v", ownGroup, want)
			}

			tree := waitTree(t, cmd.Process.Pid, 5) // supervisor, sh, sleep, setsid sh, sleep
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			waitGone(t, tree, 2*time.Minute)
		})
	}
}

// On lock loss with stdin on /dev/null (systemd, containers), a child that
// CMD left in the background goes too, not only CMD.
func TestExecLockLostEndsBackgroundChild(t *testing.T) {
	c := redistest.StartT(t, 3)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	// The sleep's output goes elsewhere: it must not keep redlock's pipes open.
	script := `sleep 300 >/dev/null 2>&1 & echo $! > "$1.tmp"; mv "$1.tmp" "$1"; wait`
	done := make(chan result, 1)
	go func() {
		done <- runBin(t, c.Addrs(), "exec", "--ttl", "3s", "--grace", "1s", "job:lost-bg", "--", "sh", "-c", script, "sh", pidFile)
	}()
	waitFile(t, pidFile, 2*time.Minute)
	sleepProc := procStat(t, readPID(t, pidFile))
	for _, n := range c.Nodes()[:2] {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	if r := <-done; r.code != exitLockLost {
		t.Errorf("exit %d, want %d", r.code, exitLockLost)
	}
	// redlock waits for the whole unit: the sleep is gone on return.
	if alive(sleepProc) {
		t.Errorf("background child %d still running after redlock exited on loss", sleepProc.pid)
		_ = syscall.Kill(sleepProc.pid, syscall.SIGKILL)
	}
}

// When CMD exits, what it left running is ended before the lock is
// released.
func TestExecEndsLeftoversOnExit(t *testing.T) {
	c := redistest.StartT(t, 3)
	pidFile := filepath.Join(t.TempDir(), "pid")
	r := runBin(t, c.Addrs(), "exec", "--grace", "1s", "job:leftover", "--", "sh", "-c", `trap "" TERM; sleep 300 >/dev/null 2>&1 & echo $! > "$1"; exit 5`, "sh", pidFile)
	if r.code != 5 {
		t.Errorf("exit %d, want CMD's 5", r.code)
	}
	// The PID cannot have been reused: it was this test's grandchild moments ago.
	if p, ok := readProc(readPID(t, pidFile)); ok && p.state != "Z" {
		t.Errorf("leftover %d still running after redlock exited", p.pid)
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
	oneLine(t, r.stderr, "sent SIGKILL") // the leftover ignored SIGTERM
}

func setStdin(t *testing.T, cmd *exec.Cmd, mode string) {
	t.Helper()
	switch mode {
	case "devnull":
		cmd.Stdin = nil // os/exec opens /dev/null
	case "pipe":
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
		cmd.Stdin = r
	case "pty":
		master, slave := openPTY(t)
		t.Cleanup(func() { _ = master.Close(); _ = slave.Close() })
		cmd.Stdin = slave
	}
}

// openPTY opens a pseudo-terminal pair, no controlling terminal taken.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !isTTY(int(slave.Fd())) {
		t.Fatal("isTTY: a pseudo-terminal is not a terminal")
	}
	return master, slave
}

func TestIsTTY(t *testing.T) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	if isTTY(int(devnull.Fd())) {
		t.Error("/dev/null (a character device) taken for a terminal")
	}
	master, slave := openPTY(t) // checks the slave
	master.Close()
	slave.Close()
}

// proc identifies a process across PID reuse: PID and start time.
type proc struct {
	pid, pgid int
	start     string
	state     string
}

func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // state ppid pgrp ... starttime is field 22
	pgid, _ := strconv.Atoi(f[2])
	return proc{pid: pid, pgid: pgid, start: f[19], state: f[0]}, true
}

func procStat(t *testing.T, pid int) proc {
	t.Helper()
	p, ok := readProc(pid)
	if !ok {
		t.Fatalf("process %d not found", pid)
	}
	return p
}

// alive: the same process still exists and is not a zombie.
func alive(p proc) bool {
	q, ok := readProc(p.pid)
	return ok && q.start == p.start && q.state != "Z"
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitTree waits until root has at least n descendants and returns them.
func waitTree(t *testing.T, root, n int) []proc {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // hang guard
	for {
		var tree []proc
		for _, pid := range descendants(root) {
			if p, ok := readProc(pid); ok {
				tree = append(tree, p)
			}
		}
		if len(tree) >= n {
			return tree
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d processes below redlock, want %d", len(tree), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitGone(t *testing.T, tree []proc, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		var left []int
		for _, p := range tree {
			if alive(p) {
				left = append(left, p.pid)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("processes %v of CMD's tree still running %s after redlock was killed", left, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// SIGTERM sent to redlock reaches CMD (through the supervisor), and
// redlock exits with CMD's status.
func TestExecForwardsSignals(t *testing.T) {
	c := redistest.StartT(t, 1)
	dir := t.TempDir()
	started, got := filepath.Join(dir, "started"), filepath.Join(dir, "got")
	script := `trap 'echo TERM > "$2"; exit 7' TERM; touch "$1"; sleep 300 & wait`
	cmd := exec.Command(bin, "exec", "--single-node", "job:signal", "--", "sh", "-c", script, "sh", started, got)
	cmd.Env = append(withoutNodesEnv(), nodesEnv+"="+strings.Join(c.Addrs(), ","))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, started, 2*time.Minute)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Errorf("redlock: %v, want exit 7 (CMD's status)", err)
	}
	if b, err := os.ReadFile(got); err != nil || strings.TrimSpace(string(b)) != "TERM" {
		t.Errorf("CMD did not get SIGTERM: %v %q", err, b)
	}
}

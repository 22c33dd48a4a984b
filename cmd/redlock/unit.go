package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// CMD and every process it starts are one unit that redlock ends as a
// whole. redlock does not run CMD itself: it runs a copy of itself as the
// unit's supervisor ("redlock _unit", not for users), which runs CMD:
//
//   - On Linux the supervisor is a child subreaper (PR_SET_CHILD_SUBREAPER):
//     a process of the tree whose parent dies is reparented to it, not to
//     init, so neither a double fork nor setsid takes a process out of the
//     unit.
//   - CMD gets a process group of its own unless stdin is a terminal
//     (isTTY): a shell's job control must still reach an interactive
//     CMD.
//   - redlock talks to it over a pipe (fd 3): a signal number forwards that
//     signal to CMD (its group when it has one), endUnit ends the unit.
//     End of file means redlock is gone, even by SIGKILL, and nobody extends
//     the lock any more: the unit is ended too.
//   - Ending the unit: SIGTERM to CMD's group and to every descendant, then
//     SIGKILL to all of them after the grace period, until none is left.
//   - When CMD exits, what it left running is ended the same way, and the
//     supervisor exits with CMD's status (128+N for signal N).
const unitCmd = "_unit"

// On the control pipe, endUnit asks the supervisor to end the unit
// (SIGTERM, SIGKILL after the grace period), killUnit to SIGKILL it at once
// (its grace period already passed); any other byte is a signal to forward.
const (
	endUnit  byte = 0
	killUnit byte = 255 // above every signal number
)

// startUnit starts the supervisor running path with argv. The returned
// pipe is its control channel; closing it (or redlock dying) ends the unit.
func startUnit(path string, argv, env []string, grace time.Duration, group bool) (*exec.Cmd, *os.File, error) {
	self, err := selfExe()
	if err != nil {
		return nil, nil, err
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	defer ctlR.Close()
	args := append([]string{unitCmd, grace.String(), strconv.FormatBool(group), path}, argv...)
	cmd := exec.Command(self, args...)
	cmd.Args[0] = "redlock"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = env
	cmd.ExtraFiles = []*os.File{ctlR} // fd 3
	if err := cmd.Start(); err != nil {
		ctlW.Close()
		return nil, nil, err
	}
	return cmd, ctlW, nil
}

// runUnit is the supervisor: "_unit GRACE GROUP PATH ARGV0 [ARGS...]". It
// returns its exit code.
func runUnit(args []string) int {
	if len(args) < 4 {
		fmt.Fprintln(os.Stderr, "redlock _unit: internal command of redlock exec")
		return exitUsage
	}
	grace, err1 := time.ParseDuration(args[0])
	group, err2 := strconv.ParseBool(args[1])
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintln(os.Stderr, "redlock _unit:", err)
		return exitUsage
	}
	path, argv := args[2], args[3:]
	syscall.CloseOnExec(3) // the control pipe is not CMD's
	ctl := os.NewFile(3, "redlock-control")
	// Caught, not ignored: CMD must start with default dispositions. The
	// signals meant for CMD come through the control pipe.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	if err := becomeSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, "redlock exec: cannot contain CMD's processes:", err)
		return exitCannotExec
	}

	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: group}
	if err := cmd.Start(); err != nil {
		code := exitCannotExec // found, but the kernel would not run it
		if errors.Is(err, os.ErrNotExist) {
			code = exitNotFound
		}
		fmt.Fprintf(os.Stderr, "redlock exec: %s: %v\n", argv[0], unwrapExecErr(err))
		return code
	}
	u := &unit{pid: cmd.Process.Pid, group: group, name: argv[0], exited: make(chan int, 1), gone: make(chan struct{})}
	go u.reap()

	ctlc := make(chan byte)
	go func() {
		b := []byte{endUnit}
		for {
			if _, err := ctl.Read(b); err != nil {
				close(ctlc) // redlock is gone
				return
			}
			ctlc <- b[0]
		}
	}()
	for {
		select {
		case b, ok := <-ctlc:
			if u.obey(b, ok, grace) {
				return <-u.exited
			}
		case code := <-u.exited:
			u.end(grace) // what CMD left running
			return code
		}
	}
}

// obey carries out one control byte from redlock (ok false: the pipe is
// closed, redlock is gone). It reports whether the unit was ended.
func (u *unit) obey(b byte, ok bool, grace time.Duration) bool {
	switch {
	case ok && b == killUnit:
		u.kill(fmt.Sprintf("%s after the signal", grace))
	case ok && b != endUnit:
		u.forward(syscall.Signal(b))
		return false
	default:
		u.end(grace)
	}
	return true
}

// unit is CMD's process tree, seen from its supervisor.
type unit struct {
	pid    int // CMD; its process group's ID when group
	group  bool
	name   string
	exited chan int      // CMD's exit code, once
	gone   chan struct{} // closed when the supervisor has no child left
}

// reap waits for every child: CMD, and on Linux the orphans reparented to
// the supervisor. With no child left the unit is gone.
func (u *unit) reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
		case err != nil: // ECHILD
			close(u.gone)
			return
		case pid == u.pid:
			code := ws.ExitStatus()
			if ws.Signaled() {
				code = exitSignalBase + int(ws.Signal())
			}
			u.exited <- code
		}
	}
}

// forward passes a signal from redlock on to CMD, or to its group.
func (u *unit) forward(s syscall.Signal) {
	if u.group && syscall.Kill(-u.pid, s) == nil {
		return
	}
	_ = syscall.Kill(u.pid, s)
}

// signalAll sends s to CMD's group and to every descendant of the
// supervisor.
func (u *unit) signalAll(s syscall.Signal) {
	if u.group {
		_ = syscall.Kill(-u.pid, s)
	}
	_ = syscall.Kill(u.pid, s) // a zombie until reaped: harmless
	for _, pid := range descendants(os.Getpid()) {
		_ = syscall.Kill(pid, s)
	}
}

// alive reports whether a process of the unit may still run.
func (u *unit) alive() bool {
	select {
	case <-u.gone:
		// Without a subreaper, orphans left the supervisor: ask the group.
		return u.group && !subreaper && syscall.Kill(-u.pid, 0) == nil
	default:
		return true
	}
}

// end sends SIGTERM to the whole unit, SIGKILL after grace, and returns
// once no process of it is left.
func (u *unit) end(grace time.Duration) {
	if !u.alive() {
		return
	}
	u.signalAll(syscall.SIGTERM)
	if u.waitGone(grace) {
		return
	}
	u.kill(fmt.Sprintf("%s after SIGTERM", grace))
}

// kill sends SIGKILL to the whole unit until no process of it is left;
// since says how long it had to end by itself.
func (u *unit) kill(since string) {
	if !u.alive() {
		return
	}
	fmt.Fprintf(os.Stderr, "redlock exec: %s (or what it started) still running %s, sent SIGKILL\n", u.name, since)
	for !u.waitGone(100 * time.Millisecond) { // again: a fork may race with the kill
		u.signalAll(syscall.SIGKILL)
	}
}

// waitGone waits up to d for the unit to be gone.
func (u *unit) waitGone(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for u.alive() {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-u.gone:
		case <-time.After(20 * time.Millisecond):
		}
	}
	return true
}

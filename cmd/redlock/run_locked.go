package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

// runLocked runs CMD while lock is held and kept alive, and releases the
// lock when CMD exits. On lock loss CMD gets SIGTERM, then SIGKILL after
// the grace period, and the result is exitLockLost.
func runLocked(ctx context.Context, lock *redlock.Lock, a *execArgs, path string, sigs <-chan os.Signal, stderr io.Writer) error {
	cmd := exec.Command(path, a.argv[1:]...)
	cmd.Args[0] = a.argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = childEnv(lock)
	group := ownGroup()
	cmd.SysProcAttr = childSysProcAttr(group)

	// The client's watchdog extends the lock; Done closes when it cannot
	// (a safety margin before the validity ends) or the nodes say it is no
	// longer ours. Nothing else closes it before Release below.
	stopKeep := lock.KeepAlive()
	lost := lock.Done()
	if err := cmd.Start(); err != nil {
		stopKeep()
		releaseQuietly(lock)
		code := exitNotFound
		if errors.Is(err, os.ErrPermission) {
			code = exitCannotExec
		}
		return exitf(code, "redlock exec: %s: %v", a.argv[0], unwrapExecErr(err))
	}
	proc := child{proc: cmd.Process, group: group}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var (
		lostErr error
		kill    <-chan time.Time
	)
	for {
		select {
		case s := <-sigs:
			proc.signal(s)
			continue
		case <-lost:
			lost = nil
			lostErr = lock.Err()
			proc.signal(syscall.SIGTERM)
			t := time.NewTimer(a.grace)
			defer t.Stop()
			kill = t.C
			continue
		case <-kill:
			kill = nil
			proc.signal(syscall.SIGKILL)
			fmt.Fprintf(stderr, "redlock exec: %s still running %s after SIGTERM, sent SIGKILL\n", a.argv[0], a.grace)
			continue
		case <-done:
		}
		break
	}
	stopKeep()
	if lostErr != nil {
		return exitf(exitLockLost, "redlock exec: lock %q lost while %s ran, sent SIGTERM: %v", a.key, describe(a.argv), lostErr)
	}
	code := childCode(cmd.ProcessState)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	switch err := lock.Release(rctx); {
	case errors.Is(err, redlock.ErrLockLost):
		// The lock ended before CMD did: CMD may not have run alone.
		return exitf(exitLockLost, "redlock exec: lock %q was lost before %s exited (status %d): %v", a.key, describe(a.argv), code, err)
	case err != nil:
		fmt.Fprintf(stderr, "redlock exec: release %q: %v (the lock expires with its TTL)\n", a.key, err)
	}
	return &exitError{code: code}
}

// childCode is the exit code for how CMD ended: its status, or 128+N when
// killed by signal N.
func childCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitSignalBase + int(ws.Signal())
	}
	return ps.ExitCode()
}

const releaseTimeout = 5 * time.Second

func releaseQuietly(l *redlock.Lock) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	_ = l.Release(ctx)
}

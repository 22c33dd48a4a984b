package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

// runLocked runs CMD as a unit (unit.go) while lock is held and kept
// alive, and releases the lock once the unit is gone. On lock loss the unit
// gets SIGTERM, then SIGKILL after the grace period, and the result is
// exitLockLost.
func runLocked(ctx context.Context, lock *redlock.Lock, a *execArgs, path string, sigs <-chan os.Signal, stderr io.Writer) error {
	// The client's watchdog extends the lock; Done closes when it cannot
	// (a safety margin before the validity ends) or the nodes say it is no
	// longer ours. Nothing else closes it before Release below.
	stopKeep := lock.KeepAlive()
	lost := lock.Done()
	group := !isTTY(int(os.Stdin.Fd()))
	sup, ctl, err := startUnit(path, a.argv, childEnv(lock), a.grace, group)
	if err != nil {
		stopKeep()
		releaseQuietly(lock)
		return exitf(exitCannotExec, "redlock exec: cannot start %s: %v", a.argv[0], err)
	}
	defer ctl.Close()
	done := make(chan error, 1)
	go func() { done <- sup.Wait() }()

	var lostErr error
	for {
		select {
		case s := <-sigs:
			if ss, ok := s.(syscall.Signal); ok && ss > 0 && ss < 256 {
				_, _ = ctl.Write([]byte{byte(ss)})
			}
			continue
		case <-lost:
			lost = nil
			lostErr = lock.Err()
			_, _ = ctl.Write([]byte{endUnit}) // SIGTERM, SIGKILL after --grace
			continue
		case <-done:
		}
		break
	}
	stopKeep()
	if lostErr != nil {
		return exitf(exitLockLost, "redlock exec: lock %q lost while %s ran, sent SIGTERM: %v", a.key, describe(a.argv), lostErr)
	}
	code := childCode(sup.ProcessState)
	if a.tick.on() { // tick.Run records the finish, then releases the claim
		return &exitError{code: code}
	}
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

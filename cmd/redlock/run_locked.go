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

	var stop stopRequest
	lostErr := superviseUnit(lock, ctl, done, sigs, a.grace, &stop)
	stop.cancel()
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
	if stop.killed {
		return signalExit(stop.signal, "redlock exec: %s: %s still ran %s later, killed it; lock %q released", stop.signal, describe(a.argv), a.grace, a.key)
	}
	return &exitError{code: code}
}

// superviseUnit waits for the unit to exit (done), forwarding signals,
// killing it once stop's grace is over, and ending it when the lock is
// lost. It returns the lock's error when it was lost.
func superviseUnit(lock *redlock.Lock, ctl io.Writer, done <-chan error, sigs <-chan os.Signal, grace time.Duration, stop *stopRequest) error {
	lost := lock.Done()
	var lostErr error
	for {
		select {
		case s := <-sigs:
			forwardSignal(ctl, s)
			stop.start(s, grace)
			continue
		case <-stop.deadline:
			stop.deadline, stop.killed = nil, true
			_, _ = ctl.Write([]byte{killUnit})
			continue
		case <-lost:
			lost = nil
			lostErr = lock.Err()
			_, _ = ctl.Write([]byte{endUnit}) // SIGTERM, SIGKILL after --grace
			continue
		case <-done:
		}
		return lostErr
	}
}

// stopRequest is a SIGINT or SIGTERM to redlock while CMD runs: redlock
// must end, so CMD gets the signal and, when the grace period passes first,
// its unit gets SIGKILL. redlock then exits 128+N, as if killed by the
// signal; a CMD that ended within the grace period has its own status
// passed through, as it chose it.
type stopRequest struct {
	signal   os.Signal
	deadline <-chan time.Time // fires once the grace period is over
	timer    *time.Timer
	killed   bool // the grace period passed: the unit got SIGKILL
}

// start records the first stopping signal and starts the grace period.
// SIGHUP is only passed on: a daemon may take it as "reload".
func (r *stopRequest) start(s os.Signal, grace time.Duration) {
	if r.signal != nil || (s != syscall.SIGINT && s != syscall.SIGTERM) {
		return
	}
	r.signal = s
	r.timer = time.NewTimer(grace)
	r.deadline = r.timer.C
}

func (r *stopRequest) cancel() {
	if r.timer != nil {
		r.timer.Stop()
	}
}

// forwardSignal asks the supervisor to pass s on to CMD.
func forwardSignal(ctl io.Writer, s os.Signal) {
	if ss, ok := s.(syscall.Signal); ok && ss > 0 && byte(ss) != killUnit && ss < 256 {
		_, _ = ctl.Write([]byte{byte(ss)})
	}
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

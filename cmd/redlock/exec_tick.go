package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/tick"
)

// tickArgs are exec's flags for running CMD once per tick (package tick)
// and for holding a plain lock at least a while (Lock.HoldAtLeast).
type tickArgs struct {
	oncePer     time.Duration // --once-per: the tick is now rounded to the nearest multiple
	oncePerSet  *seconds      // to tell --once-per 0 from no --once-per
	label       string        // --tick: the caller names the tick
	atLeastOnce bool          // --at-least-once: rerun a tick whose runner vanished
	retention   time.Duration // --retention: how long the tick's records stay
	minHold     time.Duration // --min-hold: a plain lock stays at least this long
	scheduledAt string        // --scheduled-at: the time the scheduler fired, to name the tick by
	at          time.Time     // scheduledAt parsed
}

func (t tickArgs) on() bool { return t.oncePer != 0 || t.label != "" }

func tickFlags(fs *flag.FlagSet, a *execArgs) {
	a.tick.oncePerSet = durationFlag(fs, &a.tick.oncePer, "once-per", 0, "run CMD once per tick: now rounded to the nearest multiple of this (UTC)")
	fs.StringVar(&a.tick.label, "tick", "", "run CMD once for this tick, named by the caller")
	fs.BoolVar(&a.tick.atLeastOnce, "at-least-once", false, "with --once-per/--tick: rerun a tick whose runner died")
	durationFlag(fs, &a.tick.retention, "retention", 0, "with --once-per/--tick: how long the tick's record stays")
	durationFlag(fs, &a.tick.minHold, "min-hold", 0, "keep the lock at least this long after it was taken")
	fs.StringVar(&a.tick.scheduledAt, "scheduled-at", "", "with --once-per: name the tick by this time (when the scheduler fired) instead of now")
}

// parseScheduledAt reads --scheduled-at: RFC 3339 (a Kubernetes CronJob's
// scheduled timestamp) or seconds since the Unix epoch (date +%s).
func parseScheduledAt(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 && n < 1<<40 {
		return time.Unix(n, 0), nil
	}
	return time.Time{}, fmt.Errorf("--scheduled-at %q: want RFC 3339 (2026-01-02T15:04:05Z) or seconds since the Unix epoch", s)
}

// checkTick validates the tick flags against the others.
func checkTick(a *execArgs) error {
	t := a.tick
	switch {
	case t.oncePer < 0 || (t.oncePerSet != nil && t.oncePerSet.set && t.oncePer == 0):
		return usageErr("exec", "--once-per %s is not positive", t.oncePer)
	case t.oncePer > 0 && t.label != "":
		return usageErr("exec", "--once-per and --tick exclude each other")
	case t.minHold < 0:
		return usageErr("exec", "--min-hold %s is negative", t.minHold)
	case t.scheduledAt != "" && t.oncePer <= 0:
		return usageErr("exec", "--scheduled-at needs --once-per (with --tick, name the tick yourself)")
	case !t.on() && (t.atLeastOnce || t.retention != 0):
		return usageErr("exec", "--at-least-once and --retention need --once-per or --tick")
	case !t.on():
		return nil
	case a.wait > 0 || a.slots != 0 || a.shared || a.exclusive || t.minHold != 0:
		return usageErr("exec", "--once-per/--tick exclude -w, --slots, --shared, --exclusive and --min-hold")
	}
	if t.scheduledAt != "" {
		at, err := parseScheduledAt(t.scheduledAt)
		if err != nil {
			return usageErr("exec", "%v", err)
		}
		a.tick.at = at
	}
	a.nonblock = true // a tick is claimed once: it ran, runs, or runs here
	return nil        // the job name and the tick: tick.Run checks them before anything is held
}

func (t tickArgs) schedule() tick.Schedule {
	if t.label != "" {
		return tick.Named(t.label)
	}
	return tick.Every(t.oncePer)
}

func (t tickArgs) options(claimTTL time.Duration) []tick.Option {
	opts := []tick.Option{tick.WithClaimTTL(claimTTL)}
	if !t.at.IsZero() { // the tick is named by when the scheduler fired, not by when we started
		opts = append(opts, tick.WithClock(func() time.Time { return t.at }))
	}
	if t.atLeastOnce {
		opts = append(opts, tick.WithMode(tick.AtLeastOnce))
	}
	if t.retention != 0 {
		opts = append(opts, tick.WithRetention(t.retention))
	}
	return opts
}

// runTickExec claims the tick KEY@tick and runs CMD under the claim as a
// plain exec runs it under its lock; when the tick ran or runs elsewhere,
// it exits with the conflict code and says where and when.
func runTickExec(ctx context.Context, nodes []node.Node, a *execArgs, path string, sigs <-chan os.Signal, stderr io.Writer) error {
	c, err := redlock.New(nodes, redlock.WithKeyPrefix(a.prefix), redlock.WithOwner(a.owner), redlock.WithRecoveryPeriod(a.recovery))
	if err != nil {
		return usageErr("exec", "%v", err)
	}
	defer c.Close()
	res, err := tick.Run(ctx, c, a.key, a.tick.schedule(), func(ctx context.Context) error {
		lock, _ := redlock.LockFromContext(ctx)
		return unitOutcome(runLocked(ctx, lock, a, path, sigs, stderr))
	}, a.tick.options(a.ttl)...)
	var ee *exitError
	switch {
	case err == nil && !res.Ran:
		return exitf(a.conflictCode, "redlock exec: %s", res)
	case err == nil:
		return nil
	case errors.As(err, &ee):
		return ee
	case errors.Is(err, redlock.ErrInvalidArgument):
		return usageErr("exec", "%v", err)
	}
	return exitf(exitUnreachable, "redlock exec: %v", err)
}

// unitFailed is CMD's end as the tick's outcome: "exit status N" or
// redlock's line, with the exit code kept for redlock's own exit.
type unitFailed struct{ e *exitError }

func (u unitFailed) Error() string {
	if u.e.msg != "" {
		return u.e.msg
	}
	return fmt.Sprintf("exit status %d", u.e.code)
}

func (u unitFailed) Unwrap() error { return u.e }

func unitOutcome(err error) error {
	var ee *exitError
	if !errors.As(err, &ee) {
		return err
	}
	if ee.code == exitOK {
		return nil
	}
	return unitFailed{ee}
}

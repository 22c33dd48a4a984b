package tick

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

// Status says whether Run ran the tick here, and if not, why.
type Status int

const (
	// Ran: this replica ran the tick, the first to claim it.
	Ran Status = iota + 1
	// Rerun (AtLeastOnce): this replica ran the tick after a runner whose
	// claim ended without a finish; Result.Record is that runner.
	Rerun
	// Running: not run here; another replica holds the tick's claim
	// (Record: who, since when, its fence).
	Running
	// Done: not run here; the tick already ran (Record: who, when, with
	// which fence and outcome).
	Done
	// Unfinished (AtMostOnce): not run here; a runner claimed the tick and
	// never recorded a finish (it may have crashed): "claimed, not
	// finished".
	Unfinished
)

var statusNames = map[Status]string{Ran: "ran", Rerun: "ran again", Running: "running elsewhere",
	Done: "already ran", Unfinished: "claimed, not finished"}

func (s Status) String() string { return statusNames[s] }

// Result is what Run did with a tick.
type Result struct {
	Job, Tick string
	Status    Status
	Ran       bool   // Status is Ran or Rerun: fn ran here
	Fence     uint64 // this run's fence when Ran
	// Record is the other runner: the one that turned this replica away,
	// or the unfinished one before a Rerun; zero after a first Ran.
	Record Record
}

func (r Result) String() string {
	s := fmt.Sprintf("job %s tick %s: %s", r.Job, r.Tick, r.Status)
	if r.Ran {
		s += fmt.Sprintf(" here with fence %d", r.Fence)
	}
	rec := r.Record
	if rec.Runner == "" && rec.Fence == 0 {
		return s
	}
	s += fmt.Sprintf("; by %s, fence %d", rec.Runner, rec.Fence)
	if !rec.Started.IsZero() {
		s += ", started " + rec.Started.UTC().Format(time.RFC3339Nano)
	}
	if !rec.Finished.IsZero() {
		s += ", finished " + rec.Finished.UTC().Format(time.RFC3339Nano) + ", outcome " + rec.Outcome
	}
	return s
}

// claimAttempts bounds the claims of one Run that found the claim neither
// theirs nor held by anyone (a split vote between replicas, or a claim
// released between the attempt and the look).
const claimAttempts = 4

// Run runs fn once for the tick s names of job, across every replica that
// calls Run with the same client nodes, job and tick: exactly one of them
// runs it, however short fn is and whenever the others call (while the
// tick's records last, see WithRetention). The others return without
// running fn, and Result says why.
//
// fn's ctx is cancelled when ctx is, or when the claim is lost (the
// context's cause then wraps redlock.ErrLockLost), as with
// redlock.Client.Do; redlock.LockFromContext(ctx) returns the claim, whose
// Fence fn should send with its writes.
//
// Errors: bad input (ErrBadJob, ErrBadTick, ErrBadPeriod, ErrBadOption,
// all also redlock.ErrInvalidArgument) before anything is sent; the
// client's errors (redlock.ErrQuorumUnreachable, ctx's error) when the
// tick could not be claimed or read; when fn ran, fn's error joined with
// the loss of the claim and a failure to record the finish.
func Run(ctx context.Context, c *redlock.Client, job string, s Schedule, fn func(ctx context.Context) error, opts ...Option) (Result, error) {
	cfg, err := newConfig(s, opts)
	if err != nil {
		return Result{}, err
	}
	switch {
	case ctx == nil || c == nil || fn == nil:
		return Result{}, bad(ErrBadOption, "nil context, client or fn")
	case checkName(job) != nil:
		return Result{}, bad(ErrBadJob, "job %q: %v", job, checkName(job))
	}
	tick, err := s.name(cfg.clock())
	if err != nil {
		return Result{}, err
	}
	res := Result{Job: job, Tick: tick}
	claim := claimKey(job, tick)
	for range claimAttempts {
		l, err := c.TryAcquire(ctx, claim, cfg.claimTTL)
		if err == nil {
			return runClaimed(ctx, c, l, res, cfg, fn)
		}
		if !errors.Is(err, redlock.ErrNotAcquired) {
			return res, err
		}
		if done, err := turnedAway(ctx, c, claim, &res); done || err != nil {
			return res, err
		}
	}
	return res, fmt.Errorf("tick: job %q tick %q: %w: no replica holds the claim after %d attempts", job, tick, redlock.ErrNotAcquired, claimAttempts)
}

// turnedAway looks at why the claim was not ours, and fills res when the
// tick is taken (done true): finished, or running elsewhere.
func turnedAway(ctx context.Context, c *redlock.Client, claim string, res *Result) (done bool, err error) {
	rs, err := readRecords(ctx, c, claim)
	if err != nil {
		return false, err
	}
	if rs.done != nil {
		res.Status, res.Record = Done, *rs.done
		return true, nil
	}
	rec, err := runningRecord(ctx, c, claim)
	switch {
	case err != nil:
		return false, err
	case rec != nil:
		res.Status, res.Record = Running, *rec
		return true, nil
	}
	// Claimed without a finish, nobody running: a crashed runner, or one
	// that finished and released between the two looks. Only the claim
	// tells them apart reliably: try it again.
	return false, nil
}

// decide says, from a tick's records, whether it is taken and by whom.
func decide(rs records, mode Mode) (Status, *Record, bool) {
	switch {
	case rs.done != nil:
		return Done, rs.done, true
	case rs.claimed != nil && mode == AtMostOnce:
		return Unfinished, rs.claimed, true
	}
	return 0, nil, false
}

package tick

import (
	"context"
	"errors"
	"fmt"

	"github.com/quorumlock/quorumlock/redlock"
)

// runClaimed runs the tick under its claim l, unless its records say it
// is taken, and records the claim and the finish.
func runClaimed(ctx context.Context, c *redlock.Client, l *redlock.Lock, res Result, cfg config, fn func(context.Context) error) (Result, error) {
	rctx := context.WithoutCancel(ctx) // records and release outlive a cancelled caller
	rs, err := readRecords(ctx, c, l.Key())
	if err != nil {
		return res, errors.Join(err, l.Release(rctx))
	}
	if st, rec, taken := decide(rs, cfg.mode); taken {
		res.Status, res.Record = st, *rec
		return res, ignoreLost(l.Release(rctx))
	}
	me := Record{Runner: l.Owner(), Fence: l.Fence(), Started: l.AcquiredAt()}
	status, prev := Ran, Record{}
	if rs.claimed != nil { // AtLeastOnce: its runner is gone, or we would not hold the claim
		status, prev = Rerun, *rs.claimed
	} else if err := write(ctx, c, l.Key()+claimedSuffix, me, cfg); err != nil {
		// Not recorded on a majority: running now could run the tick twice.
		return res, errors.Join(err, l.Release(rctx))
	}
	if err := l.Err(); err != nil { // lost while claiming: another replica may claim it now
		return res, errors.Join(err, ignoreLost(l.Release(rctx)))
	}
	res.Status, res.Record, res.Fence, res.Ran = status, prev, l.Fence(), true
	fnErr, lostErr, relErr := l.Hold(ctx, func(wctx context.Context) error {
		return runAndFinish(wctx, c, l, me, cfg, fn)
	})
	return res, errors.Join(fnErr, lostErr, ignoreLost(relErr))
}

// runAndFinish runs fn and records its finish while the claim is still
// ours (Hold releases it after), also when fn panics: the panic goes on
// afterwards.
func runAndFinish(ctx context.Context, c *redlock.Client, l *redlock.Lock, me Record, cfg config, fn func(context.Context) error) (err error) {
	finished := false
	defer func() {
		if finished {
			return
		}
		r := recover()
		if r == nil { // runtime.Goexit: it goes on unwinding by itself
			me.Outcome = "exited without returning"
			_ = finish(ctx, c, l, me, cfg)
			return
		}
		me.Outcome = fmt.Sprintf("panic: %v", r)
		_ = finish(ctx, c, l, me, cfg)
		panic(r)
	}()
	err = fn(ctx)
	finished = true
	me.Outcome = OutcomeOK
	if err != nil {
		me.Outcome = err.Error()
	}
	return errors.Join(err, finish(ctx, c, l, me, cfg))
}

// finish records that the tick ran. Its context is not the job's: a
// cancelled job still records its finish.
func finish(ctx context.Context, c *redlock.Client, l *redlock.Lock, me Record, cfg config) error {
	err := write(context.WithoutCancel(ctx), c, l.Key()+doneSuffix, me, cfg)
	if errors.Is(err, redlock.ErrNotAcquired) {
		return nil // a runner after a lost claim recorded its finish first
	}
	return err
}

func ignoreLost(err error) error {
	if errors.Is(err, redlock.ErrLockLost) {
		return nil // reported by Hold as the loss, or nothing ran
	}
	return err
}

package statuslock

import (
	"context"
	"time"
)

// resignTimeout bounds the release of a term when the loop ends.
const resignTimeout = 5 * time.Second

// lead campaigns and runs passes while leading, until stop is closed or
// ctx ends.
func (r *Reconciler) lead(ctx context.Context, stop <-chan struct{}) {
	lg := r.locker.cfg.logger
	cctx, cancel := context.WithCancel(ctx) // the campaign ends on Stop
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-cctx.Done():
		}
	}()
	for {
		term, err := r.cfg.election.Campaign(cctx, r.cfg.value)
		if err != nil {
			if cctx.Err() != nil {
				return
			}
			lg.WarnContext(ctx, "statuslock: reconciler: campaign failed; trying again after the interval", "err", err)
			select {
			case <-time.After(r.cfg.interval):
				continue
			case <-cctx.Done():
				return
			}
		}
		lg.InfoContext(ctx, "statuslock: reconciler leads", "election", r.cfg.election.Name(), "fence", term.Fence())
		tctx, tcancel := term.Context(ctx)
		r.passes(tctx, stop)
		tcancel()
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), resignTimeout)
		err = term.Resign(rctx) // ErrLockLost when the term was lost
		rcancel()
		lg.InfoContext(ctx, "statuslock: reconciler no longer leads", "election", r.cfg.election.Name(), "cause", term.Err(), "resign", err)
		if cctx.Err() != nil {
			return
		}
	}
}

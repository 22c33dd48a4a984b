package statuslock

import (
	"context"
	"time"

	"github.com/quorumlock/quorumlock/election"
)

// WithLeaderElection makes the reconciler run its passes only while this
// replica leads election e, campaigning with value (what e.Leader reports:
// a pod name, say; redlock.WithOwner's rules). Start campaigns; once
// leading, the replica runs a pass at once and then every interval, until
// its term ends: then the running pass's context is cancelled (a term ends
// a safety margin before its lock's validity, so the pass has that long to
// stop while no other replica leads) and the replica campaigns again.
// Stop lets the running pass finish and resigns, so that another replica
// takes over at once; a replica that dies without Stop is replaced when its
// term's lock expires (election.WithTTL). RunOnce is not gated: it runs a
// pass on any replica. Only the leader reconciles, so two replicas never
// reconcile at once; when the leader's connections close without a resign
// (as when its process dies), another replica takes over.
func WithLeaderElection(e *election.Election, value string) ReconcilerOption {
	return func(c *reconcilerConfig) { c.election, c.value, c.leaderOnly = e, value, true }
}

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

package statuslock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// ServicesFunc lists the services one pass reconciles.
type ServicesFunc func(ctx context.Context) ([]string, error)

// ReconcileFunc brings one service's stored status in line with reality
// (its containers), under the service's status lock. Pass fence to
// Store.Set. ctx is cancelled when the lock is lost or the reconciler stops.
type ReconcileFunc func(ctx context.Context, serviceID string, fence uint64) error

// Pass is what one reconciliation pass did.
type Pass struct {
	// Reconciled: the ReconcileFunc ran under the lock and returned nil.
	Reconciled []string
	// Skipped: another holder had the service's status lock (an API call
	// or a worker is writing its status right now); it is left for the
	// next pass.
	Skipped []string
	// Failed: the ReconcileFunc or the lock failed; the error says which.
	Failed map[string]error
}

// Reconciler corrects status drift: every interval it takes each service's
// status lock in turn, without waiting for busy ones, and calls the
// ReconcileFunc. It logs through the Locker's logger.
type Reconciler struct {
	locker    *Locker
	services  ServicesFunc
	reconcile ReconcileFunc
	cfg       reconcilerConfig

	mu     sync.Mutex
	stop   chan struct{} // closed by Stop; nil when not running
	cancel context.CancelFunc
	done   chan struct{} // closed when the loop has returned
}

// NewReconciler returns a stopped Reconciler; Start runs it.
func NewReconciler(l *Locker, services ServicesFunc, reconcile ReconcileFunc, opts ...ReconcilerOption) (*Reconciler, error) {
	switch {
	case l == nil:
		return nil, invalidArg("nil Locker")
	case services == nil:
		return nil, invalidArg("nil services function")
	case reconcile == nil:
		return nil, invalidArg("nil reconcile function")
	}
	cfg := reconcilerConfig{interval: DefaultInterval, ttl: DefaultReconcileTTL}
	for _, o := range opts {
		if o == nil {
			return nil, invalidArg("nil option")
		}
		o(&cfg)
	}
	if cfg.interval <= 0 {
		return nil, invalidArg("interval %s is not positive", cfg.interval)
	}
	if cfg.ttl <= 0 {
		return nil, invalidArg("ttl %s is not positive", cfg.ttl)
	}
	if cfg.leaderOnly {
		if cfg.election == nil {
			return nil, invalidArg("nil election")
		}
		if err := node.CheckOwner(cfg.value); err != nil || cfg.value == "" {
			return nil, invalidArg("leader election value %q: not a valid owner", cfg.value)
		}
	}
	return &Reconciler{locker: l, services: services, reconcile: reconcile, cfg: cfg}, nil
}

// Start runs a pass at once, then one every interval, in a goroutine, until
// Stop is called or ctx ends. It returns an error wrapping ErrRunning if the
// reconciler is already running. A reconciler that was stopped, or whose ctx
// ended, may be started again.
func (r *Reconciler) Start(ctx context.Context) error {
	if ctx == nil {
		return invalidArg("nil context")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stop != nil {
		select {
		case <-r.done: // ended with its context; Stop was not called
			r.cancel()
		default:
			return ErrRunning
		}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	pctx, cancel := context.WithCancel(ctx)
	r.stop, r.cancel, r.done = stop, cancel, done
	go r.loop(pctx, stop, done)
	r.locker.cfg.logger.InfoContext(ctx, "statuslock: reconciler started", "interval", r.cfg.interval, "ttl", r.cfg.ttl)
	return nil
}

func (r *Reconciler) loop(ctx context.Context, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	if r.cfg.election != nil {
		r.lead(ctx, stop)
		return
	}
	r.passes(ctx, stop)
}

// passes runs a pass at once, then one every interval, until stop is
// closed or ctx ends.
func (r *Reconciler) passes(ctx context.Context, stop <-chan struct{}) {
	t := time.NewTicker(r.cfg.interval)
	defer t.Stop()
	for {
		_, _ = r.RunOnce(ctx)
		select {
		case <-t.C:
		case <-stop:
			return
		case <-ctx.Done():
			return
		}
	}
}

// Stop ends the loop: no pass starts after it, and it waits for the running
// pass to finish. If ctx ends first, the running pass's context is cancelled
// (the ReconcileFunc should return promptly), Stop still waits for the loop
// to return, and reports ctx's error. Stop on a stopped reconciler returns
// nil.
func (r *Reconciler) Stop(ctx context.Context) error {
	if ctx == nil {
		return invalidArg("nil context")
	}
	r.mu.Lock()
	stop, cancel, done := r.stop, r.cancel, r.done
	r.stop, r.cancel, r.done = nil, nil, nil
	r.mu.Unlock()
	if stop == nil {
		return nil
	}
	close(stop)
	defer cancel()
	select {
	case <-done:
		r.locker.cfg.logger.InfoContext(ctx, "statuslock: reconciler stopped")
		return nil
	case <-ctx.Done():
	}
	cancel()
	<-done
	r.locker.cfg.logger.InfoContext(ctx, "statuslock: reconciler stopped; running pass cancelled")
	return ctx.Err()
}

// RunOnce makes one pass over the services now, on the caller's goroutine:
// for each, a single attempt at its status lock; a busy service is skipped,
// not waited for. It returns an error only if the services cannot be listed
// or ctx ends (the pass stops at the next service).
func (r *Reconciler) RunOnce(ctx context.Context) (Pass, error) {
	if ctx == nil {
		return Pass{}, invalidArg("nil context")
	}
	lg := r.locker.cfg.logger
	began := time.Now()
	ids, err := r.services(ctx)
	if err != nil {
		lg.WarnContext(ctx, "statuslock: reconcile: cannot list services", "err", err)
		return Pass{}, err
	}
	p := Pass{Failed: map[string]error{}}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			lg.InfoContext(ctx, "statuslock: reconcile pass cut short", "err", err)
			return p, err
		}
		if id == "" {
			p.Failed[id] = invalidArg("empty service id")
			continue
		}
		err := r.one(ctx, id)
		switch {
		case err == nil:
			p.Reconciled = append(p.Reconciled, id)
		case errors.Is(err, ErrNotAcquired):
			lg.InfoContext(ctx, "statuslock: reconcile: service busy, skipped", "service", id)
			p.Skipped = append(p.Skipped, id)
		default:
			lg.WarnContext(ctx, "statuslock: reconcile failed", "service", id, "err", err)
			p.Failed[id] = err
		}
	}
	lg.DebugContext(ctx, "statuslock: reconcile pass done", "services", len(ids), "reconciled", len(p.Reconciled),
		"skipped", len(p.Skipped), "failed", len(p.Failed), "took", time.Since(began))
	return p, nil
}

// one reconciles one service under its lock, with a single attempt.
func (r *Reconciler) one(ctx context.Context, id string) error {
	l := r.locker
	cfg, err := l.call(ctx, id, []Option{WithTTL(r.cfg.ttl)})
	if err != nil {
		return err
	}
	out, err := l.run(ctx, cfg, id, func(ctx context.Context, fence uint64) error {
		return r.reconcile(ctx, id, fence)
	}, true)
	if err != nil {
		return err
	}
	return out.result(ctx, cfg, id)
}

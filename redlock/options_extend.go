package redlock

import (
	"context"
	"log/slog"
	"time"

	"github.com/quorumlock/quorumlock/extend"
)

// Options of auto-extension (Lock.KeepAlive and Client.Do). Their defaults
// depend on each lock's TTL; see package extend:
//
//	threshold      max(500ms, ttl/3), at most ttl/2
//	safety margin  max(10ms, ttl/10), at most threshold/2
//	retry interval max(10ms, threshold/5)
//	tick           50ms
//	max hold       none
type extendConfig struct {
	threshold, margin, retry, tick, maxHold time.Duration
}

// WithExtendThreshold extends a kept lock when less than d of its validity
// is left. Default: max(500ms, ttl/3), at most ttl/2.
func WithExtendThreshold(d time.Duration) Option {
	return func(c *config) { c.ext.threshold = d }
}

// WithSafetyMargin declares a kept lock that could not be extended lost d
// before its validity ends: Done closes and the context of Client.Do is
// cancelled then, leaving the work d to stop while the lock still excludes
// others. Default: max(10ms, ttl/10), at most half the threshold.
func WithSafetyMargin(d time.Duration) Option {
	return func(c *config) { c.ext.margin = d }
}

// WithExtendRetryInterval is the wait after a failed extension before the
// next try, while validity remains. Default: max(10ms, threshold/5).
func WithExtendRetryInterval(d time.Duration) Option {
	return func(c *config) { c.ext.retry = d }
}

// WithExtendTick is the granularity of auto-extension: at most one round of
// extensions starts per tick (one pipelined request per node), and it takes
// every kept lock due before the next tick. Default 50ms.
func WithExtendTick(d time.Duration) Option {
	return func(c *config) { c.ext.tick = d }
}

// WithMaxHold caps how long auto-extension keeps one lock, counted from
// KeepAlive (the acquisition, in Client.Do). At the cap the lock is declared
// lost (an error wrapping ErrLockLost and ErrMaxHold) and no longer
// extended, so that one holder cannot keep re-extending a lock forever.
// Default: no cap.
func WithMaxHold(d time.Duration) Option {
	return func(c *config) { c.ext.maxHold = d }
}

func (e extendConfig) options(logger *slog.Logger) []extend.Option {
	opts := []extend.Option{extend.WithLogger(logger)}
	if e.threshold != 0 {
		opts = append(opts, extend.WithThreshold(e.threshold))
	}
	if e.margin != 0 {
		opts = append(opts, extend.WithSafetyMargin(e.margin))
	}
	if e.retry != 0 {
		opts = append(opts, extend.WithRetryInterval(e.retry))
	}
	if e.tick != 0 {
		opts = append(opts, extend.WithTick(e.tick))
	}
	if e.maxHold != 0 {
		opts = append(opts, extend.WithMaxHold(e.maxHold))
	}
	return opts
}

func (e extendConfig) validate() error {
	nop := extend.RenewFunc(func(context.Context, []extend.Lease) []error { return nil })
	if _, err := extend.New(nop, e.options(nil)...); err != nil {
		return invalidArg("%w", err)
	}
	return nil
}

package extend

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults of a Watchdog. The threshold, safety margin and retry interval
// depend on each lease's TTL unless set with an option.
const (
	// MinThreshold is the smallest default threshold: a lease is renewed
	// when less than max(MinThreshold, ttl/3) of its validity is left (but
	// never more than ttl/2, so that short leases are not renewed
	// continuously).
	MinThreshold = 500 * time.Millisecond
	// MinSafetyMargin is the smallest default safety margin: a lease that
	// could not be renewed is declared lost max(MinSafetyMargin, ttl/10)
	// before its validity ends (at most half the threshold).
	MinSafetyMargin = 10 * time.Millisecond
	// MinRetryInterval is the smallest default wait between a failed
	// renewal and the next try: max(MinRetryInterval, threshold/5).
	MinRetryInterval = 10 * time.Millisecond
	// DefaultTick is the default granularity of renewal rounds: at most one
	// round starts per tick, and it takes every lease due before the next
	// tick.
	DefaultTick = 50 * time.Millisecond
)

// Option configures a Watchdog; options are validated once by New.
type Option func(*config)

type config struct {
	threshold time.Duration // 0: from the TTL
	margin    time.Duration // 0: from the TTL
	retry     time.Duration // 0: from the threshold
	tick      time.Duration
	maxHold   time.Duration // 0: none
	logger    *slog.Logger
}

// WithThreshold renews a lease when less than d of its validity is left.
// Default: max(500ms, ttl/3), at most ttl/2.
func WithThreshold(d time.Duration) Option { return func(c *config) { c.threshold = d } }

// WithSafetyMargin declares a lease lost d before its validity ends when it
// could not be renewed, so that the work has d to stop while the lease still
// holds. Default: max(10ms, ttl/10), at most half the threshold.
func WithSafetyMargin(d time.Duration) Option { return func(c *config) { c.margin = d } }

// WithRetryInterval is the wait after a failed renewal before the next try.
// Default: max(10ms, threshold/5). Rounds still start at most once per tick.
func WithRetryInterval(d time.Duration) Option { return func(c *config) { c.retry = d } }

// WithTick sets the granularity of renewal rounds: at most one round starts
// per tick, and each round renews every lease that falls due before the next
// tick. Larger ticks mean fewer, larger rounds. Default 50ms.
func WithTick(d time.Duration) Option { return func(c *config) { c.tick = d } }

// WithMaxHold caps the total time a lease is kept, counted from Keep: once
// it is reached, the lease is no longer renewed and onLost is called with an
// error wrapping ErrMaxHold. It bounds how long one holder can monopolize a
// lock. Default: no cap.
func WithMaxHold(d time.Duration) Option { return func(c *config) { c.maxHold = d } }

// WithLogger logs failed renewals (debug) and lost leases (warn). Default:
// silent.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

func (c *config) validate() error {
	for _, v := range []struct {
		name string
		d    time.Duration
	}{{"threshold", c.threshold}, {"safety margin", c.margin}, {"retry interval", c.retry}, {"tick", c.tick}, {"max hold", c.maxHold}} {
		if v.d < 0 {
			return fmt.Errorf("%w: %s %s is negative", ErrInvalidOption, v.name, v.d)
		}
	}
	if c.tick == 0 {
		return fmt.Errorf("%w: tick is zero", ErrInvalidOption)
	}
	if c.threshold > 0 && c.margin >= c.threshold {
		return fmt.Errorf("%w: safety margin %s is not below threshold %s", ErrInvalidOption, c.margin, c.threshold)
	}
	return nil
}

// ErrInvalidOption is returned by New for a bad option.
var ErrInvalidOption = errors.New("extend: invalid option")

// thresholdFor is when (remaining validity) a lease of this ttl is renewed.
func (c *config) thresholdFor(ttl time.Duration) time.Duration {
	if c.threshold > 0 {
		return c.threshold
	}
	return min(max(MinThreshold, ttl/3), ttl/2)
}

// marginFor is how long before the end of validity a lease of this ttl that
// could not be renewed is declared lost.
func (c *config) marginFor(ttl time.Duration) time.Duration {
	if c.margin > 0 {
		return c.margin
	}
	return min(max(MinSafetyMargin, ttl/10), c.thresholdFor(ttl)/2)
}

// retryFor is the wait after a failed renewal of a lease of this ttl.
func (c *config) retryFor(ttl time.Duration) time.Duration {
	if c.retry > 0 {
		return c.retry
	}
	return max(MinRetryInterval, c.thresholdFor(ttl)/5)
}

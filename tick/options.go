package tick

import "time"

// Mode says what happens to a tick whose runner disappeared (crashed,
// killed, lost its claim) before it recorded a finish.
type Mode int

const (
	// AtMostOnce (the default): a claimed tick never runs again, even if its
	// runner crashed; the tick's record then says "claimed, not finished"
	// (Status Unfinished). For jobs that must not repeat: billing, mail.
	AtMostOnce Mode = iota
	// AtLeastOnce: a tick whose claim ended without a finish runs again on
	// the next replica that asks, with a larger fence (Status Rerun), so
	// that the crashed runner's late writes can be refused. For idempotent
	// or fenced jobs that must not be skipped.
	AtLeastOnce
)

func (m Mode) String() string {
	if m == AtLeastOnce {
		return "at-least-once"
	}
	return "at-most-once"
}

// Defaults of the options.
const (
	// DefaultClaimTTL is the claim lock's time to live; it is kept alive
	// while the job runs.
	DefaultClaimTTL = 30 * time.Second
	// DefaultRetention is how long the records of a tick named by At or
	// Named stay (Every: twice the period, at least MinRetention).
	DefaultRetention = 24 * time.Hour
	// MinRetention is the shortest retention: records must outlive the
	// round trips of the replicas they turn away.
	MinRetention = time.Second
	// MaxRetention bounds the retention, so that no record lives forever.
	MaxRetention = 400 * 24 * time.Hour
)

// Option configures one Run.
type Option func(*config)

type config struct {
	mode      Mode
	clock     func() time.Time
	retention time.Duration
	claimTTL  time.Duration
}

// WithMode sets the mode (default AtMostOnce). Replicas of one job must
// use the same mode.
func WithMode(m Mode) Option { return func(c *config) { c.mode = m } }

// WithClock sets the clock from which Every derives the tick (default
// time.Now), e.g. a clock that is off by a known amount, in tests.
func WithClock(now func() time.Time) Option { return func(c *config) { c.clock = now } }

// WithRetention sets how long a tick's records stay after they are written
// (default: twice Every's period but at least MinRetention, or
// DefaultRetention for At and Named). It must be at least MinRetention,
// at least Every's period, and at most MaxRetention (ErrBadOption). A
// replica that asks after the records expired runs the tick again: make it
// longer than replicas can be late.
func WithRetention(d time.Duration) Option { return func(c *config) { c.retention = d } }

// WithClaimTTL sets the time to live of the claim lock (default
// DefaultClaimTTL), which is kept alive while the job runs. In
// AtLeastOnce mode it is how long a crashed runner holds its tick up.
func WithClaimTTL(d time.Duration) Option { return func(c *config) { c.claimTTL = d } }

func newConfig(s Schedule, opts []Option) (config, error) {
	c := config{clock: time.Now, claimTTL: DefaultClaimTTL}
	for _, o := range opts {
		if o == nil {
			return c, bad(ErrBadOption, "nil option")
		}
		o(&c)
	}
	if c.retention == 0 {
		c.retention = DefaultRetention
		if s.period > 0 {
			c.retention = min(max(2*s.period, MinRetention), MaxRetention)
		}
	}
	switch {
	case c.mode != AtMostOnce && c.mode != AtLeastOnce:
		return c, bad(ErrBadOption, "unknown mode %d", c.mode)
	case c.clock == nil:
		return c, bad(ErrBadOption, "nil clock")
	case c.retention < MinRetention || c.retention > MaxRetention:
		return c, bad(ErrBadOption, "retention %s is not in [%s, %s]", c.retention, MinRetention, MaxRetention)
	case s.period > 0 && c.retention < s.period:
		return c, bad(ErrBadOption, "retention %s is shorter than the period %s", c.retention, s.period)
	case c.claimTTL <= 0:
		return c, bad(ErrBadOption, "claim ttl %s is not positive", c.claimTTL)
	}
	return c, nil
}

package retry

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// ErrInvalidPolicy is returned by Policy.Validate for a policy built from
// arguments out of range (a negative count, delay or jitter).
var ErrInvalidPolicy = errors.New("retry: invalid policy")

// Policy says how often and after which delays an acquisition tries again.
// Policies are immutable and safe for concurrent use.
type Policy interface {
	// Delays starts one run of the policy (one acquisition): fresh state,
	// so that nothing leaks from one acquisition into the next.
	Delays() Delays
	// Validate reports a policy built from bad arguments, wrapping
	// ErrInvalidPolicy.
	Validate() error
	// String describes the policy for logs and errors.
	String() string
}

// Delays is one run of a Policy. It is used by one goroutine.
type Delays interface {
	// Next returns the delay before the next retry, and false when the
	// retries are used up.
	Next() (delay time.Duration, ok bool)
}

// Constant retries count times, waiting delay plus a uniformly random extra
// in [0, jitter) before each retry. A negative argument makes Validate fail.
func Constant(count int, delay, jitter time.Duration) Policy {
	return constantPolicy{count: count, delay: delay, jitter: jitter}
}

// Exponential retries count times. Before jitter, the first delay is initial
// and each next one doubles, up to max. Each delay is then drawn at random
// from the half to one and a half of that, so that clients spread out, and
// cut to max: no delay exceeds max, jitter included. Once the doubling has
// reached max, delays lie in [max/2, max].
func Exponential(initial, max time.Duration, count int) Policy {
	return exponentialPolicy{initial: initial, max: max, count: count}
}

// Never makes one attempt and no retry.
func Never() Policy { return never }

var never Policy = constantPolicy{}

type constantPolicy struct {
	count         int
	delay, jitter time.Duration
}

func (p constantPolicy) Validate() error {
	if p.count < 0 || p.delay < 0 || p.jitter < 0 {
		return fmt.Errorf("%w: %s: count, delay and jitter must not be negative", ErrInvalidPolicy, p)
	}
	return nil
}

func (p constantPolicy) String() string {
	if p.count == 0 {
		return "never"
	}
	return fmt.Sprintf("constant(count=%d, delay=%s, jitter=%s)", p.count, p.delay, p.jitter)
}

func (p constantPolicy) Delays() Delays {
	if p.count <= 0 {
		return exhausted{}
	}
	return &constantRun{left: p.count, delay: p.delay, jitter: p.jitter}
}

// constantRun counts a Constant policy's retries down; the jitter spreads
// clients that lost to each other, so they do not split the votes again.
type constantRun struct {
	left          int
	delay, jitter time.Duration
}

func (r *constantRun) Next() (time.Duration, bool) {
	if r.left <= 0 {
		return 0, false
	}
	r.left--
	if r.jitter <= 0 {
		return r.delay, true
	}
	return r.delay + rand.N(r.jitter), true
}

// exhausted is a run without retries (Never, and a count of 0); it costs
// no allocation.
type exhausted struct{}

func (exhausted) Next() (time.Duration, bool) { return 0, false }

type exponentialPolicy struct {
	initial, max time.Duration
	count        int
}

func (p exponentialPolicy) Validate() error {
	if p.count < 0 || p.initial <= 0 || p.max < p.initial {
		return fmt.Errorf("%w: %s: need count >= 0 and 0 < initial <= max", ErrInvalidPolicy, p)
	}
	return nil
}

func (p exponentialPolicy) String() string {
	return fmt.Sprintf("exponential(initial=%s, max=%s, count=%d)", p.initial, p.max, p.count)
}

func (p exponentialPolicy) Delays() Delays {
	// backoff/v4 doubles and caps the interval; the jitter is ours, because
	// backoff/v4 applies its randomization after the cap (up to 1.5 × max).
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(p.initial),
		backoff.WithMaxInterval(p.max),
		backoff.WithMultiplier(2),
		backoff.WithRandomizationFactor(0),
		backoff.WithMaxElapsedTime(0), // the count bounds it, not wall time
	)
	return &exponentialRun{b: backoff.WithMaxRetries(b, uint64(max(p.count, 0))), max: p.max, draw: rand.N[time.Duration]}
}

// exponentialRun randomizes the capped intervals of a backoff/v4 run
// within [d/2, min(3d/2, max)]: jitter never takes a delay past max.
type exponentialRun struct {
	b    backoff.BackOff
	max  time.Duration
	draw func(n time.Duration) time.Duration // uniform in [0, n)
}

func (r *exponentialRun) Next() (time.Duration, bool) {
	d := r.b.NextBackOff()
	if d == backoff.Stop {
		return 0, false
	}
	lo, hi := d-d/2, min(d+d/2, r.max)
	if hi <= lo {
		return min(lo, r.max), true
	}
	return lo + r.draw(hi-lo+1), true
}

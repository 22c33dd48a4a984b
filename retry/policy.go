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
	// NewBackOff returns fresh state for one acquisition. Its NextBackOff
	// returns the delay before the next retry, or backoff.Stop when the
	// retries are used up.
	NewBackOff() backoff.BackOff
	// Validate reports a policy built from bad arguments, wrapping
	// ErrInvalidPolicy.
	Validate() error
	// String describes the policy for logs and errors.
	String() string
}

// Constant retries count times, waiting delay plus a uniformly random extra
// in [0, jitter) before each retry. A negative argument makes Validate fail.
func Constant(count int, delay, jitter time.Duration) Policy {
	return constantPolicy{count: count, delay: delay, jitter: jitter}
}

// Exponential retries count times; the first delay is initial and each next
// one doubles up to max, each randomized by ±50% so that clients spread out.
func Exponential(initial, max time.Duration, count int) Policy {
	return exponentialPolicy{initial: initial, max: max, count: count}
}

// Never makes one attempt and no retry.
func Never() Policy { return constantPolicy{} }

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

func (p constantPolicy) NewBackOff() backoff.BackOff {
	return backoff.WithMaxRetries(&jittered{delay: p.delay, jitter: p.jitter}, uint64(max(p.count, 0)))
}

// jittered is a constant backoff with a random extra; backoff/v4's
// ConstantBackOff has no jitter of its own.
type jittered struct{ delay, jitter time.Duration }

func (j *jittered) Reset() {}

func (j *jittered) NextBackOff() time.Duration {
	if j.jitter <= 0 {
		return j.delay
	}
	return j.delay + rand.N(j.jitter)
}

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

func (p exponentialPolicy) NewBackOff() backoff.BackOff {
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(p.initial),
		backoff.WithMaxInterval(p.max),
		backoff.WithMultiplier(2),
		backoff.WithRandomizationFactor(0.5),
		backoff.WithMaxElapsedTime(0), // the count bounds it, not wall time
	)
	return backoff.WithMaxRetries(b, uint64(max(p.count, 0)))
}

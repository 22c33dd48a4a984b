package statuslock

import (
	"log/slog"
	"reflect"
	"time"

	"github.com/quorumlock/quorumlock/election"
	"github.com/quorumlock/quorumlock/retry"
)

// Defaults of a Locker.
const (
	// DefaultTTL is the time to live of a status lock: long enough for a
	// status update, and the time others wait at most after a holder
	// crashed. WithStatusLock extends the lock while its function runs.
	DefaultTTL = 10 * time.Second
	// DefaultKeyPrefix names a service's status lock "status:<serviceID>"
	// (the redlock client adds its own prefix, "lock:" by default).
	DefaultKeyPrefix = "status:"
)

// DefaultRetry is 10 retries, 200 ms apart plus up to 100 ms of random
// jitter (about 2 to 3 seconds in all), as node-redlock's defaults. It is
// also the retry policy of a redlock client built
// without redlock.WithRetry, which Acquire and WithStatusLock use unless
// given WithRetry.
func DefaultRetry() retry.Policy {
	return retry.Constant(10, 200*time.Millisecond, 100*time.Millisecond)
}

// Option configures a Locker (given to New) or one call (given to
// WithStatusLock, Acquire or TryAcquire, overriding the Locker's setting for
// that call only). Options are validated where they are given; a bad one is
// an ErrInvalidArgument and nothing is locked.
type Option func(*config)

type config struct {
	ttl    time.Duration
	retry  retry.Policy // nil: the redlock client's
	prefix string
	logger *slog.Logger
	bad    []string // options given invalid values that cannot be checked later (nil policy, nil logger)
}

func defaultConfig() config {
	return config{ttl: DefaultTTL, prefix: DefaultKeyPrefix, logger: slog.New(slog.DiscardHandler)}
}

// WithTTL sets the lock's time to live. Default DefaultTTL (10 s). It must
// be positive, and longer than the redlock client's drift and node timeout.
func WithTTL(ttl time.Duration) Option { return func(c *config) { c.ttl = ttl } }

// WithRetry sets how often and after which delays a busy status lock is
// tried again by Acquire and WithStatusLock, instead of the redlock client's
// retry policy. Default: the client's policy, which is DefaultRetry() (10 x
// 200 ms + up to 100 ms) unless the client was built with redlock.WithRetry.
// The client's own waiting (it comes back when the holder's key expires, or
// when the holder releases with redlock release notifications on) is used
// only with the client's policy: with WithRetry each try is a single
// attempt, WithRetry's delays apart.
func WithRetry(p retry.Policy) Option {
	return func(c *config) {
		if p == nil {
			c.bad = append(c.bad, "nil retry policy")
			return
		}
		c.retry = p
	}
}

// WithKeyPrefix sets the prefix of the lock keys: the lock of a service is
// prefix+serviceID. Default DefaultKeyPrefix ("status:").
func WithKeyPrefix(prefix string) Option { return func(c *config) { c.prefix = prefix } }

// WithLogger logs acquisitions, releases and busy locks (debug),
// failures to acquire and failed releases (warn). Default: silent.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.bad = append(c.bad, "nil logger")
			return
		}
		c.logger = l
	}
}

// apply returns base with opts applied, validated.
func apply(base config, opts []Option) (config, error) {
	cfg := base
	cfg.bad = nil
	for _, o := range opts {
		if o == nil {
			return config{}, invalidArg("nil option")
		}
		o(&cfg)
	}
	if len(cfg.bad) > 0 {
		return config{}, invalidArg("%s", cfg.bad[0])
	}
	if cfg.ttl <= 0 {
		return config{}, invalidArg("ttl %s is not positive", cfg.ttl)
	}
	if cfg.retry != nil {
		if err := cfg.retry.Validate(); err != nil {
			return config{}, invalidArg("%w", err)
		}
	}
	return cfg, nil
}

// isNilPointer reports an interface holding a nil pointer (a typed nil).
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Interface, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

// Defaults of a Reconciler.
const (
	// DefaultInterval is the time between the starts of two passes.
	DefaultInterval = 30 * time.Second
	// DefaultReconcileTTL is the status lock's TTL during one service's
	// reconciliation: short, so that a crashed reconciler holds nobody up
	// for long.
	DefaultReconcileTTL = 5 * time.Second
)

// ReconcilerOption configures a Reconciler.
type ReconcilerOption func(*reconcilerConfig)

type reconcilerConfig struct {
	interval   time.Duration
	ttl        time.Duration
	election   *election.Election // WithLeaderElection; nil: every replica reconciles
	value      string
	leaderOnly bool // WithLeaderElection was given
}

// WithInterval sets the time between the starts of two passes. Default
// DefaultInterval (30 s). A pass that takes longer delays the next one; passes
// never overlap.
func WithInterval(d time.Duration) ReconcilerOption {
	return func(c *reconcilerConfig) { c.interval = d }
}

// WithReconcileTTL sets the status lock's TTL while one service is
// reconciled. Default DefaultReconcileTTL (5 s). The lock is extended while
// the ReconcileFunc runs.
func WithReconcileTTL(d time.Duration) ReconcilerOption {
	return func(c *reconcilerConfig) { c.ttl = d }
}

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

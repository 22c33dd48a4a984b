package statuslock

import (
	"log/slog"
	"reflect"
	"time"

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

// DefaultRetry is the retry policy of Acquire and WithStatusLock: 10
// retries, 200 ms apart plus up to 100 ms of random jitter (about 2 to 3
// seconds in all), as node-redlock's defaults.
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
	retry  retry.Policy
	prefix string
	logger *slog.Logger
	bad    []string // options given invalid values that cannot be checked later (nil policy, nil logger)
}

func defaultConfig() config {
	return config{ttl: DefaultTTL, retry: DefaultRetry(), prefix: DefaultKeyPrefix, logger: slog.New(slog.DiscardHandler)}
}

// WithTTL sets the lock's time to live. Default DefaultTTL (10 s). It must
// be positive, and longer than the redlock client's drift and node timeout.
func WithTTL(ttl time.Duration) Option { return func(c *config) { c.ttl = ttl } }

// WithRetry sets how often and after which delays a busy status lock is
// tried again by Acquire and WithStatusLock. Default DefaultRetry(). The
// redlock client's own retry policy is not used: each attempt is a single
// try.
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

// WithLogger logs acquisitions and releases (debug), busy locks (info),
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
	if err := cfg.retry.Validate(); err != nil {
		return config{}, invalidArg("%w", err)
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

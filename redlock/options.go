package redlock

import (
	"log/slog"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/extend"
	"github.com/quorumlock/quorumlock/internal/defaults"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/retry"
)

const (
	defaultKeyPrefix      = defaults.KeyPrefix
	defaultRecoveryPeriod = defaults.RecoveryPeriod
	defaultDriftFactor    = 0.01
	// driftFloor is added to the drift of every lock: the resolution of the
	// nodes' expiry clocks (Redis expires with millisecond precision).
	driftFloor = 2 * time.Millisecond
	// minNodeTimeout and maxNodeTimeout bound the default per-node timeout,
	// a tenth of the lock's TTL.
	minNodeTimeout = 10 * time.Millisecond
	maxNodeTimeout = time.Second
	// minRetention far exceeds node.MaxSeedSkew, so that a counter seeded
	// again after expiry starts above every fence of the expired one.
	minRetention = time.Second
)

// defaultRetry is the retry policy of Acquire unless WithRetry says
// otherwise: 10 retries, 200 ms apart plus up to 100 ms of random jitter (the
// defaults of node-redlock, so migrating services keep their behaviour).
func defaultRetry() retry.Policy {
	return retry.Constant(10, 200*time.Millisecond, 100*time.Millisecond)
}

// Option configures a Client. Options are validated once, by New.
type Option func(*config)

type config struct {
	prefix      string
	driftFactor float64
	nodeTimeout time.Duration // 0: derived from the TTL
	retry       retry.Policy
	logger      *slog.Logger
	observer    observe.Observer
	noNotify    bool // WithReleaseNotifications(false); see options_notify.go
	retention   time.Duration
	strict      bool             // WithRequireNoEviction
	wallClock   func() time.Time // seeds of new fence counters; tests skew it
	owner       string           // WithOwner; see owner.go
	recovery    time.Duration    // WithRecoveryPeriod; see recovery.go
	lockDelay   time.Duration    // WithLockDelay; see lockdelay.go

	keep []extend.Option // WithKeepAlive; see watchdog.go
}

func defaultConfig() config {
	return config{prefix: defaultKeyPrefix, driftFactor: defaultDriftFactor, retry: defaultRetry(),
		retention: node.DefaultRetention, wallClock: time.Now, owner: defaultOwner(), recovery: defaultRecoveryPeriod}
}

// WithKeyPrefix sets the prefix of every key on the nodes, which name a
// lock key prefix{key}. Default "lock:". It may not contain '{' or '}'.
func WithKeyPrefix(prefix string) Option { return func(c *config) { c.prefix = prefix } }

// WithDriftFactor sets the share of the TTL reserved for clock drift between
// the client and the nodes; the drift of a lock is ttl*factor + 2 ms. Default
// 0.01. Must be in [0, 0.5).
func WithDriftFactor(f float64) Option { return func(c *config) { c.driftFactor = f } }

// WithNodeTimeout bounds each request to one node. Default: a tenth of the
// lock's TTL, at least 10 ms and at most 1 s. It must leave room in the TTL:
// ttl > drift + node timeout, or the operation fails with ErrInvalidArgument.
func WithNodeTimeout(d time.Duration) Option { return func(c *config) { c.nodeTimeout = d } }

// WithRetry sets the retry policy of Acquire. Default: 10 retries, 200 ms
// apart plus up to 100 ms of random jitter (retry.Constant(10, 200ms,
// 100ms), the defaults of node-redlock, so migrating services keep their
// behaviour).
// TryAcquire never retries.
func WithRetry(p retry.Policy) Option { return func(c *config) { c.retry = p } }

// WithLogger logs what the client does at debug level and node failures at
// warn level. Tokens are logged by a short prefix only. Default: silent.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithObserver receives an observe.Event for every attempt, acquisition, extension,
// release, loss, start and stop of auto-extension, and node reply (see
// observe.Kind). Default: none.
func WithObserver(o observe.Observer) Option { return func(c *config) { c.observer = o } }

// WithFenceRetention is how long a key's fence counter outlives the key's
// last acquisition on each node. Default 24h, at least 1s. After it the
// counter is gone, and the key's next fence starts again from the nodes'
// clocks in microseconds (as after a node's data loss; see "Fences" in the
// package doc): larger than every earlier fence, since a counter starts at
// most node.MaxSeedSkew (20ms) ahead of its node's clock and grows by one
// per acquisition, as long as the nodes' clocks do not go back and a key is
// not acquired more than once a microsecond.
func WithFenceRetention(d time.Duration) Option { return func(c *config) { c.retention = d } }

// WithRequireNoEviction refuses nodes whose maxmemory-policy is not
// noeviction: an evicting server can drop a held lock's key under memory
// pressure and hand the lock to a second holder. With it every operation
// fails with ErrInvalidArgument once such a node is seen; without it (the
// default) the client logs a warning once per node.
func WithRequireNoEviction() Option { return func(c *config) { c.strict = true } }

func (c *config) validate() error {
	switch {
	case c.driftFactor < 0 || c.driftFactor >= 0.5 || c.driftFactor != c.driftFactor:
		return invalidArg("drift factor %v outside [0, 0.5)", c.driftFactor)
	case c.nodeTimeout < 0:
		return invalidArg("node timeout %s is negative", c.nodeTimeout)
	case c.retry == nil:
		return invalidArg("nil retry policy")
	case strings.ContainsAny(c.prefix, "{}"):
		return invalidArg("key prefix %q has a brace: keys are named prefix{key}", c.prefix)
	case c.retention < minRetention:
		return invalidArg("fence retention %s is under %s", c.retention, minRetention)
	case c.recovery < 0:
		return invalidArg("recovery period %s is negative", c.recovery)
	case c.lockDelay < 0:
		return invalidArg("lock delay %s is negative", c.lockDelay)
	}
	if c.owner == "" {
		return invalidArg("empty owner")
	}
	if err := node.CheckOwner(c.owner); err != nil {
		return invalidArg("%w", err)
	}
	if err := c.retry.Validate(); err != nil {
		return invalidArg("%w", err)
	}
	return nil
}

// drift is the time reserved for clock drift for a lock of this ttl.
func (c *config) drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*c.driftFactor) + driftFloor
}

// timeoutFor is the per-node request timeout for a lock of this ttl.
func (c *config) timeoutFor(ttl time.Duration) time.Duration {
	if c.nodeTimeout > 0 {
		return c.nodeTimeout
	}
	return min(max(ttl/10, minNodeTimeout), maxNodeTimeout)
}

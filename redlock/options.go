package redlock

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/quorumlock/quorumlock/extend"
	"github.com/quorumlock/quorumlock/internal/defaults"
	"github.com/quorumlock/quorumlock/internal/keyname"
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

// noRetry is TryAcquire's run of delays: none. A run of Never has no
// state, so one serves every call.
var noRetry = retry.Never().Delays()

// Option configures a Client. New fails with ErrInvalidArgument for a bad
// one (a negative duration, a value out of range).
type Option func(*config)

type config struct {
	prefix      string
	driftFactor float64
	nodeTimeout time.Duration // 0: derived from the TTL
	retry       retry.Policy
	logger      *slog.Logger
	observer    observe.Observer
	noNotify    bool // WithReleaseNotifications(false); see internal/wake
	retention   time.Duration
	strict      bool             // WithRequireNoEviction
	wallClock   func() time.Time // seeds of new fence counters; tests skew it
	owner       string           // WithOwner; ContextWithOwner overrides it per call
	recovery    time.Duration    // WithRecoveryPeriod; see internal/recovery
	lockDelay   time.Duration    // WithLockDelay: keys are kept ttl+lockDelay

	keep []extend.Option // WithKeepAlive; see extension.go
}

func defaultConfig() config {
	return config{prefix: defaultKeyPrefix, driftFactor: defaultDriftFactor, retry: defaultRetry(),
		retention: node.DefaultRetention, wallClock: time.Now, owner: defaultOwner(), recovery: defaultRecoveryPeriod}
}

// WithKeyPrefix sets the prefix of keys on the nodes, named prefix{key}; no
// braces. Default "lock:".
func WithKeyPrefix(prefix string) Option { return func(c *config) { c.prefix = prefix } }

// WithDriftFactor sets f in the drift allowance ttl*f + 2ms. Default 0.01.
func WithDriftFactor(f float64) Option { return func(c *config) { c.driftFactor = f } }

// WithNodeTimeout bounds each request to a node. Default (0) ttl/10 within
// [10ms, 1s]. ttl must exceed drift + timeout (else ErrInvalidArgument).
func WithNodeTimeout(d time.Duration) Option { return func(c *config) { c.nodeTimeout = d } }

// WithRetry sets Acquire's retry policy (ContextWithRetry overrides it for
// one call). Default retry.Constant(10, 200ms, 100ms): 10 retries 200 ms
// apart, plus up to 100 ms of jitter.
func WithRetry(p retry.Policy) Option { return func(c *config) { c.retry = p } }

// WithLogger sets the logger; tokens are logged cut short. Default: silent.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithObserver receives an observe.Event per attempt, acquisition,
// extension, release, loss and node reply. Default: none.
func WithObserver(o observe.Observer) Option { return func(c *config) { c.observer = o } }

// WithFenceRetention sets how long a fence counter outlives its key's last
// acquisition. Default 24h, at least 1s; then fences restart from the clock.
func WithFenceRetention(d time.Duration) Option { return func(c *config) { c.retention = d } }

// WithRequireNoEviction refuses (ErrInvalidArgument) a node that may evict
// lock keys. Default: a warning logged once.
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

// adminTimeout bounds each node's answer where no lock TTL gives one
// (Inspect, ForceRelease, Locks, subscriptions, Close): WithNodeTimeout, or
// 1s.
func (c *config) adminTimeout() time.Duration {
	if c.nodeTimeout > 0 {
		return c.nodeTimeout
	}
	return maxNodeTimeout
}

// What a call takes: a key that its name on the nodes can hold, and a TTL
// that this configuration leaves validity in.

// MaxKeyLength is the longest key, in bytes without the prefix, a call takes.
const MaxKeyLength = 1024

// checkKey validates the context and key of every operation on a key.
func checkKey(ctx context.Context, key string) error {
	switch {
	case ctx == nil:
		return invalidArg("nil context")
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidArgument)
	case len(key) > MaxKeyLength:
		// Not quoted whole: the error would carry it into every log line.
		return fmt.Errorf("%w: key of %d bytes (%.32q...) is longer than %d bytes", ErrInvalidArgument, len(key), key, MaxKeyLength)
	case key[0] == '}':
		// prefix{}...}: an empty Redis Cluster hash tag would split the
		// key from its counter.
		return fmt.Errorf("%w: key %q starts with '}'", ErrInvalidArgument, key)
	}
	return nil
}

// keyName is the name of key on the nodes: the prefix, then the key in
// braces, so that the key, its fence counter and its tombstones hash to one
// Redis Cluster slot (the hash tag is the key up to its first '}', never
// empty) and no key's name can be another key's counter or another
// prefix's key (prefixes have no braces).
func (c *config) keyName(key string) string { return keyname.Of(c.prefix, key) }

// checkTTL refuses a TTL too short for the drift and the node timeout it
// implies, or longer than the recovery period.
func (c *config) checkTTL(ttl time.Duration) error {
	if ttl <= 0 {
		return invalidArg("ttl %s is not positive", ttl)
	}
	if need := c.drift(ttl) + c.timeoutFor(ttl); ttl <= need {
		return invalidArg("ttl %s leaves no validity after drift %s and node timeout %s", ttl, c.drift(ttl), c.timeoutFor(ttl))
	}
	if c.recovery > 0 && ttl > c.recovery {
		return invalidArg("ttl %s is longer than the recovery period %s (raise it with WithRecoveryPeriod)", ttl, c.recovery)
	}
	return nil
}

// WithReleaseNotifications: on (the default), each release costs one
// PUBLISH per node and waiters wake on their holder's release; off (say, an
// ACL forbids PUBLISH), waiters poll.
func WithReleaseNotifications(on bool) Option {
	return func(c *config) { c.noNotify = !on }
}

// WithOwner names who takes the locks, as Inspect, Locks and TookOver report
// it. Default "host/pid/program"; 1 to 256 bytes, no control characters.
func WithOwner(owner string) Option { return func(c *config) { c.owner = owner } }

// WithRecoveryPeriod sets how long a node that lost its data sits out (or a
// longer HoldAtLeast's hold), by its own clock. Default 10 minutes; 0: off;
// at least any client's longest TTL (longer TTLs: ErrInvalidArgument).
func WithRecoveryPeriod(d time.Duration) Option {
	return func(c *config) { c.recovery = d }
}

// WithLockDelay keeps a key of this client whose lock expired unreleased
// unavailable for d more (Chubby's lock-delay). Default 0.
func WithLockDelay(d time.Duration) Option {
	return func(c *config) { c.lockDelay = d }
}

// WithKeepAlive sets the keep-alive's extend options. Defaults for a ttl:
// threshold max(500ms, ttl/3) up to ttl/2; safety margin max(10ms, ttl/10)
// up to threshold/2; retry interval max(10ms, threshold/5); tick 50ms.
func WithKeepAlive(opts ...extend.Option) Option {
	return func(c *config) { c.keep = append(c.keep, opts...) }
}

// Lock-delay: a holder that vanished (crashed, partitioned, killed) may
// still be finishing its work when its lock expires. With a lock-delay, its
// key is not granted again until d after the holder's lock expired: the
// nodes keep the key d longer than the lock's TTL (acquisitions,
// extensions and re-assertions ask for TTL+d), while the holder's own
// validity still counts from its TTL alone. A release deletes the key, so
// a clean release frees it at once; the trail is untouched, so the next
// holder still learns it took over (Lock.TookOver). The delay is the
// holder's: a key is delayed by the lock-delay of the client that held it.

// nodeTTL is how long the nodes keep a lock of ttl: its TTL and the delay.
func (c *config) nodeTTL(ttl time.Duration) time.Duration { return ttl + c.lockDelay }

// defaultOwner is host/pid/program, with control characters (which owners
// may not have) replaced, cut to the longest owner.
func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	prog := "unknown"
	if len(os.Args) > 0 && os.Args[0] != "" {
		prog = filepath.Base(os.Args[0])
	}
	o := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(host+"/"+strconv.Itoa(os.Getpid())+"/"+prog, "?"))
	if len(o) > node.MaxOwnerLen {
		o = strings.ToValidUTF8(o[:node.MaxOwnerLen], "") // drops a rune cut in half
	}
	return o
}

// ownerKey is the context key of ContextWithOwner.
type ownerKey struct{}

// ContextWithOwner returns ctx with an owner that acquisitions made with it
// record instead of WithOwner's (same rules; ErrInvalidArgument otherwise).
func ContextWithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// ownerOf is the owner an acquisition made with ctx records.
func (c *config) ownerOf(ctx context.Context) string {
	if o, ok := ctx.Value(ownerKey{}).(string); ok {
		return o
	}
	return c.owner
}

// checkContextOwner validates the owner of ContextWithOwner, if any.
func checkContextOwner(ctx context.Context) error {
	o, ok := ctx.Value(ownerKey{}).(string)
	if !ok {
		return nil
	}
	if o == "" {
		return invalidArg("empty owner")
	}
	if err := node.CheckOwner(o); err != nil {
		return invalidArg("%v", err)
	}
	return nil
}

// retryKey is the context key of ContextWithRetry.
type retryKey struct{}

// ContextWithRetry makes Acquire and Do (and the kinds built on them)
// retry per p for calls with this ctx, instead of WithRetry's policy. A nil
// or invalid p fails the call with ErrInvalidArgument.
func ContextWithRetry(ctx context.Context, p retry.Policy) context.Context {
	return context.WithValue(ctx, retryKey{}, retryOption{p})
}

// retryOption boxes the policy of ContextWithRetry, so that a nil policy
// is told from none.
type retryOption struct{ p retry.Policy }

// retryOf is the retry policy of an Acquire made with ctx.
func (c *config) retryOf(ctx context.Context) (retry.Policy, error) {
	if ctx == nil { // refused by acquire's checks
		return c.retry, nil
	}
	o, ok := ctx.Value(retryKey{}).(retryOption)
	if !ok {
		return c.retry, nil
	}
	if o.p == nil {
		return nil, invalidArg("nil retry policy")
	}
	if err := o.p.Validate(); err != nil {
		return nil, invalidArg("%w", err)
	}
	return o.p, nil
}

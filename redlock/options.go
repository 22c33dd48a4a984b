package redlock

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

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

// noRetry is TryAcquire's run of delays: none. A run of Never has no
// state, so one serves every call.
var noRetry = retry.Never().Delays()

// Option configures a Client. Options are validated once, by New.
type Option func(*config)

type config struct {
	prefix      string
	driftFactor float64
	nodeTimeout time.Duration // 0: derived from the TTL
	retry       retry.Policy
	logger      *slog.Logger
	observer    observe.Observer
	noNotify    bool // WithReleaseNotifications(false); see notify.go
	retention   time.Duration
	strict      bool             // WithRequireNoEviction
	wallClock   func() time.Time // seeds of new fence counters; tests skew it
	owner       string           // WithOwner; ContextWithOwner overrides it per call
	recovery    time.Duration    // WithRecoveryPeriod; see recovery.go
	lockDelay   time.Duration    // WithLockDelay: keys are kept ttl+lockDelay

	keep []extend.Option // WithKeepAlive; see extend.go
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
// 0 keeps the default; a negative timeout is refused by New.
func WithNodeTimeout(d time.Duration) Option { return func(c *config) { c.nodeTimeout = d } }

// WithRetry sets the retry policy of Acquire (ContextWithRetry overrides it
// per call). Default: 10 retries, 200 ms
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

// adminTimeout bounds each node's answer where no lock TTL gives one
// (Inspect, ForceRelease, Locks, subscriptions, Close): WithNodeTimeout, or
// 1s.
func (c *config) adminTimeout() time.Duration {
	if c.nodeTimeout > 0 {
		return c.nodeTimeout
	}
	return maxNodeTimeout
}

// WithReleaseNotifications turns waiting without polling on (true, the
// default) or off (false).
//
// On: Release (and the undo of a failed attempt) announces the release on
// a Pub/Sub channel of each node where it deleted the key (the client's
// key prefix + "released", e.g. "lock:released"; the message is the
// release id and the key's full name), whether or not anyone waits: one
// PUBLISH per node and release, so that an Acquire that finds the key
// held writes nothing to it (a value it did not write is never changed).
// Every subscribed Client receives every release of its prefix and drops
// those of keys it does not wait for. The Acquire that lost to another holder waits for that announcement,
// for the holder's remaining TTL or for the retry policy's delay,
// whichever comes first. An Acquire joins the waiters before its first
// attempt, so a release that lands while an attempt is in flight is not
// missed. The Client keeps one subscription per node for all its waiters
// (opened by its first Acquire, which waits up to a node timeout for it;
// closed by Client.Close or after a minute without waiters), and wakes its waiters of one key one at a
// time, in arrival order. A waiter wakes only on the release of the holder
// that beat its last attempt (any release after a split vote; after an
// attempt that found no quorum, only that of a holder the answering nodes
// named, since the others may only have been slow): the undo of another
// client's lost attempt wakes nobody, so waiters of two clients cannot wake
// each other in a loop. The loser of a split vote with a waiter is woken
// early by the winner's release. A waiter woken by the holder's release
// that loses to the same holder (the release has not reached a majority
// yet) looks again after 2, 4 and 6 round trips rather than sleeping.
// Nodes that cannot subscribe (a Redis node over a bare redis.Scripter)
// still announce and simply do not wake anyone early.
//
// Off: releases are not announced (use it where an ACL forbids PUBLISH, or
// to keep a client's traffic exactly as before), and waiters sleep the retry
// policy's delays, bounded by the holder's remaining TTL.
func WithReleaseNotifications(on bool) Option {
	return func(c *config) { c.noNotify = !on }
}

// WithOwner names who takes the client's locks: every acquisition records
// it on the nodes with the token and the time (in the same script call, no
// extra round trip), and Inspect, Locks and TookOver report it. Default:
// "host/pid/program" of this process.
// Use a worker id, a pod name, or anything that tells an operator who
// holds a lock; at most node.MaxOwnerLen (256) bytes of UTF-8 without
// control characters, not empty (ErrInvalidArgument otherwise, from New).
func WithOwner(owner string) Option { return func(c *config) { c.owner = owner } }

// WithRecoveryPeriod sets how long a node that lost its lock data sits out
// of acquisitions of each key it lost (see "Data loss" in
// the package doc). Default 10 minutes. It must be at
// least the longest TTL any client of these nodes uses: this client refuses
// a TTL longer than the period with an error wrapping
// ErrInvalidArgument, but it cannot see the TTLs of other clients. 0 turns
// recovery off (the nodes' operators must then delay restarts themselves).
// Negative is refused by New. A node that never received a key's first
// acquisition cannot be told from one that lost the key: it sits out of
// that key for the period too.
func WithRecoveryPeriod(d time.Duration) Option {
	return func(c *config) { c.recovery = d }
}

// WithLockDelay sets how long after the expiry of one of this client's
// locks that was not released its key stays unavailable to everyone
// (Chubby's and Consul's lock-delay). Default 0 (none). Inspect's
// Remaining and the TTL waiters see include the delay. Negative is
// refused by New with ErrInvalidArgument.
func WithLockDelay(d time.Duration) Option {
	return func(c *config) { c.lockDelay = d }
}

// WithKeepAlive sets the options of the watchdog that extends kept locks
// (Lock.KeepAlive, Client.Do, TryDo, Hold): extend.WithThreshold,
// extend.WithSafetyMargin, extend.WithRetryInterval, extend.WithTick,
// extend.WithMaxHold. The defaults, for a lock of time to live ttl, are
//
//	threshold      max(500ms, ttl/3), at most ttl/2
//	safety margin  max(10ms, ttl/10), at most threshold/2
//	retry interval max(10ms, threshold/5)
//	tick           50ms
//	max hold       none
//
// A kept lock is extended when less than the threshold of its validity is
// left; one that cannot be extended is declared lost the safety margin
// before its validity ends, so that the work has that long to stop while
// the lock still excludes others. The client's logger is the watchdog's.
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

// ContextWithOwner returns a copy of ctx with which Acquire, TryAcquire, Do
// and TryDo record owner instead of the client's WithOwner, for callers that
// take locks on behalf of several parties with one Client (package election
// records a candidate's value this way). The owner
// follows WithOwner's rules; a bad one fails the acquisition with
// ErrInvalidArgument before anything is sent.
func ContextWithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// ownerOf is the owner an acquisition made with ctx records.
func (c *Client) ownerOf(ctx context.Context) string {
	if o, ok := ctx.Value(ownerKey{}).(string); ok {
		return o
	}
	return c.cfg.owner
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

// ContextWithRetry returns a copy of ctx with which Acquire and Do (and the
// lock kinds built on them) retry per p instead of the client's WithRetry
// policy: a per-call policy, as redsync sets per mutex and redislock per
// Obtain. retry.Never() makes one attempt, as TryAcquire does, but
// reports contention as an error. A nil or invalid policy fails the call
// with ErrInvalidArgument before anything is sent. TryAcquire and TryDo
// never retry.
func ContextWithRetry(ctx context.Context, p retry.Policy) context.Context {
	return context.WithValue(ctx, retryKey{}, retryOption{p})
}

// retryOption boxes the policy of ContextWithRetry, so that a nil policy
// is told from none.
type retryOption struct{ p retry.Policy }

// retryOf is the retry policy of an Acquire made with ctx.
func (c *Client) retryOf(ctx context.Context) (retry.Policy, error) {
	if ctx == nil { // refused by acquire's checks
		return c.cfg.retry, nil
	}
	o, ok := ctx.Value(retryKey{}).(retryOption)
	if !ok {
		return c.cfg.retry, nil
	}
	if o.p == nil {
		return nil, invalidArg("nil retry policy")
	}
	if err := o.p.Validate(); err != nil {
		return nil, invalidArg("%w", err)
	}
	return o.p, nil
}

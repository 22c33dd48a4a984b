package statuslock

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

// Locker takes the status locks of services on a redlock client. It is safe
// for concurrent use; create one per process and share it.
type Locker struct {
	client *redlock.Client
	cfg    config
}

// New returns a Locker on client. The client's nodes, key prefix, drift,
// node timeouts, retry policy (unless WithRetry) and auto-extension options
// (redlock.WithKeepAlive) apply.
func New(client *redlock.Client, opts ...Option) (*Locker, error) {
	if client == nil {
		return nil, invalidArg("nil redlock client")
	}
	cfg, err := apply(defaultConfig(), opts)
	if err != nil {
		return nil, err
	}
	return &Locker{client: client, cfg: cfg}, nil
}

// Client is the redlock client the Locker locks with.
func (l *Locker) Client() *redlock.Client { return l.client }

// Key is the lock key of a service with the Locker's prefix (the redlock
// client prepends its own prefix on the nodes).
func (l *Locker) Key(serviceID string) string { return l.cfg.prefix + serviceID }

// call validates the arguments shared by every call and resolves its
// options.
func (l *Locker) call(ctx context.Context, serviceID string, opts []Option) (config, error) {
	switch {
	case l == nil:
		return config{}, invalidArg("nil Locker")
	case ctx == nil:
		return config{}, invalidArg("nil context")
	case serviceID == "":
		return config{}, invalidArg("empty service id")
	}
	return apply(l.cfg, opts)
}

// retrying calls attempt until it succeeds, fails for good, or the policy
// gives up. attempt reports busy (contention or unreachable nodes: try
// again) or a final outcome.
func retrying(ctx context.Context, cfg config, attempt func() (retryable bool, err error)) error {
	b := cfg.retry.Delays()
	for {
		retryable, err := attempt()
		if err == nil || !retryable {
			return err
		}
		if ctx.Err() != nil {
			return withCause(ctx, err)
		}
		delay, ok := b.Next()
		if !ok {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return withCause(ctx, err)
		}
	}
}

// withCause makes sure err wraps the context's cancellation.
func withCause(ctx context.Context, err error) error {
	cause := context.Cause(ctx)
	if errors.Is(err, cause) || errors.Is(err, ctx.Err()) {
		return err
	}
	return errors.Join(err, cause)
}

// busy reports errors after which another attempt may succeed.
func busy(err error) bool {
	return errors.Is(err, redlock.ErrNotAcquired) || errors.Is(err, redlock.ErrQuorumUnreachable)
}

// Lock is a held status lock of one service, from Acquire or TryAcquire.
// It is safe for concurrent use.
type Lock struct {
	serviceID string
	lock      *redlock.Lock
	logger    *slog.Logger
}

// Acquire takes the status lock of serviceID, retrying per the retry policy
// while it is busy. The caller must Release it (and Extend it if the work
// can outlast the TTL). Errors wrap ErrNotAcquired, ErrQuorumUnreachable,
// ErrInvalidArgument or ctx.Err().
func (l *Locker) Acquire(ctx context.Context, serviceID string, opts ...Option) (*Lock, error) {
	return l.acquire(ctx, serviceID, opts, false)
}

// TryAcquire makes a single attempt at the status lock of serviceID: an
// error wrapping ErrNotAcquired when another holder has it.
func (l *Locker) TryAcquire(ctx context.Context, serviceID string, opts ...Option) (*Lock, error) {
	return l.acquire(ctx, serviceID, opts, true)
}

func (l *Locker) acquire(ctx context.Context, serviceID string, opts []Option, once bool) (*Lock, error) {
	cfg, err := l.call(ctx, serviceID, opts)
	if err != nil {
		return nil, err
	}
	lock, err := l.lock(ctx, cfg, serviceID, once)
	if err != nil {
		return nil, err
	}
	return &Lock{serviceID: serviceID, lock: lock, logger: cfg.logger}, nil
}

// lock takes the status lock of serviceID: a single attempt (once), the
// redlock client's Acquire (no WithRetry: the client's policy, its waits for
// the holder's expiry and its release notifications), or single attempts
// spaced by the WithRetry policy.
func (l *Locker) lock(ctx context.Context, cfg config, serviceID string, once bool) (*redlock.Lock, error) {
	key := cfg.prefix + serviceID
	var (
		lock *redlock.Lock
		err  error
	)
	switch {
	case once:
		lock, err = l.client.TryAcquire(ctx, key, cfg.ttl)
	case cfg.retry == nil:
		lock, err = l.client.Acquire(ctx, key, cfg.ttl)
	default:
		err = retrying(ctx, cfg, func() (bool, error) {
			var err error
			lock, err = l.client.TryAcquire(ctx, key, cfg.ttl)
			return busy(err), err
		})
	}
	if err != nil {
		if once && errors.Is(err, redlock.ErrNotAcquired) {
			cfg.logger.DebugContext(ctx, "statuslock: lock busy", "service", serviceID)
		} else {
			cfg.logger.WarnContext(ctx, "statuslock: failed to acquire lock", "service", serviceID, "err", err)
		}
		return nil, wrapLockErr("acquire", serviceID, err)
	}
	cfg.logger.DebugContext(ctx, "statuslock: acquired lock", "service", serviceID, "fence", lock.Fence(), "ttl", cfg.ttl)
	return lock, nil
}

// ServiceID is the service whose status the lock guards.
func (h *Lock) ServiceID() string { return h.serviceID }

// Fence is the lock's fencing token: larger than that of every earlier
// holder of this service's lock. Pass it to Store.Set with every write.
func (h *Lock) Fence() uint64 { return h.lock.Fence() }

// ValidUntil is the instant (on this process's monotonic clock) after which
// another process may hold the lock.
func (h *Lock) ValidUntil() time.Time { return h.lock.ValidUntil() }

// Remaining is the validity left, zero once expired or released.
func (h *Lock) Remaining() time.Duration { return h.lock.Remaining() }

// Extend makes the lock valid for ttl more, counted from now. Errors wrap
// ErrLockLost (the lock is over), ErrQuorumUnreachable (still valid until
// ValidUntil; Extend may be tried again), or ErrInvalidArgument.
func (h *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if ctx == nil {
		return invalidArg("nil context")
	}
	if ttl <= 0 {
		return invalidArg("ttl %s is not positive", ttl)
	}
	if err := h.lock.Extend(ctx, ttl); err != nil {
		return wrapLockErr("extend", h.serviceID, err)
	}
	h.logger.DebugContext(ctx, "statuslock: extended lock", "service", h.serviceID, "ttl", ttl)
	return nil
}

// Done is closed once when the lock ends: when it is lost (an extension
// found it gone, or its validity ran out without one) or when Release
// succeeded. Err then says which. As with redlock.Lock.Done, a lock kept
// alive by the client (redlock.WithKeepAlive) is declared lost a safety
// margin before its validity ends.
func (h *Lock) Done() <-chan struct{} { return h.lock.Done() }

// Err is nil while the lock is held. Once Done is closed it is why the lock
// ended: an error wrapping ErrLockLost (and redlock.ErrLockLost) when it
// was lost, or one wrapping redlock.ErrReleased after Release.
func (h *Lock) Err() error {
	return wrapLockErr("lock", h.serviceID, h.lock.Err())
}

// Context returns a context derived from parent that is cancelled when the
// lock ends, with Err as its cause (context.Cause): errors.Is(cause,
// ErrLockLost) when the lock was lost. Call cancel when done with it, as
// with context.WithCancel. A nil parent gives a context cancelled at once
// with a cause wrapping ErrInvalidArgument.
func (h *Lock) Context(parent context.Context) (context.Context, context.CancelFunc) {
	if parent == nil {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(invalidArg("nil context"))
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(parent)
	if h.lock.Err() != nil {
		cancel(h.Err())
		return ctx, func() { cancel(context.Canceled) }
	}
	lockCtx, stopLock := h.lock.Context(context.Background())
	stop := context.AfterFunc(lockCtx, func() { cancel(h.Err()) })
	return ctx, func() {
		stop()
		stopLock()
		cancel(context.Canceled)
	}
}

// Release frees the lock on every node. Errors wrap ErrLockLost (it had
// expired or was already released) or ErrQuorumUnreachable; in either case
// the lock's keys expire with its TTL, so a failed release needs no repair.
func (h *Lock) Release(ctx context.Context) error {
	if ctx == nil {
		return invalidArg("nil context")
	}
	if err := h.lock.Release(ctx); err != nil {
		return wrapLockErr("release", h.serviceID, err)
	}
	h.logger.DebugContext(ctx, "statuslock: lock released", "service", h.serviceID)
	return nil
}

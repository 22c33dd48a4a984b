package multilock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/internal/hold"
	"github.com/quorumlock/quorumlock/redlock"
)

// MaxKeys bounds the keys of one set: they are taken one quorum round
// after the other.
const MaxKeys = 1024

// Lock is a set of keys held as one: one redlock.Lock per key, each kept
// alive by the client's watchdog from the moment it was taken until
// Release. It is safe to use from several goroutines.
type Lock struct {
	keys  []string        // sorted, distinct
	locks []*redlock.Lock // locks[i] holds keys[i]

	ctx    context.Context // ends with the set, with its cause
	cancel context.CancelCauseFunc
	stops  []func() bool // stop the loss watchers
	mu     sync.Mutex    // serializes Release and the release after a loss
}

// Acquire takes every key of keys, or none: in canonical order (sorted,
// duplicates dropped), one after the other, each with the client's Acquire
// (its retry policy and release notifications). Every key taken is kept
// alive at once, so that it does not expire while a later one is awaited.
// If a key cannot be taken, the keys already taken are released and the
// key's error is returned: it wraps redlock.ErrNotAcquired,
// redlock.ErrQuorumUnreachable, redlock.ErrInvalidArgument (no keys, more
// than MaxKeys, a bad key or ttl, a nil client) or ctx's error; or
// redlock.ErrLockLost when a key taken earlier was lost while a later one
// was awaited (its keep-alive failed: too many nodes down).
func Acquire(ctx context.Context, client *redlock.Client, keys []string, ttl time.Duration) (*Lock, error) {
	return acquire(ctx, client, keys, ttl, client.Acquire)
}

// TryAcquire is Acquire with a single attempt per key (the client's
// TryAcquire): when one key is held by another, the keys taken so far are
// released and the error wraps redlock.ErrNotAcquired.
func TryAcquire(ctx context.Context, client *redlock.Client, keys []string, ttl time.Duration) (*Lock, error) {
	return acquire(ctx, client, keys, ttl, client.TryAcquire)
}

type acquireFunc func(ctx context.Context, key string, ttl time.Duration) (*redlock.Lock, error)

func acquire(ctx context.Context, client *redlock.Client, keys []string, ttl time.Duration, take acquireFunc) (*Lock, error) {
	sorted, err := canonical(keys)
	switch {
	case err != nil:
		return nil, err
	case client == nil:
		return nil, invalid("nil client")
	case ctx == nil:
		return nil, invalid("nil context")
	}
	m := &Lock{keys: sorted}
	m.ctx, m.cancel = context.WithCancelCause(context.Background())
	// The wait for a later key ends when a key taken earlier is lost.
	actx, stop := m.Context(ctx)
	defer stop()
	for _, k := range sorted {
		l, err := take(actx, k, ttl)
		if err == nil && m.Err() == nil {
			l.KeepAlive() // stopped by l.Release
			m.mu.Lock()
			m.locks = append(m.locks, l)
			m.stops = append(m.stops, context.AfterFunc(ctxOf(l), func() { m.lost(l) }))
			m.mu.Unlock()
			continue
		}
		if err == nil { // won, but an earlier key was lost meanwhile
			_ = l.Release(context.WithoutCancel(ctx))
		}
		if cause := m.Err(); cause != nil {
			err = cause // wraps redlock.ErrLockLost
		}
		m.abort(context.WithoutCancel(ctx), err)
		return nil, fmt.Errorf("multilock: key %q of %d: %w", k, len(sorted), err)
	}
	return m, nil
}

// abort ends a set that could not be completed and releases what it took.
func (m *Lock) abort(ctx context.Context, cause error) {
	for _, stop := range m.stops {
		stop()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cancel(cause)
	_ = m.releaseAll(ctx)
}

// canonical sorts keys and drops duplicates, after checking them.
func canonical(keys []string) ([]string, error) {
	switch {
	case len(keys) == 0:
		return nil, invalid("no keys")
	case len(keys) > MaxKeys:
		return nil, invalid("%d keys, at most %d", len(keys), MaxKeys)
	}
	for _, k := range keys {
		if k == "" || k[0] == '}' {
			return nil, invalid("key %q: empty or starts with '}'", k)
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(keys))), nil
}

// ctxOf is a context that ends when l does.
func ctxOf(l *redlock.Lock) context.Context {
	ctx, _ := l.Context(context.Background()) // lives as long as l: ends with it
	return ctx
}

// lost ends the set when one of its locks ended without the set's Release,
// and releases the others so that their keys are free at once.
func (m *Lock) lost(l *redlock.Lock) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Err() != nil || !errors.Is(l.Err(), redlock.ErrLockLost) {
		return // the set ended before (released, or another key lost)
	}
	m.cancel(fmt.Errorf("multilock: key %q: %w", l.Key(), l.Err()))
	_ = m.releaseAll(context.Background())
}

// releaseAll releases every lock of the set at once and joins the errors
// of those that had not ended. An ended lock (lost, or released by an
// earlier call) is released too: that stops its keep-alive and deletes
// what is left of its keys; its ErrLockLost is expected.
func (m *Lock) releaseAll(ctx context.Context) error {
	errs := make([]error, len(m.locks))
	var wg sync.WaitGroup
	for i, l := range m.locks {
		ended := l.Err() != nil
		wg.Go(func() {
			if err := l.Release(ctx); !ended {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// errNilLock is what the methods of a nil *Lock (a failed Acquire's)
// return: they never panic, so a Release deferred before Acquire's error is
// checked is harmless.
var errNilLock = fmt.Errorf("multilock: nil *Lock (the Acquire that returned it failed): %w", redlock.ErrLockLost)

// closedChan is the Done of a nil *Lock.
var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// Keys are the set's keys, sorted and distinct.
func (m *Lock) Keys() []string {
	if m == nil {
		return nil
	}
	return slices.Clone(m.keys)
}

// Fence is the fence of key's lock (see redlock.Lock.Fence), or 0 when key
// is not in the set.
func (m *Lock) Fence(key string) uint64 {
	if m == nil {
		return 0
	}
	if i, ok := slices.BinarySearch(m.keys, key); ok {
		return m.locks[i].Fence()
	}
	return 0
}

// ValidUntil is the earliest ValidUntil of the set's locks: the set is
// held until then at least.
func (m *Lock) ValidUntil() time.Time {
	if m == nil {
		return time.Time{}
	}
	vu := m.locks[0].ValidUntil()
	for _, l := range m.locks[1:] {
		if t := l.ValidUntil(); t.Before(vu) {
			vu = t
		}
	}
	return vu
}

// Done is closed once when the set ends: when any of its keys is lost (its
// lock's Done closed with redlock.ErrLockLost: the set is then lost as a
// whole, and its other keys are released), or after Release.
func (m *Lock) Done() <-chan struct{} {
	if m == nil {
		return closedChan
	}
	return m.ctx.Done()
}

// Err is nil while the set is held; after Done, why it ended: an error
// wrapping redlock.ErrLockLost that names the lost key, or
// redlock.ErrReleased.
func (m *Lock) Err() error {
	if m == nil {
		return errNilLock
	}
	if m.ctx.Err() == nil {
		return nil
	}
	return context.Cause(m.ctx)
}

// Context returns a context derived from parent that is cancelled when the
// set ends, with Err as its cause. Call cancel when done with it.
func (m *Lock) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	if m == nil {
		cancel(errNilLock)
		return ctx, func() { cancel(context.Canceled) }
	}
	stop := context.AfterFunc(m.ctx, func() { cancel(context.Cause(m.ctx)) })
	return ctx, func() {
		stop()
		cancel(context.Canceled)
	}
}

// Release releases every key of the set (on all nodes at once) and ends it.
// It returns nil when every key was released while held; an error wrapping
// redlock.ErrLockLost when the set had been lost (or a key turned out lost
// now: the other keys are released anyway); redlock.ErrQuorumUnreachable
// when too many nodes failed (the keys expire with their TTL).
func (m *Lock) Release(ctx context.Context) error {
	if m == nil {
		return errNilLock
	}
	for _, stop := range m.stops {
		stop()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.Err(); err != nil {
		if errors.Is(err, redlock.ErrLockLost) {
			return err
		}
		return fmt.Errorf("multilock: released before: %w", redlock.ErrLockLost)
	}
	for _, l := range m.locks { // lost just now, before its watcher ran
		if errors.Is(l.Err(), redlock.ErrLockLost) {
			m.cancel(fmt.Errorf("multilock: key %q: %w", l.Key(), l.Err()))
			_ = m.releaseAll(ctx)
			return m.Err()
		}
	}
	err := m.releaseAll(ctx)
	switch {
	case err == nil:
		m.cancel(redlock.ErrReleased)
		return nil
	case errors.Is(err, redlock.ErrLockLost):
		m.cancel(fmt.Errorf("multilock: %w", err))
		return m.Err()
	}
	return fmt.Errorf("multilock: %w", err)
}

// Extend makes every key of the set valid for ttl more, counted from the
// start of this call: each key as redlock.Lock.Extend extends one lock (a
// majority that still holds our token, answering before the key's validity
// ends), all keys at once. It returns nil only when every key was extended;
// ValidUntil is then the new validity of the set. The keys stay kept alive
// by the watchdog, now with ttl.
//
// Errors:
//   - redlock.ErrLockLost when the set had ended (released, or lost), or a
//     key turns out lost now (a majority says it is not ours, or its
//     validity ended): the set is then lost as a whole, as after any loss
//     (Done closes, Err names the key, the other keys are released);
//   - redlock.ErrQuorumUnreachable, or ctx's error, when some keys were not
//     extended (too many nodes failed, or ctx ended first): the set is still
//     held until ValidUntil, the earliest validity of its keys, extended or
//     not, and Extend may be tried again;
//   - redlock.ErrInvalidArgument for a bad ttl or a nil ctx.
func (m *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if ctx == nil {
		return invalid("nil context")
	}
	if err := m.Err(); err != nil {
		return fmt.Errorf("multilock: extend: the set has ended: %w", ended(err))
	}
	errs := make([]error, len(m.locks))
	var wg sync.WaitGroup
	for i, l := range m.locks {
		wg.Go(func() { errs[i] = l.Extend(ctx, ttl) })
	}
	wg.Wait()
	var failed []error
	var lost error
	for i, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, redlock.ErrLockLost):
			lost = fmt.Errorf("multilock: key %q: %w", m.keys[i], err)
		case errors.Is(err, redlock.ErrInvalidArgument):
			return fmt.Errorf("multilock: extend: %w", err) // the same for every key
		default:
			failed = append(failed, fmt.Errorf("key %q: %w", m.keys[i], err))
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if lost != nil && m.Err() == nil { // before its loss watcher ran
		m.cancel(lost)
		_ = m.releaseAll(context.WithoutCancel(ctx))
	}
	if err := m.Err(); err != nil { // lost, or ended during the round
		return fmt.Errorf("multilock: extend: %w", ended(err))
	}
	if len(failed) > 0 {
		return fmt.Errorf("multilock: extend: %d of %d keys not extended, the set is held until ValidUntil: %w", len(failed), len(m.keys), errors.Join(failed...))
	}
	return nil
}

// ended is why a set ended, as an error that wraps redlock.ErrLockLost: a
// released set is no longer ours either.
func ended(cause error) error {
	if errors.Is(cause, redlock.ErrLockLost) {
		return cause
	}
	return fmt.Errorf("%w: %w", redlock.ErrLockLost, cause)
}

// Do runs fn while holding every key of keys: it acquires the set (as
// Acquire), gives fn a context cancelled with a cause wrapping
// redlock.ErrLockLost when any key is lost, and releases the set when fn
// returns or panics. FromContext(ctx) returns the set (for its fences). It
// returns the acquisition's error (fn did not run), or fn's error joined
// with the loss or a failed release.
func Do(ctx context.Context, client *redlock.Client, keys []string, ttl time.Duration, fn func(ctx context.Context) error) error {
	return doSet.Do(ctx, func(ctx context.Context) (*Lock, error) { return Acquire(ctx, client, keys, ttl) }, fn)
}

// TryDo is Do with TryAcquire: when a key is held by another it returns
// (false, nil) without running fn.
func TryDo(ctx context.Context, client *redlock.Client, keys []string, ttl time.Duration, fn func(ctx context.Context) error) (ran bool, err error) {
	return doSet.TryDo(ctx, func(ctx context.Context) (*Lock, error) { return TryAcquire(ctx, client, keys, ttl) }, fn)
}

// doSet is Do and TryDo for a set. Its keys keep themselves alive from
// their acquisition.
var doSet = hold.Kind[*Lock]{NotAcquired: redlock.ErrNotAcquired, Invalid: invalid, Hold: (*Lock).hold}

func (m *Lock) hold(ctx context.Context, fn func(context.Context) error) (fnErr, lostErr, releaseErr error) {
	return hold.Run(ctx, context.WithValue(ctx, setKey{}, m), m, redlock.ErrLockLost, fn)
}

type setKey struct{}

// FromContext returns the set that Do or TryDo holds for the fn that got
// ctx.
func FromContext(ctx context.Context) (*Lock, bool) {
	m, ok := ctx.Value(setKey{}).(*Lock)
	return m, ok
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("multilock: %w: "+format, append([]any{redlock.ErrInvalidArgument}, args...)...)
}

package semaphore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/internal/hold"
	"github.com/quorumlock/quorumlock/internal/keyname"
	"github.com/quorumlock/quorumlock/redlock"
)

// MaxPermits bounds N: an attempt tries up to N slots one after the other,
// and a blocked Acquire waits on all N at once.
const MaxPermits = 256

// Semaphore hands out at most N permits of one name at a time. It is a
// value over a redlock.Client and holds no state of its own: any number of
// Semaphores of the same name and N, in any processes, share the permits.
// It is safe for concurrent use.
type Semaphore struct {
	client *redlock.Client
	name   string
	n      int
}

// Permit is one of a semaphore's N permits: the mutex of one slot. Its
// Fence, Done, Err, Context, KeepAlive, Extend, Hold and Release are the
// slot lock's (see redlock.Lock); Key is the slot's key (SlotKey).
type Permit struct {
	*redlock.Lock
	slot int
}

// Release releases the permit (see redlock.Lock.Release). On a nil
// *Permit (what a failed Acquire returns) it returns an error wrapping
// redlock.ErrLockLost, so a Release deferred before Acquire's error is
// checked is harmless.
func (p *Permit) Release(ctx context.Context) error {
	if p == nil {
		return errNilPermit
	}
	return p.Lock.Release(ctx)
}

// Extend extends the permit (see redlock.Lock.Extend). On a nil *Permit it
// returns an error wrapping redlock.ErrLockLost.
func (p *Permit) Extend(ctx context.Context, ttl time.Duration) error {
	if p == nil {
		return errNilPermit
	}
	return p.Lock.Extend(ctx, ttl)
}

// errNilPermit is what Release and Extend of a nil *Permit return.
var errNilPermit = fmt.Errorf("semaphore: nil *Permit (the Acquire that returned it failed): %w", redlock.ErrLockLost)

// Slot is the permit's slot, in [0, N). Its fence grows with each
// acquisition of that slot, not across slots.
func (p *Permit) Slot() int { return p.slot }

// New returns the semaphore name with n permits over client. Errors wrap
// redlock.ErrInvalidArgument: a nil client, an empty name or one with '{'
// or '}', a name whose slot keys (SlotKey) are longer than
// redlock.MaxKeyLength, n < 1 or n > MaxPermits.
func New(client *redlock.Client, name string, n int) (*Semaphore, error) {
	switch {
	case client == nil:
		return nil, invalid("nil client")
	case name == "":
		return nil, invalid("empty name")
	case strings.ContainsAny(name, "{}"):
		return nil, invalid("name %q contains '{' or '}'", name)
	case n < 1 || n > MaxPermits:
		return nil, invalid("%d permits: want 1 to %d", n, MaxPermits)
	case len(SlotKey(name, n-1)) > redlock.MaxKeyLength:
		return nil, invalid("name of %d bytes: its slot keys are longer than %d bytes", len(name), redlock.MaxKeyLength)
	}
	return &Semaphore{client: client, name: name, n: n}, nil
}

// SlotKey is the client key of slot i of the semaphore name, as
// Client.Inspect and redlock ls take it: "name}:slot:i". On the nodes it is
// prefix{name}:slot:i}, so that the hash tag of every slot is the name and
// all slots of one semaphore live in one Redis Cluster slot.
func SlotKey(name string, i int) string { return keyname.Grouped(name, ":slot:"+strconv.Itoa(i)) }

// N is the number of permits.
func (s *Semaphore) N() int { return s.n }

// TryAcquire makes one attempt on each slot, in a random order, and
// returns the first permit it gets. It returns an error wrapping
// redlock.ErrNotAcquired when all N are held, redlock.ErrQuorumUnreachable
// when too many nodes failed, redlock.ErrInvalidArgument (a bad ttl), or
// ctx's error.
func (s *Semaphore) TryAcquire(ctx context.Context, ttl time.Duration) (*Permit, error) {
	if ctx == nil {
		return nil, invalid("nil context")
	}
	var lost error // the last attempt that lost to a holder
	var failed error
	for _, i := range rand.Perm(s.n) {
		l, err := s.client.TryAcquire(ctx, SlotKey(s.name, i), ttl)
		switch {
		case err == nil:
			return &Permit{Lock: l, slot: i}, nil
		case errors.Is(err, redlock.ErrNotAcquired):
			lost = err
		case errors.Is(err, redlock.ErrQuorumUnreachable):
			failed = err
		default: // bad input or ctx: the other slots would say the same
			return nil, err
		}
	}
	if failed != nil {
		return nil, fmt.Errorf("semaphore %q: no permit: %w", s.name, failed)
	}
	return nil, fmt.Errorf("semaphore %q: all %d permits held: %w", s.name, s.n, lost)
}

// Acquire returns a permit, waiting while all N are held. It first tries
// the slots one after the other as TryAcquire does; when all are held (or
// nodes failed) it waits on every slot at once with the client's Acquire (its retry policy
// and its release notifications: a release of any slot wakes the waiter)
// and keeps the first slot it gets. A slot won at the same instant as the
// first is released at once: for that moment the waiter holds two slots,
// and still no more than N permits exist (each slot is a mutex).
// Errors: as TryAcquire; redlock.ErrNotAcquired once every slot's retries
// are used up.
func (s *Semaphore) Acquire(ctx context.Context, ttl time.Duration) (*Permit, error) {
	p, err := s.TryAcquire(ctx, ttl)
	if err == nil || !(errors.Is(err, redlock.ErrNotAcquired) || errors.Is(err, redlock.ErrQuorumUnreachable)) {
		return p, err
	}
	return s.wait(ctx, ttl) // retried like the client's Acquire retries both
}

// wait runs the client's Acquire on every slot at once and keeps the first
// permit; the others are cancelled, and released if they won anyway.
func (s *Semaphore) wait(ctx context.Context, ttl time.Duration) (*Permit, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		slot int
		lock *redlock.Lock
		err  error
	}
	results := make(chan result, s.n)
	var wg sync.WaitGroup
	for _, i := range rand.Perm(s.n) {
		wg.Go(func() {
			l, err := s.client.Acquire(wctx, SlotKey(s.name, i), ttl)
			results <- result{i, l, err}
		})
	}
	go func() { wg.Wait(); close(results) }()
	var won *Permit
	var lost, failed, other error
	for r := range results {
		switch {
		case r.err == nil && won == nil:
			won = &Permit{Lock: r.lock, slot: r.slot}
			cancel()
		case r.err == nil: // a second slot won at the same instant
			_ = r.lock.Release(context.WithoutCancel(ctx))
		case errors.Is(r.err, redlock.ErrNotAcquired):
			lost = r.err
		case errors.Is(r.err, redlock.ErrQuorumUnreachable):
			failed = r.err
		default:
			other = r.err
		}
	}
	switch {
	case won != nil:
		return won, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case failed != nil:
		return nil, fmt.Errorf("semaphore %q: no permit: %w", s.name, failed)
	case lost != nil:
		return nil, fmt.Errorf("semaphore %q: all %d permits held: %w", s.name, s.n, lost)
	}
	return nil, other
}

// Do runs fn while holding a permit: it acquires one (as Acquire), keeps it
// alive while fn runs, and releases it when fn returns or panics, like
// redlock.Client.Do. fn's ctx is cancelled with a cause wrapping
// redlock.ErrLockLost when the permit is lost; redlock.LockFromContext(ctx)
// returns the permit's lock (for its Fence). It returns the acquisition's
// error (fn did not run), or fn's error joined with the loss or a failed
// release.
func (s *Semaphore) Do(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error) error {
	return doPermit.Do(ctx, func(ctx context.Context) (*Permit, error) { return s.Acquire(ctx, ttl) }, fn)
}

// TryDo is Do with a single attempt (TryAcquire): when all N permits are
// held it returns (false, nil) without running fn.
func (s *Semaphore) TryDo(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error) (ran bool, err error) {
	return doPermit.TryDo(ctx, func(ctx context.Context) (*Permit, error) { return s.TryAcquire(ctx, ttl) }, fn)
}

// doPermit is Do and TryDo for a Permit, held as its slot lock is.
var doPermit = hold.Kind[*Permit]{NotAcquired: redlock.ErrNotAcquired, Invalid: invalid, Hold: (*Permit).Hold}

func invalid(format string, args ...any) error {
	return fmt.Errorf("semaphore: %w: "+format, append([]any{redlock.ErrInvalidArgument}, args...)...)
}

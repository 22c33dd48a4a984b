package lockdesc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/internal/hold"
	"github.com/quorumlock/quorumlock/redlock"
)

// RWLocker is a read-write lock over the same nodes: Lock and TryLock the
// writer (exclusive) side, RLock and TryRLock the reader (shared) side, all
// of the key given. The read-write lock of package rwlock (*rwlock.Client)
// has these methods.
type RWLocker interface {
	Lock(ctx context.Context, key string, ttl time.Duration) (*redlock.Lock, error)
	TryLock(ctx context.Context, key string, ttl time.Duration) (*redlock.Lock, error)
	RLock(ctx context.Context, key string, ttl time.Duration) (*redlock.Lock, error)
	TryRLock(ctx context.Context, key string, ttl time.Duration) (*redlock.Lock, error)
}

// Manager acquires locks by descriptor under policies. It is safe for
// concurrent use.
type Manager struct {
	client   *redlock.Client
	policies []Policy
	rw       RWLocker
}

// Option configures a Manager.
type Option func(*Manager) error

// WithPolicy adds policies; each applicable one is checked before every
// acquisition.
func WithPolicy(ps ...Policy) Option {
	return func(m *Manager) error {
		for _, p := range ps {
			if err := p.validate(); err != nil {
				return err
			}
		}
		m.policies = append(m.policies, ps...)
		return nil
	}
}

// WithRWLocker routes both kinds through a read-write lock on
// Descriptor.Resource (see the package doc).
func WithRWLocker(rw RWLocker) Option {
	return func(m *Manager) error {
		if rw == nil {
			return invalidArg("nil RWLocker")
		}
		m.rw = rw
		return nil
	}
}

// NewManager returns a Manager over the client.
func NewManager(client *redlock.Client, opts ...Option) (*Manager, error) {
	if client == nil {
		return nil, invalidArg("nil client")
	}
	m := &Manager{client: client}
	for _, o := range opts {
		if o == nil {
			return nil, invalidArg("nil option")
		}
		if err := o(m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Check says whether d may be locked for ttl: ErrInvalidArgument for a bad
// descriptor or ttl, ErrPolicy when a policy refuses, ErrKindUnsupported for
// a shared lock without an RWLocker.
func (m *Manager) Check(d Descriptor, ttl time.Duration) error {
	if m == nil {
		return invalidArg("nil Manager")
	}
	if err := d.Validate(); err != nil {
		return err
	}
	if ttl <= 0 {
		return invalidArg("ttl %v", ttl)
	}
	for _, p := range m.policies {
		if p.appliesTo(d) {
			if err := p.check(d, ttl); err != nil {
				return err
			}
		}
	}
	if d.kind() == Shared && m.rw == nil {
		return fmt.Errorf("%w: shared locks need a read-write lock (WithRWLocker)", ErrKindUnsupported)
	}
	return nil
}

// Acquire checks d and acquires its lock, waiting per the client's retry
// policy (or the RWLocker's); redlock's errors (ErrNotAcquired, ...) pass
// through.
func (m *Manager) Acquire(ctx context.Context, d Descriptor, ttl time.Duration) (*redlock.Lock, error) {
	if m == nil {
		return nil, invalidArg("nil Manager")
	}
	if m.rw != nil {
		return m.acquire(ctx, d, ttl, m.rw.Lock, m.rw.RLock)
	}
	return m.acquire(ctx, d, ttl, m.client.Acquire, nil)
}

// TryAcquire is Acquire with a single attempt (the seed's "skip if another
// worker triggers it"): ErrNotAcquired when held.
func (m *Manager) TryAcquire(ctx context.Context, d Descriptor, ttl time.Duration) (*redlock.Lock, error) {
	if m == nil {
		return nil, invalidArg("nil Manager")
	}
	if m.rw != nil {
		return m.acquire(ctx, d, ttl, m.rw.TryLock, m.rw.TryRLock)
	}
	return m.acquire(ctx, d, ttl, m.client.TryAcquire, nil)
}

type lockFunc func(context.Context, string, time.Duration) (*redlock.Lock, error)

// acquire checks d and takes it with exclusive or shared: on the
// descriptor's key on the mutex, on Descriptor.Resource with an RWLocker.
func (m *Manager) acquire(ctx context.Context, d Descriptor, ttl time.Duration, exclusive, shared lockFunc) (*redlock.Lock, error) {
	if ctx == nil {
		return nil, invalidArg("nil context")
	}
	if err := m.Check(d, ttl); err != nil {
		return nil, err
	}
	if m.rw == nil {
		key, _ := d.Key()
		return exclusive(ctx, key, ttl)
	}
	if d.kind() == Shared {
		return shared(ctx, d.Resource(), ttl)
	}
	return exclusive(ctx, d.Resource(), ttl)
}

// Do runs fn under d's lock, kept alive while fn runs (fn's context ends
// when it is lost: Lock.Hold), and releases it after, as redlock's
// Client.Do does: it returns fn's error joined with the loss or, if the lock
// was kept, with a failed release.
func (m *Manager) Do(ctx context.Context, d Descriptor, ttl time.Duration, fn func(ctx context.Context) error) error {
	return doLock.Do(ctx, func(ctx context.Context) (*redlock.Lock, error) { return m.Acquire(ctx, d, ttl) }, fn)
}

// doLock is Do for the lock of a descriptor.
var doLock = hold.Kind[*redlock.Lock]{NotAcquired: redlock.ErrNotAcquired, Invalid: invalidArg, Hold: (*redlock.Lock).Hold}

// Found is a held lock that Find listed.
type Found struct {
	Descriptor Descriptor
	Info       redlock.Info // what a majority of the nodes says (owner, fence, time left)
}

// Find lists the held locks whose descriptors p selects: Client.Locks on
// p.Glob, parsed and filtered with p.Match. Keys that are not descriptor keys
// are skipped.
func (m *Manager) Find(ctx context.Context, p Pattern) ([]Found, error) {
	if m == nil || ctx == nil {
		return nil, invalidArg("nil Manager or context")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var found []Found
	for info, err := range m.client.Locks(ctx, p.Glob()) {
		if err != nil {
			if errors.Is(err, redlock.ErrQuorumUnreachable) || errors.Is(err, redlock.ErrInvalidArgument) || ctx.Err() != nil {
				return found, err
			}
			continue // one key's inspection failed: the listing goes on
		}
		d, perr := Parse(info.Key)
		if perr != nil || !p.Match(d) {
			continue
		}
		found = append(found, Found{Descriptor: d, Info: info})
	}
	return found, nil
}

// SubjectMetrics are the held locks of one subject.
type SubjectMetrics struct {
	Count        int
	AvgRemaining time.Duration // mean of the locks' time left on a majority
}

// Metrics counts the held locks that p selects by subject.
func (m *Manager) Metrics(ctx context.Context, p Pattern) (map[string]SubjectMetrics, error) {
	found, err := m.Find(ctx, p)
	if err != nil {
		return nil, err
	}
	sum := map[string]time.Duration{}
	out := map[string]SubjectMetrics{}
	for _, f := range found {
		s := out[f.Descriptor.Subject]
		s.Count++
		sum[f.Descriptor.Subject] += f.Info.Remaining
		out[f.Descriptor.Subject] = s
	}
	for subj, s := range out {
		s.AvgRemaining = sum[subj] / time.Duration(s.Count)
		out[subj] = s
	}
	return out, nil
}

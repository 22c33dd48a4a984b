package lockdesc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

// Held is a lock taken through a Manager; *redlock.Lock is one.
type Held interface {
	Key() string
	Fence() uint64
	Release(ctx context.Context) error
}

// RWLocker is a read-write lock over the same nodes (to be filled by a
// read-write lock package): Lock is the writer (exclusive) side, RLock the
// reader (shared) side, both of the key given.
type RWLocker interface {
	Lock(ctx context.Context, key string, ttl time.Duration) (Held, error)
	RLock(ctx context.Context, key string, ttl time.Duration) (Held, error)
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
func (m *Manager) Acquire(ctx context.Context, d Descriptor, ttl time.Duration) (Held, error) {
	if m == nil {
		return nil, invalidArg("nil Manager")
	}
	return m.acquire(ctx, d, ttl, m.client.Acquire)
}

// TryAcquire is Acquire with a single attempt on the redlock mutex (the
// seed's "skip if another worker triggers it"): ErrNotAcquired when held. With
// an RWLocker it is Acquire.
func (m *Manager) TryAcquire(ctx context.Context, d Descriptor, ttl time.Duration) (Held, error) {
	if m == nil {
		return nil, invalidArg("nil Manager")
	}
	return m.acquire(ctx, d, ttl, m.client.TryAcquire)
}

func (m *Manager) acquire(ctx context.Context, d Descriptor, ttl time.Duration,
	lock func(context.Context, string, time.Duration) (*redlock.Lock, error)) (Held, error) {
	if ctx == nil {
		return nil, invalidArg("nil context")
	}
	if err := m.Check(d, ttl); err != nil {
		return nil, err
	}
	if m.rw != nil {
		if d.kind() == Shared {
			return m.rw.RLock(ctx, d.Resource(), ttl)
		}
		return m.rw.Lock(ctx, d.Resource(), ttl)
	}
	key, _ := d.Key()
	l, err := lock(ctx, key, ttl)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Do runs fn under d's lock and releases it after. A redlock lock is kept
// alive while fn runs and fn's context ends when it is lost (Lock.Hold);
// the errors of fn, the loss and the release are joined.
func (m *Manager) Do(ctx context.Context, d Descriptor, ttl time.Duration, fn func(ctx context.Context) error) error {
	if fn == nil {
		return invalidArg("nil fn")
	}
	h, err := m.Acquire(ctx, d, ttl)
	if err != nil {
		return err
	}
	if l, ok := h.(*redlock.Lock); ok {
		fnErr, lostErr, relErr := l.Hold(ctx, fn)
		return errors.Join(fnErr, lostErr, relErr)
	}
	fnErr := fn(ctx)
	return errors.Join(fnErr, h.Release(context.WithoutCancel(ctx)))
}

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

package election

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
)

// Defaults of an Election.
const (
	// DefaultTTL is the time to live of a term's lock: how long the
	// followers wait for a leader that died without resigning.
	DefaultTTL = 10 * time.Second
	// DefaultPollInterval is the time between two looks of Observe when
	// no release is announced.
	DefaultPollInterval = time.Second
)

// Election is one named election over a redlock.Client's nodes. It is safe
// for concurrent use, and holds no state on the nodes itself: any number of
// Elections (in one or many processes) with the same name and key prefix
// are the same election.
type Election struct {
	client *redlock.Client
	name   string
	cfg    config
}

// Option configures an Election.
type Option func(*config)

type config struct {
	ttl  time.Duration
	poll time.Duration
}

// WithTTL sets the time to live of a term's lock (default DefaultTTL, 10s).
// The term is extended automatically while it lasts (the client's
// watchdog, see redlock.WithKeepAlive), so the TTL only says how long a
// leader that died without Resign keeps the others waiting.
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithPollInterval sets how often Observe looks at the leader when no
// release is announced (default DefaultPollInterval, 1s): the bound on how
// late Observe reports a change that was not announced (a leader that died,
// or whose announcement was lost).
func WithPollInterval(d time.Duration) Option { return func(c *config) { c.poll = d } }

// New returns the election called name on client's nodes. The election's
// lock is the client's lock named name (with the client's key prefix), so
// redlock inspect, ls and unlock show and act on it. Errors wrap
// redlock.ErrInvalidArgument: a nil client, an empty name or one longer
// than redlock.MaxKeyLength, a bad option.
func New(client *redlock.Client, name string, opts ...Option) (*Election, error) {
	switch {
	case client == nil:
		return nil, invalidArg("nil client")
	case name == "":
		return nil, invalidArg("empty name")
	case name[0] == '}':
		return nil, invalidArg("name %q starts with '}'", name)
	case len(name) > redlock.MaxKeyLength:
		return nil, invalidArg("name of %d bytes is longer than %d bytes", len(name), redlock.MaxKeyLength)
	}
	cfg := config{ttl: DefaultTTL, poll: DefaultPollInterval}
	for _, o := range opts {
		if o == nil {
			return nil, invalidArg("nil option")
		}
		o(&cfg)
	}
	if cfg.ttl <= 0 {
		return nil, invalidArg("ttl %s is not positive", cfg.ttl)
	}
	if cfg.poll <= 0 {
		return nil, invalidArg("poll interval %s is not positive", cfg.poll)
	}
	return &Election{client: client, name: name, cfg: cfg}, nil
}

// Name is the election's name, the key of its lock.
func (e *Election) Name() string { return e.name }

// Campaign blocks until this participant leads, and returns its term.
// value is what Leader and Observe report while the term lasts (an
// address, a pod name); it is recorded on the nodes as the owner of the
// election's lock, so it follows redlock.WithOwner's rules: not empty,
// at most node.MaxOwnerLen bytes of UTF-8 without control characters.
//
// It waits for the current leader's release (woken by its announcement) or
// the expiry of its lock, and tries again, for as long as ctx lasts: per
// the client's retry policy; when that is used up sooner than a random
// eighth to quarter of the TTL, it tries again at the next announced release
// or once that time has passed, so that a client with retry.Never does not
// spin. The term is kept alive automatically from the moment it is returned.
//
// Errors: redlock.ErrInvalidArgument for a bad value; ctx's error when
// ctx ends first; redlock.ErrQuorumUnreachable when too many nodes failed
// (nothing is held; Campaign may be called again).
func (e *Election) Campaign(ctx context.Context, value string) (*Term, error) {
	if ctx == nil {
		return nil, invalidArg("nil context")
	}
	if value == "" {
		return nil, invalidArg("empty value")
	}
	if err := node.CheckOwner(value); err != nil {
		return nil, invalidArg("value: %v", err)
	}
	actx := redlock.ContextWithOwner(ctx, value)
	var released <-chan struct{}
	for {
		began := time.Now()
		l, err := e.client.Acquire(actx, e.name, e.cfg.ttl)
		switch {
		case err == nil:
			l.KeepAlive()
			return &Term{lock: l, value: value}, nil
		case ctx.Err() != nil:
			return nil, fmt.Errorf("election %q: campaign: %w", e.name, context.Cause(ctx))
		case !errors.Is(err, redlock.ErrNotAcquired):
			return nil, fmt.Errorf("election %q: campaign: %w", e.name, err)
		}
		// The client's retries ran out while another leads. When they took
		// less than an eighth of the TTL (retry.Never: at once), wait for a
		// release or the rest of an eighth to a quarter TTL, so as not to spin.
		pause := e.cfg.ttl/8 + rand.N(e.cfg.ttl/8+1) - time.Since(began)
		if pause <= 0 {
			continue
		}
		if released == nil {
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			if released, err = e.client.Released(wctx, e.name); err != nil {
				return nil, fmt.Errorf("election %q: campaign: %w", e.name, err)
			}
		}
		t := time.NewTimer(pause)
		select {
		case <-released:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
}

// Leader is what the nodes say about the current leader.
type Leader struct {
	// Value is the leader's Campaign value.
	Value string
	// Fence is the largest fence counter a node reported, not the term's
	// fence (Term.Fence, which the leader writes with). In a look that
	// began after the leader's Campaign returned it is at least the term's
	// fence, and larger when the nodes' counters drifted apart (see
	// redlock.Info.Fence): Campaign returns once the fence is settled on a
	// majority. A look that raced the term's start can read counters the
	// settle had not raised yet and report less; Observe's first report of
	// a term may come from such a look.
	Fence uint64
	// Since is when the term began, by the leader's clock.
	Since time.Time
	// ID names the term (the redlock release id of its token): different
	// for every term, also for two terms of the same Value.
	ID string
}

// Leader returns the current leader, read from a majority of the nodes
// (one redlock.Client.Inspect round; no lock is taken). Errors:
// ErrNoLeader when no term holds a majority; redlock.ErrQuorumUnreachable
// when too many nodes failed to answer; ctx's error.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	if ctx == nil {
		return Leader{}, invalidArg("nil context")
	}
	info, err := e.client.Inspect(ctx, e.name)
	if err != nil {
		return Leader{}, fmt.Errorf("election %q: leader: %w", e.name, err)
	}
	if !info.Held {
		return Leader{}, fmt.Errorf("election %q: %w", e.name, ErrNoLeader)
	}
	return Leader{Value: info.Owner, Fence: info.Fence, Since: info.AcquiredAt, ID: info.Holder}, nil
}

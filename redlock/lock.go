package redlock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/internal/hold"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/observe"
)

// Lock is one acquisition of a key. Key, Token and Fence never change;
// ValidUntil moves forward with each Extend. A Lock is safe to use from
// several goroutines: Extend and Release are serialized. Done, Err and
// Context tell when the lock ends (see loss.go); KeepAlive extends it
// automatically.
//
// A nil *Lock (what a failed Acquire returns) is a lock that has ended:
// its methods never panic. Release, Extend and Err return an error
// wrapping ErrLockLost, Done is closed, Context is cancelled, Hold does
// not run fn, and the others return zero values. So a Release deferred
// before Acquire's error is checked is harmless.
type Lock struct {
	client *Client
	key    string // as the caller named it
	name   string // on the nodes, prefix included
	token  string
	fence  uint64

	owner      string       // WithOwner of the client
	acquiredAt time.Time    // the client's clock at the attempt, to the µs
	previous   node.Holding // set before the lock is handed out; see TookOver
	sent       *unanswered  // the token's requests per node; see Release

	op sync.Mutex // serializes Extend and Release

	mu         sync.RWMutex
	ttl        time.Duration
	validUntil time.Time // monotonic
	released   bool
	start      time.Time // monotonic: the winning attempt's start
	holdUntil  time.Time // HoldAtLeast: Release leaves the key until then

	life lifecycle // Done, Err, Context, KeepAlive; see loss.go
}

// errNilLock is what the methods of a nil *Lock return.
var errNilLock = fmt.Errorf("%w: nil *Lock (the Acquire that returned it failed)", ErrLockLost)

// closedChan is the Done of a nil *Lock.
var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// Key is the lock's name as given to Acquire (without the client's prefix).
func (l *Lock) Key() string {
	if l == nil {
		return ""
	}
	return l.key
}

// Fence is a number greater than the fence of every earlier acquisition of
// the same key, as long as a majority of the nodes kept their data, and
// also across data loss while the nodes' clocks do not go back (see
// "Fences" in the package doc for the exact rule). Send it with every write
// to the resource the lock protects, and have the resource refuse writes
// whose fence is lower than one it has already seen: that turns a holder
// that outlived its lock (a long GC pause, say) into a refused write instead
// of a lost update.
func (l *Lock) Fence() uint64 {
	if l == nil {
		return 0
	}
	return l.fence
}

// Owner is who took the lock (WithOwner of its client), as the nodes
// record it.
func (l *Lock) Owner() string {
	if l == nil {
		return ""
	}
	return l.owner
}

// AcquiredAt is when the winning attempt started, by this process's wall
// clock to the microsecond: the time the nodes record and Inspect reports.
func (l *Lock) AcquiredAt() time.Time {
	if l == nil {
		return time.Time{}
	}
	return l.acquiredAt
}

// TookOver reports the holder before this one when that holder never
// released the key: its lock expired (a crashed worker, a client closed
// without Release) or was force-released. The Info has the previous
// holder's Key, Holder, Owner and AcquiredAt, and a Fence below ours; ok
// is false when the key was released (or free) before. Use it to recover
// what the previous holder left half done.
//
// The Fence is the largest that the trails found record. Each node's trail
// records that node's count when it granted the lock, raised to the lock's
// fence by the fence settle and by every extension that reaches the node.
// So it is at least the previous holder's fence when a trail found is on a
// node that counted that fence itself, or that the settle or one of the
// holder's extensions reached (larger only when a node that answered that
// acquisition late counted higher). When the nodes' counters drifted
// apart, a node that granted the previous acquisition after it was
// decided, and that no extension reached before the holder died, records
// its own lower count, and a successor that finds only that trail reports
// that count.
//
// It relies on the trail each acquisition leaves on its nodes, which
// Release deletes with the key and which lives as long as the fence
// counter (WithFenceRetention). So it reports a takeover when at least one
// node that granted this lock still had the previous holder's trail.
// Limits: a node that lost its data, or on which another client's failed
// attempt was undone in between, has no trail to report; and a Release or
// an undo that missed some nodes (they failed, and the keys expired there)
// leaves trails that a later acquisition on those nodes reports as a
// takeover; so does a node on which the old key outlived this acquisition
// (the old holder's request landed late there): the next acquisition that
// gets that node reports the same previous holder again.
func (l *Lock) TookOver() (Info, bool) {
	if l == nil || l.previous.Token == "" {
		return Info{}, false
	}
	return Info{Key: l.key, Holder: node.ReleaseID(l.previous.Token), Owner: l.previous.Owner,
		AcquiredAt: l.previous.AcquiredAt, Fence: l.previous.Fence}, true
}

// Release deletes the lock on every node that holds our token, and never
// another holder's key. It returns nil when a majority deleted it while it
// was still valid; ErrLockLost when it was already released, had ended
// (expired by our clock, or declared lost; the keys are deleted anyway), or
// was not ours on a majority; ErrQuorumUnreachable when too many nodes
// failed while the lock was still valid (Release may be tried again; the
// keys expire with their TTL in any case). A lock that had ended before
// Release was called gets ErrLockLost whatever the nodes answer.
//
// Every node that processes the release afterwards refuses the lock's
// requests still in flight (an acquire or extend that a slow node has not
// run yet): its request to each node first waits a little (a quarter of
// the node timeout at most; not once the lock was extended) for the lock's
// requests to that node still on their way, and where one failed or did
// not come back, the release leaves a tombstone of the token for a TTL.
// Release returns once a majority deleted the key and the others had a short while
// to answer (as long again as the majority took, at least 1 ms), so a dead
// node does not hold it up for a whole node timeout; a slow node may hold
// the key until the release reaches it.
func (l *Lock) Release(ctx context.Context) error {
	if l == nil {
		return errNilLock
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	l.stopKeeping() // no extension is in flight or starts once this returns
	l.op.Lock()
	defer l.op.Unlock()
	l.mu.RLock()
	released, validUntil, ttl := l.released, l.validUntil, l.ttl
	l.mu.RUnlock()
	if released {
		return fmt.Errorf("%w: release %q: already released", ErrLockLost, l.key)
	}
	if held, err := l.releaseHeld(ctx); held {
		return err
	}
	start := time.Now()
	t := l.deleteKeys(ctx, ttl, start)
	// A lock that had ended before this call is lost whatever the nodes
	// answer: the deletes above are only cleanup, and failing nodes must
	// not turn that answer into ErrQuorumUnreachable.
	ended := l.Err() != nil || !start.Before(validUntil)
	if !ended && !t.won() && len(t.failures) > 0 && !t.denied() {
		if ctx.Err() != nil {
			return fmt.Errorf("redlock: release %q: %w", l.key, context.Cause(ctx))
		}
		return t.err(fmt.Sprintf("release %q", l.key))
	}
	return l.releaseVerdict(ctx, t, ended, start, validUntil)
}

// deleteKeys is the release's round: it tallies the deletes (yes: the key
// was ours and is gone) until every node answered or, once a majority
// deleted it, the others had a short while to.
func (l *Lock) deleteKeys(ctx context.Context, ttl time.Duration, start time.Time) tally {
	c := l.client
	r := c.deleteRound(ctx, l.key, l.name, l.token, ttl, nil, l.sent)
	defer r.close()
	t := c.newTally()
	var linger <-chan time.Time
	for {
		a, ok := r.nextBefore(linger)
		if !ok {
			break
		}
		_ = t.countHeld(a)
		if t.won() && linger == nil {
			// The key is free on a majority: this client's next waiter can
			// try now. Wait a little for the others, so that an immediate
			// re-acquire does not find our key on a slow but healthy node.
			c.notify.releasedLocally(l.name, l.token)
			linger = r.lingerFor(max(time.Since(start), time.Millisecond))
		}
	}
	return t
}

// releaseVerdict marks the lock released and returns what its release came to
// (t: the deletes' tally; ended: the lock had ended before the call).
func (l *Lock) releaseVerdict(ctx context.Context, t tally, ended bool, start, validUntil time.Time) error {
	c := l.client
	l.mu.Lock()
	l.released = true
	l.mu.Unlock()
	switch {
	case l.Err() != nil:
		return fmt.Errorf("%w: release %q: the lock had ended: %v", ErrLockLost, l.key, l.Err())
	case ended:
		return l.lost(ctx, reasonExpired, fmt.Errorf("%w: release %q: validity had ended %s before release", ErrLockLost, l.key, start.Sub(validUntil)))
	case !t.won():
		return l.lost(ctx, reasonNotOurs, fmt.Errorf("%w: release %q: held by us on too few nodes (%d of %d)", ErrLockLost, l.key, t.yes, t.n))
	}
	if l.end(ErrReleased) { // else its expiry ended it first, and said so
		c.obs.Observe(observe.Event{Kind: observe.Released, Key: l.key, Latency: time.Since(start), Context: ctx})
	}
	return nil
}

// HoldAtLeast makes the key stay on the nodes until d after the lock's
// acquisition even when Release comes earlier: Release then shortens (or
// lengthens) the key's TTL to the hold left instead of deleting it, and
// the key expires by itself. Other replicas' attempts in the meantime
// find it held. This is ShedLock's lockAtLeastFor: with a job that takes
// microseconds, a replica that fires a little later than the first still
// finds the lock taken. Prefer the tick package, which turns away every
// late replica of a tick, when the job can name its tick. In Client.Do,
// call it on the lock from LockFromContext.
//
// The key may stay a little longer than d when the hold left at Release is
// shorter than an extension round can grant. A Release after d deletes as
// usual; d <= 0 turns it off. A hold longer than the recovery period
// (WithRecoveryPeriod) lasts while the nodes keep their data: a node that
// lost the key counts again for it once the period has passed.
func (l *Lock) HoldAtLeast(d time.Duration) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holdUntil = time.Time{}
	if d > 0 {
		l.holdUntil = l.start.Add(d)
	}
}

// Hold runs fn while l is held, as Do does after acquiring: it keeps l alive
// (KeepAlive), gives fn a context that is cancelled with a cause wrapping
// ErrLockLost when l is lost (and from which LockFromContext returns l),
// and releases l when fn returns or panics (a panic is re-raised after the
// release). The release is not cut short by ctx's cancellation. On a lock
// that has already ended fn does not run: lostErr is its loss, or
// releaseErr says it was released.
//
// It returns fn's error, the loss of the lock while fn ran (errors.Is
// ErrLockLost; nil if it was kept) and the release's error apart, for
// callers that treat them differently (a failed release is often only worth
// a log line: the TTL cleans up). After a loss the release's ErrLockLost is
// not repeated.
func (l *Lock) Hold(ctx context.Context, fn func(ctx context.Context) error) (fnErr, lostErr, releaseErr error) {
	if ctx == nil || fn == nil {
		return invalidArg("nil context or fn"), nil, nil
	}
	if l == nil {
		return nil, errNilLock, nil
	}
	l.KeepAlive() // stopped by Release
	return hold.Run(ctx, context.WithValue(ctx, lockKey{}, l), l, ErrLockLost, fn)
}

type lockKey struct{}

// LockFromContext returns the lock that Do or TryDo holds for the fn that
// got ctx, e.g. to read its Fence for the writes fn makes.
func LockFromContext(ctx context.Context) (*Lock, bool) {
	l, ok := ctx.Value(lockKey{}).(*Lock)
	return l, ok
}

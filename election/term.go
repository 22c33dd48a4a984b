package election

import (
	"context"

	"github.com/quorumlock/quorumlock/redlock"
)

// Term is one participant's leadership, from Campaign until Resign or loss.
// It is safe to share between goroutines.
type Term struct {
	lock  *redlock.Lock
	value string
}

// Value is the value the term was campaigned with.
func (t *Term) Value() string { return t.value }

// Fence is the term's fence: larger than every earlier term's of the same
// election (redlock.Lock.Fence). Send it with every write the leader makes
// and have the store refuse writes with a fence lower than one it has seen.
func (t *Term) Fence() uint64 { return t.lock.Fence() }

// Done is closed when the term ends: when leadership cannot be kept (the
// watchdog could not extend the lock; closed a safety margin before its
// validity ends) or after Resign. Err says which.
func (t *Term) Done() <-chan struct{} { return t.lock.Done() }

// Err is nil while the term lasts; afterwards it wraps redlock.ErrLockLost
// when leadership was lost, or is redlock.ErrReleased after Resign.
func (t *Term) Err() error { return t.lock.Err() }

// Context returns a context derived from parent that is cancelled when the
// term ends, with Err as its cause.
func (t *Term) Context(parent context.Context) (context.Context, context.CancelFunc) {
	return t.lock.Context(parent)
}

// Lock is the term's lock, for what redlock offers beyond a term (Owner,
// ValidUntil, TookOver: the previous leader died without resigning).
func (t *Term) Lock() *redlock.Lock { return t.lock }

// Resign ends the term: it releases the election's lock. The nodes announce
// the release, so that waiting candidates and observers learn of it at
// once (with release notifications off, at their next attempt or poll).
// Errors are redlock.Lock.Release's: redlock.ErrLockLost when the term had
// already ended (lost, or resigned before).
func (t *Term) Resign(ctx context.Context) error { return t.lock.Release(ctx) }

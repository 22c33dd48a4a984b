package statuslock

import (
	"errors"
	"fmt"

	"github.com/quorumlock/quorumlock/redlock"
)

// Sentinel errors. Errors about the lock wrap both the statuslock sentinel
// and the redlock error behind it, so errors.Is works with either:
// errors.Is(err, statuslock.ErrNotAcquired) and
// errors.Is(err, redlock.ErrNotAcquired) both hold.
var (
	// ErrNotAcquired: another holder kept the service's status lock through
	// every retry (or through the single attempt of TryAcquire). The
	// function was not run.
	ErrNotAcquired = errors.New("statuslock: status lock not acquired")
	// ErrQuorumUnreachable: too many lock nodes failed to answer. The
	// function was not run (or, from Extend and Release, the lock's state is
	// unknown; it expires with its TTL).
	ErrQuorumUnreachable = errors.New("statuslock: lock quorum unreachable")
	// ErrLockLost: the lock expired or was taken over before the work was
	// done, so the work may not have been exclusive. Writes that carried
	// the lock's fence to a fenced Store were refused if they came late.
	ErrLockLost = errors.New("statuslock: status lock lost")
	// ErrStaleFence: a Store refused a write whose fence is lower than one
	// it has already accepted for the service: a newer holder of the
	// status lock has written since.
	ErrStaleFence = errors.New("statuslock: stale fence")
	// ErrNotFound: the Store has no record of the service.
	ErrNotFound = errors.New("statuslock: service not found")
	// ErrInvalidArgument: a bad argument or option; nothing was locked or
	// written.
	ErrInvalidArgument = errors.New("statuslock: invalid argument")
	// ErrRunning: Start was called on a Reconciler that is already running.
	ErrRunning = errors.New("statuslock: reconciler already running")
)

func invalidArg(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}

// wrapLockErr maps an error from package redlock onto this package's
// sentinels, keeping the original in the chain.
func wrapLockErr(op, serviceID string, err error) error {
	if err == nil {
		return nil
	}
	var sentinel error
	switch {
	case errors.Is(err, redlock.ErrNotAcquired):
		sentinel = ErrNotAcquired
	case errors.Is(err, redlock.ErrQuorumUnreachable):
		sentinel = ErrQuorumUnreachable
	case errors.Is(err, redlock.ErrLockLost):
		sentinel = ErrLockLost
	case errors.Is(err, redlock.ErrInvalidArgument):
		sentinel = ErrInvalidArgument
	default: // the caller's context, most likely: keep it as is
		return fmt.Errorf("statuslock: %s %q: %w", op, serviceID, err)
	}
	return fmt.Errorf("%w: %s %q: %w", sentinel, op, serviceID, err)
}

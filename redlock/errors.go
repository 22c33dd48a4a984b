package redlock

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by this package wraps one of them (or
// the caller's ctx.Err()), so callers branch with errors.Is.
var (
	// ErrNotAcquired: another holder has the key on too many nodes, and the
	// retry policy is used up (or TryAcquire's single attempt lost).
	ErrNotAcquired = errors.New("redlock: lock not acquired")
	// ErrSplitVote: the attempts gave up while the votes were split, with
	// no client holding a majority (see "Split votes" in the package doc):
	// nobody is known to hold the lock, and trying again soon may win it.
	// It wraps ErrNotAcquired, so errors.Is(err, ErrNotAcquired) holds too;
	// test ErrSplitVote first to tell it from "another holder has it".
	ErrSplitVote = fmt.Errorf("%w: split vote", ErrNotAcquired)
	// ErrQuorumUnreachable: too many nodes failed (errors, timeouts) for a
	// majority to answer. The per-node causes are joined in the error as
	// *NodeError values.
	ErrQuorumUnreachable = errors.New("redlock: quorum of nodes unreachable")
	// ErrLockLost: the lock is no longer ours (expired, released, or taken
	// over), so it cannot be extended or released.
	ErrLockLost = errors.New("redlock: lock lost")
	// ErrInvalidArgument: a bad argument or option; nothing was sent to a node.
	ErrInvalidArgument = errors.New("redlock: invalid argument")
	// ErrReleased is the cause of a lock's end (Lock.Err, the context of
	// Lock.Context) after its own Release succeeded. It does not wrap
	// ErrLockLost: the lock was given up, not taken away.
	ErrReleased = errors.New("redlock: lock released")
	// ErrNodePanic: a call to one node panicked (its client could not
	// decode what the node sent, say a length of a petabyte). It is that
	// node's failure alone, inside a *NodeError; the panic value and stack
	// go to the client's logger.
	ErrNodePanic = errors.New("redlock: node call panicked")
	// ErrRecovering: a node lost its lock data for the key and sits out of
	// the key's acquisitions until the recovery period has passed (see
	// WithRecoveryPeriod). It is that node's failure, inside a *NodeError
	// whose message says how long the node still sits out.
	ErrRecovering = errors.New("redlock: node recovering from data loss")
)

// NodeError is the failure of one node during one operation. Several are
// joined with errors.Join inside an ErrQuorumUnreachable error; extract them
// with errors.As.
type NodeError struct {
	Node string // the node's Name()
	Op   string // "acquire", "extend", "release", "inspect", "fence"
	Err  error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("redlock: node %s: %s: %v", e.Node, e.Op, e.Err)
}

func (e *NodeError) Unwrap() error { return e.Err }

func invalidArg(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}

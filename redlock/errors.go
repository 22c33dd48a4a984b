package redlock

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error of this package wraps one of them (or the
// caller's ctx.Err()); branch with errors.Is.
var (
	// ErrNotAcquired: another holder has the key, and the retries are used up
	// (or TryAcquire's one attempt lost).
	ErrNotAcquired = errors.New("redlock: lock not acquired")
	// ErrSplitVote wraps ErrNotAcquired (test it first): the votes stayed
	// split for 8 rounds; nobody is known to hold the key, so retry soon.
	ErrSplitVote = fmt.Errorf("%w: split vote", ErrNotAcquired)
	// ErrQuorumUnreachable: too many nodes failed for a majority to answer;
	// one *NodeError per failed node is joined inside.
	ErrQuorumUnreachable = errors.New("redlock: quorum of nodes unreachable")
	// ErrLockLost: the lock is no longer ours (expired, released, taken over).
	ErrLockLost = errors.New("redlock: lock lost")
	// ErrInvalidArgument: a bad argument or option; nothing was sent to a node.
	ErrInvalidArgument = errors.New("redlock: invalid argument")
	// ErrReleased is Lock.Err after the lock's own Release; not an ErrLockLost.
	ErrReleased = errors.New("redlock: lock released")
	// ErrNodePanic, inside one *NodeError: that node's call panicked (say, on a
	// reply it could not decode); the panic and stack go to the logger.
	ErrNodePanic = errors.New("redlock: node call panicked")
	// ErrRecovering, inside one *NodeError: the node lost its data for the key
	// and sits out (WithRecoveryPeriod); the message says for how long.
	ErrRecovering = errors.New("redlock: node recovering from data loss")
)

// NodeError is one node's failure in one operation; get it with errors.As.
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

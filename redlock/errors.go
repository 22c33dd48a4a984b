package redlock

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/internal/quorum"
)

// Sentinel errors: every error of this package wraps one (or ctx.Err()).
var (
	// Another holder has the key, and the retries (or TryAcquire's attempt) lost.
	ErrNotAcquired = errors.New("redlock: lock not acquired")
	// Wraps ErrNotAcquired (test it first): votes split for 8 rounds, no holder.
	ErrSplitVote = fmt.Errorf("%w: split vote", ErrNotAcquired)
	// Too many nodes failed; one *NodeError per failed node is joined inside.
	ErrQuorumUnreachable = errors.New("redlock: quorum of nodes unreachable")
	// The lock is no longer ours (expired, released, taken over).
	ErrLockLost = errors.New("redlock: lock lost")
	// A bad argument or option; nothing was sent to a node.
	ErrInvalidArgument = errors.New("redlock: invalid argument")
	// Lock.Err after the lock's own Release (not an ErrLockLost).
	ErrReleased = errors.New("redlock: lock released")
	// In a *NodeError: that node's call panicked; the stack goes to the logger.
	ErrNodePanic = errors.New("redlock: node call panicked")
	// A node lost the key's data and sits out; with ErrNotAcquired: too many did (says how long).
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

// errUnreachable is the error of an operation (what, e.g. `acquire "k"`)
// that too many nodes failed (t.Failures): it wraps ErrQuorumUnreachable
// and each node's failure.
func errUnreachable(t *quorum.Tally, what string) error {
	return fmt.Errorf("%w: %s: %d of %d nodes failed: %w", ErrQuorumUnreachable, what, len(t.Failures), t.N, joined(t.Failures))
}

// joined is the nodes' failures as one error (nil when none).
func joined(failures []error) error {
	if len(failures) == 0 {
		return nil
	}
	return nodeErrors(slices.Clone(failures))
}

// nodeErrors are the failures of several nodes, as errors.Join would join
// them but on one line, so that a log line or a program's last words hold
// the whole reason.
type nodeErrors []error

func (e nodeErrors) Error() string {
	s := make([]string, len(e))
	for i, err := range e {
		s[i] = err.Error()
	}
	return strings.Join(s, "; ")
}

func (e nodeErrors) Unwrap() []error { return e }

func invalidArg(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}

// recoveringError is the failure of a node whose yes did not count because
// it lost its data: learned is how long it has kept its data since, and
// remaining how long it still sits out, by its own clock.
func recoveringError(name string, learned, remaining time.Duration) *NodeError {
	return &NodeError{Node: name, Op: "acquire", Err: fmt.Errorf("%w: lost its data %s ago, recovering for %s more",
		ErrRecovering, learned.Round(time.Millisecond), remaining.Round(time.Millisecond))}
}

// reasonRecovering is the Reason of an observe.Node for a node that sat out,
// and of an attempt lost because nodes sat out.
const reasonRecovering = "recovering"

package redlock

import (
	"context"
	"sync/atomic"
)

// health remembers, per node, whether it is failing: its last answer was an
// error or silence. It stays failing until it answers: its requests are
// still sent, and its next answer clears the mark; a "yes" never counts
// unless it arrives. A mark that lapsed after a while would lapse while the
// node is still silent (between two calls, or while a request to it is
// still on its way), and every call after that would wait for it again.
//
// An attempt does not wait for failing nodes once the nodes that answered
// are a majority and the outcome hinges only on the failing ones (see
// quorum.Round.Collect): with exactly a quorum of nodes alive, waiting for
// the dead ones would cost every contended attempt a node timeout. Because
// a majority must have answered, a stale mark (a node that came back while
// the client was idle) never makes a call give up with ErrQuorumUnreachable.
type health []atomic.Bool

// note records node i's answer to a request made under parent (err nil),
// or its failure; a failure of the caller's own cancellation marks nothing.
func (h health) note(parent context.Context, i int, err error) {
	switch {
	case err == nil:
		if h[i].Load() {
			h[i].Store(false)
		}
	case parent.Err() == nil: // not the caller's own cancellation
		h[i].Store(true)
	}
}

// failing reports whether node i is failing.
func (h health) failing(i int) bool { return h[i].Load() }

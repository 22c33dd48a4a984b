package redlock

import (
	"context"

	"github.com/quorumlock/quorumlock/observe"
)

// Reasons (observe.Event.Reason).
const (
	reasonContended   = "contended"
	reasonSplitVote   = "split_vote"
	reasonNoQuorum    = "quorum_unreachable"
	reasonCanceled    = "canceled"
	reasonExpired     = "expired"
	reasonInvalid     = "invalid"
	reasonNotOurs     = "not_ours"
	reasonUnconfirmed = "unconfirmed"
	reasonExtendFail  = "extension_failed"
	reasonMaxHold     = "max_hold"
	reasonTookOver    = "took_over"
)

// observerOf is what a client reports its events to: the WithObserver
// observer, or one that drops them, so that a report is one call.
func observerOf(o observe.Observer) observe.Observer {
	if o == nil {
		return observe.Func(func(observe.Event) {})
	}
	return withContext{o}
}

// withContext gives an event reported without a context the background
// one, so that an observer may use Event.Context without a nil check.
type withContext struct{ observe.Observer }

func (w withContext) Observe(e observe.Event) {
	if e.Context == nil {
		e.Context = context.Background()
	}
	w.Observer.Observe(e)
}

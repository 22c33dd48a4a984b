package election

import (
	"context"
	"errors"
	"time"
)

// fastLooks is how many quick looks follow a release announcement while no
// new leader is seen: the next leader's acquisition is not announced, but it
// usually follows a release within a round trip.
const fastLooks = 10

// Observe reports the election's leader as it changes: first the leader
// at the time of the call, then a value each time a look finds another
// term (a different Leader.ID), and a Leader with an empty ID when a look
// finds no leader. The channel is closed when ctx ends.
//
// A look is one Leader round. Observe looks at once when a node announces a
// release of the election's lock (a Resign while a candidate campaigns;
// redlock.Client.Released), then
// every tenth of the poll interval, up to ten times, until it sees a new
// leader; otherwise every poll interval (WithPollInterval, default 1s).
// So a change is reported at most a poll interval plus one Leader round
// after it happened, whether or not it was announced (a leader that died
// is not: its term ends when its lock expires, WithTTL), as long as a
// majority of the nodes answer and the receiver keeps reading. Observe
// reports states, not every step: a term that begins and ends between two
// looks is not reported, and while the receiver does not read, the changes
// meanwhile collapse into the latest one. Looks that fail (too few nodes
// answer) report nothing; the next look tries again. A report's Fence is
// as Leader.Fence says: the first report of a term may come from a look
// that raced its start, and a term is not reported again when its fence
// settles. Such a look can also report a candidate's attempt that reached a
// majority of the nodes and then failed (its value, under an ID that never
// held the term); the next look reports the term itself.
//
// Errors: redlock.ErrInvalidArgument for a nil ctx.
func (e *Election) Observe(ctx context.Context) (<-chan Leader, error) {
	if ctx == nil {
		return nil, invalidArg("nil context")
	}
	released, err := e.client.Released(ctx, e.name)
	if err != nil {
		return nil, err
	}
	out := make(chan Leader)
	go e.observe(ctx, released, out)
	return out, nil
}

func (e *Election) observe(ctx context.Context, released <-chan struct{}, out chan<- Leader) {
	defer close(out)
	var last Leader
	sent := false
	fast := 0
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-released:
			fast = fastLooks
		case <-t.C:
		}
		cur, err := e.Leader(ctx)
		if err == nil || errors.Is(err, ErrNoLeader) {
			if !sent || cur.ID != last.ID {
				select {
				case out <- cur:
				case <-ctx.Done():
					return
				}
				last, sent = cur, true
			}
			if cur.ID != "" {
				fast = 0
			}
		}
		delay := e.cfg.poll
		if fast > 0 {
			fast--
			delay = max(e.cfg.poll/10, time.Millisecond)
		}
		t.Reset(delay)
	}
}

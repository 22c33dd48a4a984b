package redlock

import (
	"context"
	"time"

	"github.com/quorumlock/quorumlock/internal/guard"
)

// Released returns a channel that receives a value when a node announces a
// release of key (Release, the undo of a failed attempt, ForceRelease), until
// ctx ends. Announcements that arrive while a value is pending are merged
// into it, and one is also sent when the subscriptions come back after a
// break (a release may have gone unheard meanwhile). Nodes announce only the
// release of a key that a waiter marked: an attempt that found it held,
// made by an Acquire that waits or by a client with a Released watcher on
// the key; a release nobody asked for
// publishes nothing. It is a hint, for watchers such as election.Observe
// (whose campaigners mark the key): a lock that expires is not announced,
// and with notifications off (WithReleaseNotifications(false)), on nodes
// that cannot subscribe, or after Close, the channel never receives; so
// pair it with polling. It waits up to a second for the first subscription
// to come up, so that a release right after it returns is heard.
// Errors: ErrInvalidArgument for a bad key.
func (c *Client) Released(ctx context.Context, key string) (<-chan struct{}, error) {
	if err := checkKey(ctx, key); err != nil {
		return nil, err
	}
	ch := make(chan struct{}, 1)
	name := c.keyName(key)
	h := &c.notify
	ready, ok := c.join(func(h *notifyHub) {
		if h.watchers == nil {
			h.watchers = map[string]map[chan struct{}]bool{}
		}
		if h.watchers[name] == nil {
			h.watchers[name] = map[chan struct{}]bool{}
			h.watching.Add(1)
		}
		h.watchers[name][ch] = true
	})
	if !ok {
		return ch, nil
	}
	guard.Go(c.logger, "redlock: release watcher", func() {
		<-ctx.Done()
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.watchers[name], ch)
		if len(h.watchers[name]) == 0 {
			delete(h.watchers, name)
			h.watching.Add(-1)
		}
		h.leave()
	})
	awaitReady(ctx, ready, time.Second)
	return ch, nil
}

// ping wakes the watchers of name, or all watchers when name is "".
// Called with h.mu.
func (h *notifyHub) ping(name string) {
	for n, set := range h.watchers {
		if name != "" && n != name {
			continue
		}
		for ch := range set {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

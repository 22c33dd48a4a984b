package redlock

import (
	"cmp"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"time"
)

// Notifier is implemented by nodes that can announce releases and deliver
// those announcements, so that waiters need not poll. RedisNode and
// MemoryNode implement it. A Client uses it when WithReleaseNotifications is
// on (the default); a Node without it works as before, its waiters polling.
type Notifier interface {
	// ReleaseNotify is Node.Release that, when it deletes key, publishes
	// key on channel, atomically with the delete where the node can. It
	// must stay idempotent: a resent call deletes and announces nothing.
	ReleaseNotify(ctx context.Context, key, token, channel string) (released bool, err error)
	// SubscribeReleases delivers the releases announced on channel to
	// onRelease until stop is called: the key, and an id that is the same
	// in every node's announcement of one release (releaseID of the
	// token), so that one release wakes one waiter. stop waits for the
	// delivery to end and may be called more than once. It returns at once: the
	// subscription is made, and remade after failures, in the background,
	// and onState reports each change: up when the node confirmed the
	// subscription (again), down with the cause when it broke, when
	// notifications may be missed. Callbacks must be quick and come from
	// one goroutine at a time per subscription. It fails with
	// ErrNotificationsUnsupported when the node cannot subscribe at all.
	SubscribeReleases(ctx context.Context, channel string, onRelease func(key, release string), onState func(up bool, err error)) (stop func(), err error)
}

// releaseID identifies a release in announcements: the first 16 hex digits
// of the token's SHA-1, as the release script computes it.
func releaseID(token string) string {
	sum := sha1.Sum([]byte(token))
	return hex.EncodeToString(sum[:8])
}

// ErrNotificationsUnsupported is returned by SubscribeReleases of a node
// that cannot subscribe, e.g. a RedisNode over a redis.Scripter that is not
// a full go-redis client.
var ErrNotificationsUnsupported = errors.New("redlock: node cannot subscribe to release notifications")

// ReleaseChannel is the Pub/Sub channel on which this client's releases are
// announced and its waiters listen: the key prefix + "released". Every
// client with the same prefix shares it.
func (c *Client) ReleaseChannel() string { return c.releaseChannel }

// Close stops the client's release subscriptions (the goroutines and
// connections that let waiters wake on a release). It does not release
// locks, and the Client stays usable afterwards: Acquire then waits by the
// retry policy's delays alone. Close is idempotent and always returns nil;
// call it when done with a Client that waited on contended locks.
// Subscriptions also end on their own a minute after the last waiter left.
func (c *Client) Close() error {
	c.notify.close()
	return nil
}

// releaseOn releases key on one node, announcing it when notifications are
// on and the node can.
func (c *Client) releaseOn(ctx context.Context, node Node, key, token string) (bool, error) {
	if nf, ok := node.(Notifier); ok && !c.cfg.noNotify {
		return nf.ReleaseNotify(ctx, key, token, c.ReleaseChannel())
	}
	return node.Release(ctx, key, token)
}

// subscriptionLinger is how long subscriptions outlive their last waiter,
// so that a steady trickle of contention does not resubscribe every time.
const subscriptionLinger = time.Minute

// notifyHub is a Client's side of release notifications: one subscription
// per Notifier node, shared by all waiters, and per key a queue of waiters
// so that one release wakes one waiter (FIFO) instead of all of them. Its
// zero value is ready; it starts subscribing on the first waiter.
//
// Per key, at most one waiter is "active": woken by a notification and now
// trying. Notifications that arrive meanwhile (every node announces the same
// release; the release may also not have reached every node when the first
// announcement arrives) set missed, and the active waiter, if it loses
// again, tries once more at once instead of sleeping. A waiter that leaves
// while active without the lock passes the wake on to the next.
type notifyHub struct {
	mu       sync.Mutex
	closed   bool
	gen      uint64      // incremented on each start; callbacks of older generations are ignored
	subs     []*nodeSub  // per node of the client; nil when not subscribed
	up       int         // subscriptions currently confirmed
	waiters  int         // registered waiters
	idle     *time.Timer // stops the subscriptions subscriptionLinger after the last waiter
	queues   map[string]*waitQueue
	seq      uint64
	disabled bool // no node is a Notifier
}

type nodeSub struct {
	stop   func()
	up     bool
	warned bool // a break was logged and not yet followed by "restored"
}

type waitQueue struct {
	members int       // registered waiters of the key, parked or not
	waiting []*waiter // parked, by arrival order
	active  *waiter
	missed  bool
	woke    string // id of the release that last woke a waiter
}

type waiter struct {
	key  string // full name on the nodes
	seq  uint64
	wake chan struct{} // buffered 1: the hub made this waiter active
}

// join registers a waiter for key (the full name), starting the
// subscriptions if needed. It returns nil when notifications are off or
// unavailable: the caller then just sleeps.
func (c *Client) joinWaiters(key string) *waiter {
	if c.cfg.noNotify {
		return nil
	}
	h := &c.notify
	h.mu.Lock()
	if h.closed || h.disabled {
		h.mu.Unlock()
		return nil
	}
	h.waiters++
	if h.idle != nil {
		h.idle.Stop()
	}
	h.seq++
	w := &waiter{key: key, seq: h.seq, wake: make(chan struct{}, 1)}
	if h.queues == nil {
		h.queues = map[string]*waitQueue{}
	}
	q := h.queues[key]
	if q == nil {
		q = &waitQueue{}
		h.queues[key] = q
	}
	q.members++
	start := h.subs == nil
	var gen uint64
	if start {
		h.gen++
		gen = h.gen
		h.subs = make([]*nodeSub, len(c.nodes))
	}
	h.mu.Unlock()
	if start {
		c.subscribe(gen)
	}
	return w
}

// subscribe starts one subscription per Notifier node for generation gen.
// It runs without h.mu: nodes may report their state synchronously.
func (c *Client) subscribe(gen uint64) {
	h := &c.notify
	channel := c.ReleaseChannel()
	subscribed := false
	for i, node := range c.nodes {
		nf, ok := node.(Notifier)
		if !ok {
			continue
		}
		stop, err := nf.SubscribeReleases(context.Background(), channel,
			func(key, release string) { c.released(gen, key, release) },
			func(up bool, err error) { c.subState(gen, i, up, err) })
		if err != nil {
			if !errors.Is(err, ErrNotificationsUnsupported) {
				c.logger.Warn("redlock: cannot subscribe to release notifications; waiting by the retry policy's delays",
					"node", node.Name(), "channel", channel, "err", err)
			}
			continue
		}
		subscribed = true
		h.mu.Lock()
		if h.gen != gen || h.subs == nil {
			h.mu.Unlock()
			stop() // closed or idled while we subscribed
			continue
		}
		if h.subs[i] == nil {
			h.subs[i] = &nodeSub{}
		}
		h.subs[i].stop = stop
		h.mu.Unlock()
	}
	if !subscribed {
		h.mu.Lock()
		if h.gen == gen {
			h.disabled = true // no node can notify: don't try again
		}
		h.mu.Unlock()
	}
}

// subState records a subscription's change and logs breaks once.
func (c *Client) subState(gen uint64, i int, up bool, err error) {
	h := &c.notify
	h.mu.Lock()
	if h.gen != gen || h.subs == nil {
		h.mu.Unlock()
		return
	}
	s := h.subs[i]
	if s == nil {
		s = &nodeSub{}
		h.subs[i] = s
	}
	var logBroken, logRestored bool
	if up && !s.up {
		s.up = true
		h.up++
		logRestored = s.warned
		s.warned = false
		if h.up == 1 {
			// Nobody was listening until now: a release may have gone
			// unnoticed. Let each key's first waiter look.
			for _, q := range h.queues {
				h.announce(q, "")
			}
		}
	} else if !up {
		if s.up {
			s.up = false
			h.up--
		}
		logBroken = !s.warned
		s.warned = true
	}
	h.mu.Unlock()
	name := c.nodes[i].Name()
	switch {
	case logBroken:
		c.logger.Warn("redlock: release notifications broken; waiting by the retry policy's delays until they are back",
			"node", name, "channel", c.ReleaseChannel(), "err", err)
	case logRestored:
		c.logger.Info("redlock: release notifications restored", "node", name, "channel", c.ReleaseChannel())
	}
}

// released handles one announcement of key (its full name).
func (c *Client) released(gen uint64, key, release string) {
	h := &c.notify
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gen != gen || h.subs == nil {
		return
	}
	if q := h.queues[key]; q != nil {
		h.announce(q, release)
	}
}

// announce wakes the first parked waiter of q, or, when one is already
// trying or none is parked, remembers the announcement. Another node's
// announcement of a release that already woke a waiter who then got the
// lock wakes no one.
// Called with h.mu.
func (h *notifyHub) announce(q *waitQueue, release string) {
	if q.active != nil || len(q.waiting) == 0 {
		q.missed = true
		return
	}
	if release != "" && release == q.woke {
		return
	}
	q.woke = release
	h.wakeNext(q)
}

func (h *notifyHub) wakeNext(q *waitQueue) {
	if len(q.waiting) == 0 {
		q.missed = true
		return
	}
	w := q.waiting[0]
	q.waiting = q.waiting[1:]
	q.active = w
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// waitRelease sleeps d, or until a release of w's key is announced to w,
// or until ctx ends. With w nil it just sleeps.
func (c *Client) waitRelease(ctx context.Context, w *waiter, d time.Duration) error {
	if w == nil {
		return sleep(ctx, d)
	}
	h := &c.notify
	if h.park(w) { // announced while we tried: try again now
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.wake:
		return nil
	case <-t.C:
		h.unpark(w)
		return nil
	case <-ctx.Done():
		h.unpark(w)
		return context.Cause(ctx)
	}
}

// park queues w by arrival order, or reports true when a release was
// announced while it (or no one) was listening: the caller tries at once,
// as the active waiter.
func (h *notifyHub) park(w *waiter) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-w.wake:
	default:
	}
	q := h.queues[w.key]
	if q.active == w {
		// Woken, and lost: the release may not have reached every node
		// yet, so the other nodes' announcements of it must wake us again.
		q.active = nil
		q.woke = ""
	}
	if q.missed && q.active == nil {
		q.missed = false
		q.active = w
		return true
	}
	i, _ := slices.BinarySearchFunc(q.waiting, w.seq, func(x *waiter, seq uint64) int { return cmp.Compare(x.seq, seq) })
	q.waiting = slices.Insert(q.waiting, i, w)
	return false
}

// unpark takes w out of its queue after its timer fired. If a wake raced
// with the timer, w stays active: it is about to try anyway.
func (h *notifyHub) unpark(w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[w.key]
	q.waiting = slices.DeleteFunc(q.waiting, func(x *waiter) bool { return x == w })
}

// leaveWaiters unregisters w when its Acquire returns. acquired says whether
// it got the lock; if it did not and was the active waiter, the next one
// gets its turn.
func (c *Client) leaveWaiters(w *waiter, acquired bool) {
	if w == nil {
		return
	}
	h := &c.notify
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[w.key]
	q.waiting = slices.DeleteFunc(q.waiting, func(x *waiter) bool { return x == w })
	if acquired {
		q.missed = false // what was announced is ours now
	}
	if q.active == w {
		q.active = nil
		if !acquired {
			h.wakeNext(q)
		}
	}
	if q.members--; q.members == 0 {
		delete(h.queues, w.key)
	}
	h.waiters--
	if h.waiters == 0 && h.subs != nil && !h.closed {
		gen := h.gen
		if h.idle != nil {
			h.idle.Stop()
		}
		h.idle = time.AfterFunc(subscriptionLinger, func() { h.stopIdle(gen) })
	}
}

func (h *notifyHub) stopIdle(gen uint64) {
	h.mu.Lock()
	if h.gen != gen || h.waiters > 0 || h.subs == nil {
		h.mu.Unlock()
		return
	}
	stops := h.detach()
	h.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}

func (h *notifyHub) close() {
	h.mu.Lock()
	h.closed = true
	if h.idle != nil {
		h.idle.Stop()
	}
	stops := h.detach()
	h.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}

// detach forgets the current subscriptions and returns their stop
// functions. Called with h.mu.
func (h *notifyHub) detach() []func() {
	var stops []func()
	for _, s := range h.subs {
		if s != nil && s.stop != nil {
			stops = append(stops, s.stop)
		}
	}
	h.subs = nil
	h.up = 0
	h.gen++
	return stops
}

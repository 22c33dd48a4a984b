// Package wake is a redlock Client's side of release notifications: it
// tells a waiter for a lock when a release can help its next attempt, so
// that waiters come back on a release instead of at their retry delay. It
// imports nothing of redlock; redlock drives it through a Hub.
package wake

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/internal/guard"
	"github.com/quorumlock/quorumlock/node"
)

// subscriptionLinger is how long subscriptions outlive their last waiter,
// so that a steady trickle of contention does not resubscribe every time.
const subscriptionLinger = time.Minute

// Hub is a Client's side of release notifications: one subscription
// per Notifier node, shared by all waiters, and per key a queue of waiters
// so that one release wakes one waiter (FIFO) instead of all of them. It starts
// subscribing on the first waiter.
//
// Per key, at most one waiter is "active": woken by a notification and now
// trying. Notifications that arrive meanwhile (every node announces the same
// release; the release may also not have reached every node when the first
// announcement arrives) are kept in missed, and the active waiter, if it
// loses again, tries once more at once instead of sleeping. A waiter that
// leaves while active without the lock passes the wake on to the next.
//
// Only the release of the holder that beat the last attempt wakes a waiter
// (see On): the undo of another client's failed attempt also announces
// a release, and two waiters woken by each other's undo would retry in a loop
// while the holder keeps the lock.
type Hub struct {
	off     bool        // Config.Off
	nodes   []node.Node // the client's
	channel string      // the nodes' release channel
	logger  *slog.Logger
	timeout time.Duration // bounds each attempt to subscribe, so that Close never waits longer for one

	mu       sync.Mutex
	closed   bool
	gen      uint64      // incremented on each start; callbacks of older generations are ignored
	subs     []*nodeSub  // per node of the client; nil when not subscribed
	up       int         // subscriptions currently confirmed
	waiters  int         // registered waiters
	idle     *time.Timer // stops the subscriptions subscriptionLinger after the last waiter
	queues   map[string]*waitQueue
	seq      uint64
	disabled bool                              // no node can subscribe
	ups      uint64                            // transitions from no subscription up to one up
	ready    chan struct{}                     // closed when a subscription of this generation is up (or none can be)
	watchers map[string]map[chan struct{}]bool // Released's channels by full name
}

type nodeSub struct {
	stop   func()
	up     bool
	warned bool // a break was logged and not yet followed by "restored"
}

type waitQueue struct {
	members int       // registered waiters of the key, parked or not
	waiting []*Waiter // parked, by arrival order
	active  *Waiter
	own     map[string]bool // release ids of its waiters' own attempts
	missed  []string        // announced while nobody was parked ("" wakes anyone), at most maxMissed
	heard   []heardCount    // announcements heard of the latest releases (see majorityHeard)
	on      On              // what wakes the parked waiters: set by the last park
	woke    string          // id of the release that last woke a waiter
}

// Config is what a Hub needs of its client.
type Config struct {
	Off     bool          // notifications off: no waiter registers, every wait is a plain sleep
	Nodes   []node.Node   // the client's nodes; those that implement node.Subscriber are subscribed to
	Channel string        // the nodes' release channel
	Logger  *slog.Logger  // subscription breaks and restores; nil logs nothing
	Timeout time.Duration // bounds each attempt to subscribe, so that Close never waits longer for one
}

// New returns a Hub over cfg's nodes. It subscribes on the first waiter,
// not before.
func New(cfg Config) *Hub {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Hub{off: cfg.Off, nodes: cfg.Nodes, channel: cfg.Channel, logger: logger, timeout: cfg.Timeout}
}

// maxMissed bounds waitQueue.missed; past it an "" entry stands for the rest.
const maxMissed = 8

// On says which release announcements can help a waiter's next
// attempt, from what its last attempt found. With the zero On (the attempt
// found no quorum) no release wakes it: only a subscription coming up or a
// wake passed on.
type On struct {
	All    bool   // no holder with a majority was seen (a split): any release
	Holder string // the release id of the token that held a majority
}

// wakes reports whether an announcement of release (a release id, or "" when
// a subscription came up or a wake is passed on) can help.
func (o On) wakes(release string) bool {
	return release == "" || o.All || release == o.Holder
}

// Waiter is one Acquire call that waits for releases of its key, from Join
// to Leave.
type Waiter struct {
	key   string // full name on the nodes
	seq   uint64
	mine  []string      // release ids of the tokens of its attempts
	blind bool          // parked after an attempt no subscription covered
	wake  chan struct{} // buffered 1: the hub made this waiter active
	woke  string        // the release id that last woke it ("" for none or a subscription)
	call  Call          // what its Acquire call passed to Join, for Claim's caller

	claimed bool // a Release of this client is handing the key over to it (Claim)
	handed  any  // what that Release delivered, until the waiter takes it (Handed)
}

// Call is what a Release needs of a waiter's Acquire call to take the key
// for it (Claim).
type Call struct {
	Ctx   context.Context // the call's
	TTL   time.Duration   // of the lock it asks for
	Began time.Time       // when the call began
}

// Call returns what the waiter's call passed to Join.
func (w *Waiter) Call() Call { return w.call }

// Join registers a waiter for key (the full name), starting the
// subscriptions if needed. It returns nil when notifications are off or
// unavailable: the caller then just sleeps.
//
// A call that starts the subscriptions waits (at most timeout) until one is
// up, so that its first attempt is already covered: a release during the
// attempt is then seen, and no extra attempt is needed to make up for a
// blind one.
func (h *Hub) Join(ctx context.Context, key string, timeout time.Duration, call Call) *Waiter {
	var w *Waiter
	ready, ok := h.register(func(h *Hub) {
		h.seq++
		w = &Waiter{key: key, seq: h.seq, wake: make(chan struct{}, 1), call: call}
		if h.queues == nil {
			h.queues = map[string]*waitQueue{}
		}
		q := h.queues[key]
		if q == nil {
			q = &waitQueue{}
			h.queues[key] = q
		}
		q.members++
	})
	if !ok {
		return nil
	}
	awaitReady(ctx, ready, timeout)
	return w
}

// register adds a waiter or watcher (add runs with h.mu held) and
// starts the subscriptions if none run. It returns the channel closed when
// one is up (nil when one is up already, or none can be), and false when
// notifications are off or unavailable: nothing was registered.
func (h *Hub) register(add func(h *Hub)) (ready chan struct{}, ok bool) {
	if h.off {
		return nil, false
	}
	h.mu.Lock()
	if h.closed || h.disabled {
		h.mu.Unlock()
		return nil, false
	}
	h.waiters++
	if h.idle != nil {
		h.idle.Stop()
	}
	add(h)
	start := h.subs == nil
	var gen uint64
	if start {
		h.gen++
		gen = h.gen
		h.subs = make([]*nodeSub, len(h.nodes))
		h.ready = make(chan struct{})
	}
	ready = h.ready
	h.mu.Unlock()
	if start {
		h.subscribe(gen)
	}
	return ready, true
}

// awaitReady waits until ready is closed (a subscription is up, or none can
// be), for at most timeout or until ctx ends. A nil ready returns at once.
func awaitReady(ctx context.Context, ready chan struct{}, timeout time.Duration) {
	if ready == nil {
		return
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ready:
	case <-t.C:
	case <-ctx.Done():
	}
}

// Seen is what a waiter knew of the subscriptions when an attempt began:
// Mark returns it, WaitRelease compares it with now.
type Seen struct {
	up  bool
	ups uint64
}

// Mark records the subscriptions' state before an attempt of w with
// token, and the token's release id: the undo of w's own failed attempt
// announces a release that must not wake w's key's waiters.
func (h *Hub) Mark(w *Waiter, token string) Seen {
	if w == nil {
		return Seen{}
	}
	id := node.ReleaseID(token)
	h.mu.Lock()
	defer h.mu.Unlock()
	if q := h.queues[w.key]; q != nil {
		if q.own == nil {
			q.own = map[string]bool{}
		}
		q.own[id] = true
		w.mine = append(w.mine, id) // the undo of an earlier attempt may land later
	}
	return Seen{up: h.up > 0, ups: h.ups}
}

// subscribe starts one subscription per Notifier node for generation gen.
// It runs without h.mu: nodes may report their state synchronously.
func (h *Hub) subscribe(gen uint64) {
	channel := h.channel
	subscribed := false
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
	defer cancel()
	for i, nd := range h.nodes {
		sub, ok := nd.(node.Subscriber)
		if !ok {
			continue // waits by the retry policy, as over a node that returns ErrNotificationsUnsupported
		}
		stop, err := sub.Subscribe(ctx, channel,
			func(key, release string) { h.released(gen, key, release) },
			func(up bool, err error) { h.subState(gen, i, up, err) })
		if err != nil {
			if !errors.Is(err, node.ErrNotificationsUnsupported) {
				h.logger.Warn("redlock: cannot subscribe to release notifications; waiting by the retry policy's delays",
					"node", nd.Name(), "channel", channel, "err", err)
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
			close(h.ready)
			h.ready = nil
		}
		h.mu.Unlock()
	}
}

// subState records a subscription's change and logs breaks once.
func (h *Hub) subState(gen uint64, i int, up bool, err error) {
	guard.Log(h.logger, "redlock: release subscription", err, "node", h.nodes[i].Name())
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
			// Waiters whose attempt began before this saw it blind; they
			// look again at once (see park).
			h.ups++
			if h.ready != nil {
				close(h.ready)
				h.ready = nil
			}
		}
		// Waiters parked after a blind attempt look again now, and so do
		// all parked waiters when a subscription that broke is back: a
		// release while it was down went unheard.
		if h.up == 1 || logRestored {
			h.ping("") // a release may have gone unheard
		}
		for _, q := range h.queues {
			if logRestored || (h.up == 1 && slices.ContainsFunc(q.waiting, func(x *Waiter) bool { return x.blind })) {
				for _, x := range q.waiting {
					x.blind = false
				}
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
	name := h.nodes[i].Name()
	switch {
	case logBroken:
		h.logger.Warn("redlock: release notifications broken; waiting by the retry policy's delays until they are back",
			"node", name, "channel", h.channel, "err", err)
	case logRestored:
		h.logger.Info("redlock: release notifications restored", "node", name, "channel", h.channel)
	}
}

// released handles one announcement of key (its full name).
func (h *Hub) released(gen uint64, key, release string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gen != gen || h.subs == nil {
		return
	}
	if q := h.queues[key]; q != nil && !q.own[release] {
		h.announce(q, release)
	}
	h.ping(key)
}

// announce wakes the first parked waiter of q, or, when one is already
// trying or none is parked, remembers the announcement. A release counts
// once a majority of the nodes announced it (fewer when subscriptions are
// down: see majorityHeard): before that, the holder still holds on a
// majority and an attempt would lose to it. Another node's announcement of
// a release that already woke a waiter who then got the lock wakes no one.
// Called with h.mu.
func (h *Hub) announce(q *waitQueue, release string) {
	if release != "" && !h.majorityHeard(q, release) {
		return
	}
	if q.active != nil || len(q.waiting) == 0 {
		q.miss(release)
		return
	}
	if !q.on.wakes(release) || (release != "" && release == q.woke) {
		return
	}
	q.woke = release
	h.wakeNext(q, release)
}

// majorityHeard counts one more announcement of release and reports
// whether a majority of the nodes have announced it, of which the nodes
// without a subscription up are presumed to have (they may have, unheard).
// The counts of the latest maxHeard releases are kept: a release is
// announced by every node within moments, long before that many others.
// Called with h.mu.
func (h *Hub) majorityHeard(q *waitQueue, release string) bool {
	i := slices.IndexFunc(q.heard, func(c heardCount) bool { return c.release == release })
	if i < 0 {
		if len(q.heard) == maxHeard {
			q.heard = append(q.heard[:0], q.heard[1:]...) // the oldest goes
		}
		q.heard = append(q.heard, heardCount{release: release})
		i = len(q.heard) - 1
	}
	q.heard[i].n++
	unheard := len(h.nodes) - h.up
	return q.heard[i].n+unheard >= len(h.nodes)/2+1
}

// heardCount is how many nodes announced one release.
type heardCount struct {
	release string
	n       int
}

// maxHeard bounds waitQueue.heard.
const maxHeard = 16

// miss keeps an announcement for the next waiter to park.
func (q *waitQueue) miss(release string) {
	if len(q.missed) == maxMissed-1 {
		release = "" // full: wake the next waiter whatever it waits for
	}
	if len(q.missed) < maxMissed && !slices.Contains(q.missed, release) {
		q.missed = append(q.missed, release)
	}
}

func (h *Hub) wakeNext(q *waitQueue, release string) {
	if len(q.waiting) == 0 {
		q.miss(release)
		return
	}
	w := q.waiting[0]
	q.waiting = q.waiting[1:]
	q.active = w
	w.woke = release
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// WaitRelease sleeps d, or until a release of w's key that on says can help
// is announced to w, or until ctx ends. With w nil it just sleeps. s is what
// w knew of the subscriptions when its last attempt began.
func (h *Hub) WaitRelease(ctx context.Context, w *Waiter, s Seen, on On, d time.Duration) error {
	if w == nil {
		return sleep(ctx, d)
	}
	if h.park(w, s, on) { // announced while we tried, or we tried blind: try again now
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
		if h.unpark(w) {
			<-w.wake // claimed: the hand-over's outcome comes soon
		}
		return nil
	case <-ctx.Done():
		if h.unpark(w) {
			<-w.wake
			h.mu.Lock()
			handed := w.handed != nil
			h.mu.Unlock()
			if handed { // the lock is ours after all: the caller takes it
				return nil
			}
		}
		return context.Cause(ctx)
	}
}

// park queues w by arrival order, or reports true when a release was
// announced while it (or no one) was listening, or when its last attempt
// began before a subscription came up (a release then may have gone
// unseen): the caller tries at once, as the active waiter.
func (h *Hub) park(w *Waiter, s Seen, on On) bool {
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
	q.on = on
	w.woke = ""
	missed := slices.ContainsFunc(q.missed, on.wakes)
	unseen := !s.up || s.ups != h.ups // the attempt began while nobody listened
	blind := h.up > 0 && unseen
	if (missed || blind) && q.active == nil {
		if on.Holder != "" && slices.Contains(q.missed, on.Holder) {
			w.woke = on.Holder
		}
		q.missed = q.missed[:0]
		q.active = w
		return true
	}
	if q.active == nil {
		q.missed = q.missed[:0] // none of them can help
	}
	// Still nobody listening: when a subscription comes up, it wakes this
	// waiter to look again (a release meanwhile went unheard).
	w.blind = unseen
	i, _ := slices.BinarySearchFunc(q.waiting, w.seq, func(x *Waiter, seq uint64) int { return cmp.Compare(x.seq, seq) })
	q.waiting = slices.Insert(q.waiting, i, w)
	return false
}

// unpark takes w out of its queue after its timer fired. If a wake raced
// with the timer, w stays active: it is about to try anyway. It reports
// whether a Release is handing the key over to w: w must then wait for
// its wake, which the Release sends whatever the outcome.
func (h *Hub) unpark(w *Waiter) (claimed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[w.key]
	q.waiting = slices.DeleteFunc(q.waiting, func(x *Waiter) bool { return x == w })
	return w.claimed
}

// Claim takes the first parked waiter for key (its full name), if no
// waiter of key is trying now, for a Release of this client to hand the
// key over to: the waiter stays parked, ignoring its timer and its
// context, until Deliver. It returns nil when there is none.
func (h *Hub) Claim(key string) *Waiter {
	if h.off {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[key]
	if q == nil || q.active != nil || len(q.waiting) == 0 {
		return nil
	}
	w := q.waiting[0]
	q.waiting = q.waiting[1:]
	q.active = w
	w.claimed = true
	return w
}

// Deliver ends w's claim and wakes it: with v, the lock it now holds under
// token (its Handed), or with nil, to try as a woken waiter.
func (h *Hub) Deliver(w *Waiter, v any, token string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w.claimed = false
	if v != nil {
		w.handed = v
		id := node.ReleaseID(token) // the lock's release is what others wait for
		w.mine = append(w.mine, id)
		if q := h.queues[w.key]; q != nil {
			if q.own == nil {
				q.own = map[string]bool{}
			}
			q.own[id] = true
		}
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Parked is the number of waiters parked for key (its full name).
func (h *Hub) Parked(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if q := h.queues[key]; q != nil {
		return len(q.waiting)
	}
	return 0
}

// Handed returns, once, what a Release delivered to w; nil if none.
func (h *Hub) Handed(w *Waiter) any {
	if w == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	v := w.handed
	w.handed = nil
	return v
}

// Leave unregisters w when its Acquire returns. acquired says whether
// it got the lock; if it did not and was the active waiter, the next one
// gets its turn.
func (h *Hub) Leave(w *Waiter, acquired bool) {
	if w == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[w.key]
	q.waiting = slices.DeleteFunc(q.waiting, func(x *Waiter) bool { return x == w })
	for _, id := range w.mine {
		delete(q.own, id)
	}
	if acquired {
		q.missed = q.missed[:0] // what was announced is ours now
		if len(w.mine) > 0 {
			// The lock is ours: its release is the one the others wait for.
			q.on = On{Holder: w.mine[len(w.mine)-1]}
		}
	}
	if q.active == w {
		q.active = nil
		if !acquired {
			h.wakeNext(q, "")
		}
	}
	if q.members--; q.members == 0 {
		delete(h.queues, w.key)
	}
	h.unregister()
}

// unregister drops a waiter or watcher, and stops the subscriptions a
// while after the last one left. Called with h.mu.
func (h *Hub) unregister() {
	h.waiters--
	if h.waiters == 0 && h.subs != nil && !h.closed {
		gen := h.gen
		if h.idle != nil {
			h.idle.Stop()
		}
		h.idle = time.AfterFunc(subscriptionLinger, func() { h.stopIdle(gen) })
	}
}

func (h *Hub) stopIdle(gen uint64) {
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

// Close stops the subscriptions for good: no waiter or watcher registers
// after it.
func (h *Hub) Close() {
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
func (h *Hub) detach() []func() {
	var stops []func()
	for _, s := range h.subs {
		if s != nil && s.stop != nil {
			stops = append(stops, s.stop)
		}
	}
	h.subs = nil
	h.up = 0
	h.gen++
	if h.ready != nil {
		close(h.ready)
		h.ready = nil
	}
	return stops
}

// WokeBy returns the id of the release that last woke w (or made it try at
// once), "" when none did.
func (h *Hub) WokeBy(w *Waiter) string {
	if w == nil {
		return ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return w.woke
}

// ReleasedLocally wakes this client's next waiter for key (its full name)
// as soon as our own Release succeeded, without waiting for the nodes'
// announcement to travel through Pub/Sub: within one process the handoff
// then costs no extra round trip. The nodes' announcements of the same
// release carry the same id and wake no one else.
func (h *Hub) ReleasedLocally(key, token string) {
	if h.off {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.queues == nil {
		return
	}
	if q := h.queues[key]; q != nil {
		h.announce(q, node.ReleaseID(token))
	}
}

// Watch registers a watcher of name (a key's full name) until ctx ends:
// the channel redlock's Client.Released returns. It waits up to a second for the
// first subscription to come up.
func (h *Hub) Watch(ctx context.Context, name string) <-chan struct{} {
	ch := make(chan struct{}, 1)
	ready, ok := h.register(func(h *Hub) {
		if h.watchers == nil {
			h.watchers = map[string]map[chan struct{}]bool{}
		}
		if h.watchers[name] == nil {
			h.watchers[name] = map[chan struct{}]bool{}
		}
		h.watchers[name][ch] = true
	})
	if !ok {
		return ch
	}
	guard.Go(h.logger, "redlock: release watcher", func() {
		<-ctx.Done()
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.watchers[name], ch)
		if len(h.watchers[name]) == 0 {
			delete(h.watchers, name)
		}
		h.unregister()
	})
	awaitReady(ctx, ready, time.Second)
	return ch
}

// ping wakes the watchers of name, or all watchers when name is "".
// Called with h.mu.
func (h *Hub) ping(name string) {
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

// sleep waits d, or until ctx ends (returning its cause).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

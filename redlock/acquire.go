package redlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/quorumlock/quorumlock/node"
)

// Acquire takes the lock named key for ttl, retrying per the client's retry
// policy while other holders have it. It returns a *Lock held on a majority
// of nodes, valid until Lock.ValidUntil, or an error that wraps
// ErrNotAcquired (contention outlasted the retries; with ErrSplitVote too
// when the last attempts split the votes), ErrQuorumUnreachable
// (too many nodes failed), ErrInvalidArgument, or ctx.Err().
//
// Between attempts it waits the policy's random delay, but never past the
// moment the holder's key expires when the nodes report it, nor past the
// holder's release when release notifications are on (the default; see
// WithReleaseNotifications). Waiters of one Client for one key are woken
// one release at a time, in arrival order, so they do not stampede.
// Attempts that split the votes with other clients are resolved as in
// TryAcquire, without using up retries.
func (c *Client) Acquire(ctx context.Context, key string, ttl time.Duration) (*Lock, error) {
	return c.acquire(ctx, key, ttl, c.cfg.retry.NewBackOff(), true)
}

// TryAcquire makes a single attempt: it returns an error that wraps
// ErrNotAcquired when another holder has the lock. An attempt in which the
// votes split between clients so that none has a majority is not "held":
// TryAcquire resolves it (see "Split votes" in the package doc), within a
// few quick rounds, and reports ErrNotAcquired only when another client
// then holds the lock or the rounds run out; in the latter case the error
// wraps ErrSplitVote as well.
func (c *Client) TryAcquire(ctx context.Context, key string, ttl time.Duration) (*Lock, error) {
	return c.acquire(ctx, key, ttl, &backoff.StopBackOff{}, false)
}

// maxSplitRounds bounds the rounds in a row that one call spends resolving
// split votes.
const maxSplitRounds = 8

// stragglerShare: a node that has not answered when every other node has
// gets at least this share of the node timeout (see round.stragglersDue),
// so that a slower but live node still has its say in a split.
const stragglerShare = 10

// maxBehind bounds the quick looks in a row after a wake by a release that
// had not reached a majority yet.
const maxBehind = 3

func (c *Client) acquire(ctx context.Context, key string, ttl time.Duration, b backoff.BackOff, waits bool) (*Lock, error) {
	if err := c.checkArgs(ctx, key, ttl); err != nil {
		return nil, err
	}
	if err := checkContextOwner(ctx); err != nil {
		return nil, err
	}
	if err := c.ready(ctx, c.cfg.timeoutFor(ttl)); err != nil {
		return nil, err
	}
	name := c.keyName(key)
	began := time.Now()
	var w *waiter
	if waits {
		// Registered before the first attempt, so that a release that
		// lands while an attempt is in flight is not missed.
		w = c.joinWaiters(ctx, name, c.cfg.timeoutFor(ttl))
	}
	acquired := false
	defer func() { c.leaveWaiters(w, acquired) }()
	var (
		retryAt time.Time    // when the current retry delay of the policy runs out
		token   string       // kept across rounds while we win a split
		sent    *unanswered  // the token's requests per node
		splits  int          // split rounds in a row
		prev    node.Holding // the holder before us, seen by the rounds of token
		behind  int          // attempts in a row lost to the holder whose release woke us
		ahead   string       // that holder's release id
		undone  []string     // release ids of the tokens this call gave up (see gaveUpToken)
	)
	for attempts := 1; ; attempts++ {
		if token == "" {
			token, sent, prev = newToken(), newUnanswered(len(c.nodes)), node.Holding{}
		}
		c.observe(Event{Kind: EventAttempt, Key: key, Attempts: attempts, Context: ctx})
		seen := c.notify.mark(w, token)
		o := c.attempt(ctx, key, name, token, sent, ttl, w != nil || c.notify.watched(name), undone)
		if o.prev.Token != "" && o.prev.Fence >= prev.Fence {
			prev = o.prev
		}
		if o.lock != nil {
			o.lock.previous = prev
			acquired = true
			e := Event{Kind: EventAcquired, Key: key, Attempts: attempts, Fence: o.lock.fence, Latency: time.Since(began), Context: ctx}
			if prev.Token != "" { // what TookOver reports
				e.Reason = reasonTookOver
			}
			c.observe(e)
			if c.logger.Enabled(ctx, slog.LevelDebug) {
				c.logger.DebugContext(ctx, "redlock: acquired", "key", key, "token", shortToken(token),
					"fence", o.lock.fence, "attempts", attempts, "validity", time.Until(o.lock.ValidUntil()))
			}
			return o.lock, nil
		}
		if !o.keep {
			undone = gaveUpToken(undone, token)
			token = ""
		}
		if errors.Is(o.err, ErrInvalidArgument) { // a node found to be a duplicate, say
			return nil, c.gaveUp(ctx, key, reasonInvalid, attempts, began, o.err)
		}
		if o.held || o.split {
			c.observe(Event{Kind: EventContended, Key: key, Attempts: attempts, Reason: o.reason(), Context: ctx})
		}
		if ctx.Err() != nil {
			c.abandon(key, name, token, ttl)
			return nil, c.gaveUp(ctx, key, reasonCanceled, attempts, began, fmt.Errorf("redlock: acquire %q: %w", key, context.Cause(ctx)))
		}
		if o.split {
			// Resolve the split now, without using up a retry: the winner
			// asks again as soon as the losers' undo can have landed, the
			// losers look again once the winner can have finished, or
			// when it releases.
			if splits++; splits <= maxSplitRounds {
				d := o.rtt + rand.N(o.rtt/2+time.Microsecond)
				if !o.keep {
					d = 3*o.rtt + rand.N(o.rtt+time.Microsecond)
				}
				d = max(d, 100*time.Microsecond)
				var err error
				if o.keep {
					err = sleep(ctx, d)
				} else {
					err = c.waitRelease(ctx, w, seen, o.wake, d)
				}
				if err != nil {
					c.abandon(key, name, token, ttl)
					return nil, c.gaveUp(ctx, key, reasonCanceled, attempts, began, fmt.Errorf("redlock: acquire %q: %w", key, err))
				}
				continue
			}
			c.abandon(key, name, token, ttl)
			undone = gaveUpToken(undone, token)
			token = ""
		}
		splits = 0
		// A retry of the policy is used up when its delay runs out, not
		// when a release notification or the holder's expiry brings us
		// back early: within one delay we try again on every such wake, so
		// notifications speed waiters up without shrinking their budget.
		now := time.Now()
		if !now.Before(retryAt) {
			delay := b.NextBackOff()
			if delay == backoff.Stop {
				return nil, c.gaveUp(ctx, key, o.reason(), attempts, began, fmt.Errorf("redlock: acquire %q: gave up after %d attempt(s): %w", key, attempts, o.err))
			}
			retryAt = now.Add(delay)
		}
		delay := retryAt.Sub(now)
		if o.wait > 0 && o.wait < delay {
			// The holder's key expires before our next scheduled try: come
			// back just then, spread by a little jitter.
			delay = o.wait + rand.N(2*time.Millisecond)
		}
		if o.held && o.wake.holder != "" && c.notify.wokeBy(w) == o.wake.holder {
			ahead = o.wake.holder
		}
		if o.held && o.wake.holder == ahead && behind < maxBehind {
			// A node announced the holder's release, but the release had
			// not reached a majority when we tried: it is on its way, and
			// nodes that cannot announce it would leave us asleep. Look
			// again in two round trips, then four, then six.
			behind++
			delay = min(delay, time.Duration(behind)*max(2*o.rtt, time.Millisecond)+rand.N(o.rtt+time.Microsecond))
		} else {
			behind, ahead = 0, ""
		}
		if err := c.waitRelease(ctx, w, seen, o.wake, delay); err != nil {
			return nil, c.gaveUp(ctx, key, reasonCanceled, attempts, began, fmt.Errorf("redlock: acquire %q: %w", key, err))
		}
	}
}

// maxUndone bounds the tokens a call remembers having given up.
const maxUndone = 4

// gaveUpToken adds token's release id to undone, the tokens this call gave
// up and is deleting in the background: a node that still holds one (its
// delete has not landed yet) is not held by another client, and an attempt
// that counted it so could call the key held by a token that is about to
// vanish, and sleep while the key is free.
func gaveUpToken(undone []string, token string) []string {
	if token == "" {
		return undone
	}
	if len(undone) == maxUndone {
		undone = append(undone[:0], undone[1:]...)
	}
	return append(undone, node.ReleaseID(token))
}

func (c *Client) gaveUp(ctx context.Context, key, reason string, attempts int, began time.Time, err error) error {
	c.observe(Event{Kind: EventNotAcquired, Key: key, Reason: reason, Attempts: attempts, Latency: time.Since(began), Err: err, Context: ctx})
	return err
}

// abandon undoes a split we were winning, when we give it up.
func (c *Client) abandon(key, name, token string, ttl time.Duration) {
	if token != "" {
		c.undo(key, name, token, ttl, nil)
	}
}

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

// outcome is what one attempt came to.
type outcome struct {
	lock  *Lock
	err   error
	wait  time.Duration // until the holder's keys expire on enough nodes, when known
	split bool          // no client holds a majority of the nodes that answered
	held  bool          // another client holds a majority
	wake  wakeOn        // which release announcements can help the next attempt
	keep  bool          // split: we won it and keep our keys for the next round
	rtt   time.Duration // how long the nodes' replies took (see round.repliedIn)
	prev  node.Holding  // the previous holder with the largest fence that our nodes reported
}

// attempt is one round of the Redlock algorithm: ask every node at once,
// decide as soon as a majority said yes or can no longer say yes, make the
// fence safe, and undo (in the background) what a failed attempt set. A
// waiter (a caller that waits for release notifications) marks the keys of
// the holder, so that their release is announced.
func (c *Client) attempt(ctx context.Context, key, name, token string, sent *unanswered, ttl time.Duration, waiter bool, undone []string) outcome {
	timeout := c.cfg.timeoutFor(ttl)
	n, q := len(c.nodes), c.quorum
	start := time.Now()                                 // monotonic: validity is measured from before the first request
	at := time.UnixMicro(c.cfg.wallClock().UnixMicro()) // as the nodes store it
	args := node.AcquireArgs{Name: name, Token: token, TTL: c.cfg.nodeTTL(ttl),
		Seed: uint64(at.Add(node.MaxSeedSkew / 2).UnixMicro()), Retention: c.cfg.retention,
		Owner: c.ownerOf(ctx), At: at, Waiter: waiter}.Prepared()
	sent.send(false)
	r := startRoundAt(c, ctx, "acquire", key, nil, timeout, func(ctx context.Context, i int) (node.AcquireReply, error) {
		v, err := c.nodes[i].Acquire(ctx, args)
		sent.answered(i, err)
		return v, err
	})
	defer r.close()

	var (
		yes      []answer[node.AcquireReply]
		others   []answer[node.AcquireReply] // held by another token
		failures []error
	)
	var prev node.Holding
	var configErr error // found while identifying a node late
	// Nodes that lost their data sit out; see recovery.go.
	rec := c.newRecovery(ttl)
	tally := func(a answer[node.AcquireReply]) {
		counts := a.err == nil && c.counts(a.node)
		if a.err == nil && !counts && configErr == nil {
			counts, configErr = c.identifyNow(ctx, a.node, timeout)
		}
		switch {
		case a.err != nil:
			failures = append(failures, a.err)
		case !counts:
			// Its yes does not count, and the undo reaches it like every
			// node that did not answer "held".
			failures = append(failures, &NodeError{Node: c.nodes[a.node].Name(), Op: "acquire", Err: errUnidentified(c.nodes[a.node].Name())})
		case a.val.Acquired:
			rec.note(a.node, a.val)
			yes = append(yes, a)
			if p := a.val.Previous; p.Token != "" && p.Fence >= prev.Fence {
				prev = p
			}
		default:
			rec.note(a.node, a.val)
			others = append(others, a)
		}
	}
	for counted, out := rec.counted(yes); counted < q && len(others)+len(failures)+out <= n-q; counted, out = rec.counted(yes) {
		if r.onlyFailingLeft() {
			// Every node that is not failing answered, and the outcome
			// hinges on failing ones: do not wait for them.
			failures = append(failures, r.presumeFailing()...)
			break
		}
		var stragglers <-chan time.Time
		if r.replies >= q {
			// A majority replied and the rest could still give either
			// side its majority: wait for them only a moment (see
			// stragglersDue), not their timeout. A node still silent then
			// is marked failing until it answers, and the split is called
			// with the live nodes' answers.
			stragglers = r.stragglersDue(timeout / stragglerShare)
		}
		a, ok := r.nextBefore(stragglers)
		if !ok {
			failures = append(failures, r.presumeSilent()...)
			break
		}
		tally(a)
	}
	if counted, _ := rec.counted(yes); counted >= q && rec.restsOnYoung(yes) {
		// A key that looks new: give the other nodes a moment, as a split
		// does; one of them may have kept it (see recovery.go).
		stop := time.NewTimer(lingerFor(time.Since(start)))
		for a, ok := r.nextBefore(stop.C); ok; a, ok = r.nextBefore(stop.C) {
			tally(a)
		}
		stop.Stop()
	}
	_, sitOut := rec.counted(yes)
	couldWin := len(others)+len(failures)+sitOut <= n-q
	rtt := r.repliedIn()
	if configErr != nil {
		c.undo(key, name, token, ttl, heldBy(others, n))
		return outcome{err: configErr, rtt: rtt}
	}

	if counted, _ := rec.counted(yes); counted >= q {
		_ = c.reportRecovering(ctx, key, rec, yes)
		fence, err := c.settleFence(ctx, key, name, token, timeout, yes)
		if err == nil {
			if validity := ttl - time.Since(start) - c.cfg.drift(ttl); validity > 0 {
				l := newLock(c, key, name, token, sent, fence, ttl, start)
				l.owner, l.acquiredAt = args.Owner, at
				return outcome{lock: l, prev: prev}
			}
			err = fmt.Errorf("%w: %q: validity used up while acquiring (%s elapsed of ttl %s)", ErrNotAcquired, key, time.Since(start), ttl)
		}
		c.undo(key, name, token, ttl, nil)
		return outcome{err: err, rtt: rtt}
	}
	if len(failures) > n-q {
		c.undo(key, name, token, ttl, heldBy(others, n))
		// Too few nodes answered. If nodes that did named a holder, its
		// release can help (the others may only have been slow); another
		// token's cannot.
		var wake wakeOn
		if top, votes := leader(others, undone); votes > 0 {
			wake.holder = top
		}
		return outcome{err: quorumErr(fmt.Sprintf("acquire %q", key), failures, n), rtt: rtt, wake: wake}
	}

	top, votes := leader(others, undone)
	if votes < q && !couldWin && r.pending > r.failingPending() {
		// We cannot win, and nobody holds a majority of the answers so
		// far: before calling it a split, give the other nodes a moment
		// to complete the picture. A silent node costs that moment, not
		// its timeout.
		stop := time.NewTimer(max(time.Since(start), time.Millisecond))
		for a, ok := r.nextBefore(stop.C); ok; a, ok = r.nextBefore(stop.C) {
			tally(a)
		}
		stop.Stop()
		top, votes = leader(others, undone)
	}
	if recErr := c.reportRecovering(ctx, key, rec, yes); recErr != nil && votes < q { // a sitting-out node's yes is a no
		c.undo(key, name, token, ttl, heldBy(others, n))
		return outcome{err: recErr, rtt: rtt, wake: wakeOn{holder: top}}
	}
	if votes >= q {
		c.undo(key, name, token, ttl, heldBy(others, n))
		return outcome{
			err:  fmt.Errorf("%w: %q is held by another client (on %d of %d nodes)", ErrNotAcquired, key, votes, n),
			wait: c.holderWait(others, n), rtt: rtt, held: true, wake: wakeOn{holder: top},
		}
	}
	// A split: no token holds a majority of the nodes that answered. Every
	// client that took part sees the same holders on the nodes it heard
	// from, so they agree on a winner without talking to each other: the
	// token with the most nodes, ties going to the smallest release id.
	ours := node.ReleaseID(token)
	win := len(yes) > votes || (len(yes) == votes && len(yes) > 0 && ours < top)
	err := fmt.Errorf("%w: %q: no client holds a majority (%d of %d nodes ours, at most %d another's, %d failed or silent)",
		ErrSplitVote, key, len(yes), n, votes, n-len(yes)-len(others))
	if !win {
		c.undo(key, name, token, ttl, heldBy(others, n))
	}
	wake := wakeOn{all: true}
	if !win {
		wake = wakeOn{holder: top} // the winner
	}
	return outcome{err: err, split: true, keep: win, rtt: rtt, prev: prev, wake: wake}
}

// leader returns the holder with the most nodes among answers (ties: the
// smallest release id) and its count, leaving out the tokens this call gave
// up (undone).
func leader(others []answer[node.AcquireReply], undone []string) (string, int) {
	counts := make(map[string]int, 2)
	best, most := "", 0
	for _, a := range others {
		h := a.val.Holder
		if slices.Contains(undone, h) {
			continue
		}
		counts[h]++
		if k := counts[h]; k > most || (k == most && h < best) {
			best, most = h, k
		}
	}
	return best, most
}

// heldBy marks the nodes that answered "held by another token": our token
// cannot be there, so an undo skips them.
func heldBy(others []answer[node.AcquireReply], n int) []bool {
	skip := make([]bool, n)
	for _, a := range others {
		skip[a.node] = true
	}
	return skip
}

// holderWait estimates when enough holders' keys expire for a majority to be
// free. It is zero when unknown (a node gave no TTL).
func (c *Client) holderWait(others []answer[node.AcquireReply], n int) time.Duration {
	ttls := make([]time.Duration, len(others))
	for i, a := range others {
		ttls[i] = a.val.HolderTTL
	}
	free := n - len(ttls)
	need := c.quorum - free // this many of the held nodes must expire
	if need <= 0 || need > len(ttls) {
		return 0
	}
	slices.Sort(ttls)
	if ttls[0] <= 0 {
		return 0
	}
	return ttls[need-1]
}

// undo deletes a failed attempt's token, in the background, on every node
// except those marked in skip (they answered that another token holds the
// key): on those that said yes, those that failed (the write may have
// landed before the error), and those that have not answered. Each delete
// leaves a tombstone, so an acquire still in flight cannot set the key
// after it. Close waits for it; the caller's cancellation cannot cut it
// short.
func (c *Client) undo(key, name, token string, ttl time.Duration, skip []bool) {
	var nodes []int
	for i := range c.nodes {
		if skip == nil || !skip[i] {
			nodes = append(nodes, i)
		}
	}
	if len(nodes) == 0 {
		return
	}
	c.background(func() {
		r := c.deleteRound(context.Background(), key, name, token, ttl, nodes, nil)
		defer r.close()
		for _, ok := r.next(); ok; _, ok = r.next() {
		}
	})
}

// deleteRound deletes our token's key on nodes and leaves a tombstone of the
// token for ttl on those where sent says a request of the token may still
// land (all of them when sent is nil), announcing the release where the
// key was deleted and a waiter asked for it. A node's delete first waits
// (up to a quarter of the node timeout; not after an extension) for the
// token's requests to that node still on their way: they are usually answered by then, and the
// round decides on the other nodes meanwhile.
func (c *Client) deleteRound(ctx context.Context, key, name, token string, ttl time.Duration, nodes []int, sent *unanswered) *round[bool] {
	args := node.ReleaseArgs{Name: name, Token: token}
	if !c.cfg.noNotify {
		args.Channel = c.releaseChannel
	}
	args = args.Prepared()
	timeout := c.cfg.timeoutFor(ttl)
	return startRoundAt(c, ctx, "release", key, nodes, timeout, func(ctx context.Context, i int) (bool, error) {
		a := args
		if sent.settle(i, timeout/4) {
			a.Tombstone = ttl
		}
		return c.nodes[i].Release(ctx, a)
	})
}

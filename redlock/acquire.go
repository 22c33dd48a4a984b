package redlock

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/internal/ballot"
	"github.com/quorumlock/quorumlock/internal/identity"
	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/internal/recovery"
	"github.com/quorumlock/quorumlock/internal/token"
	"github.com/quorumlock/quorumlock/internal/unanswered"
	"github.com/quorumlock/quorumlock/internal/wake"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/retry"
)

// Acquire takes the lock named key for ttl, waiting (per WithRetry, or
// ContextWithRetry for one call) while another holder has it, woken early
// by its release or expiry. Errors: ErrNotAcquired once the retries are
// used up (also ErrSplitVote or ErrRecovering: see each), ErrInvalidArgument,
// ErrQuorumUnreachable, ctx.Err().
func (c *Client) Acquire(ctx context.Context, key string, ttl time.Duration) (*Lock, error) {
	p, err := c.cfg.retryOf(ctx)
	if err != nil {
		return nil, err
	}
	return c.acquire(ctx, key, ttl, p.Delays(), true)
}

// TryAcquire is Acquire with one attempt; votes split between clients are
// settled in a few quick rounds (ErrSplitVote if they run out).
func (c *Client) TryAcquire(ctx context.Context, key string, ttl time.Duration) (*Lock, error) {
	return c.acquire(ctx, key, ttl, noRetry, false)
}

// maxSplitRounds bounds the rounds in a row that one call spends resolving
// split votes.
const maxSplitRounds = 8

// stragglerShare: a node that has not answered when every other node has
// gets at least this share of the node timeout (see quorum.Rules.Stragglers),
// so that a slower but live node still has its say in a split.
const stragglerShare = 10

// maxBehind bounds the quick looks in a row after a wake by a release that
// had not reached a majority yet.
const maxBehind = 3

func (c *Client) acquire(ctx context.Context, key string, ttl time.Duration, b retry.Delays, waits bool) (*Lock, error) {
	if err := checkKey(ctx, key); err != nil {
		return nil, err
	}
	if err := c.cfg.checkTTL(ttl); err != nil {
		return nil, err
	}
	if err := checkContextOwner(ctx); err != nil {
		return nil, err
	}
	if err := c.ident.Ready(ctx, c.cfg.timeoutFor(ttl)); err != nil {
		return nil, err
	}
	a := acquisition{c: c, ctx: ctx, key: key, name: c.cfg.keyName(key), ttl: ttl, policy: b, began: time.Now()}
	if waits {
		// Registered before the first attempt, so that a release that
		// lands while an attempt is in flight is not missed.
		// A Release of ours may take the key for this call (release.go).
		a.w = c.notify.Join(ctx, a.name, c.cfg.timeoutFor(ttl), wake.Call{Ctx: ctx, TTL: ttl, Began: a.began})
	}
	acquired := false
	defer func() { c.notify.Leave(a.w, acquired) }()
	for attempts := 1; ; attempts++ {
		if a.token == "" {
			a.token, a.sent, a.prev = token.New(), unanswered.New(len(c.nodes)), node.Holding{}
		}
		c.obs.Observe(observe.Event{Kind: observe.Attempt, Key: key, Attempts: attempts, Context: ctx})
		seen := c.notify.Mark(a.w, a.token)
		o := a.attempt(a.w != nil)
		if o.prev.Token != "" && o.prev.Fence >= a.prev.Fence {
			a.prev = o.prev
		}
		if o.lock != nil {
			acquired = true
			return a.won(o, attempts), nil
		}
		if err := a.failed(o, attempts, seen); err != nil {
			return nil, err
		}
		if l, ok := c.notify.Handed(a.w).(*Lock); ok { // handed over by a Release of this client
			acquired, a.prev = true, node.Holding{}
			return a.won(outcome{lock: l}, attempts), nil
		}
	}
}

// acquisition is the state of one Acquire or TryAcquire call across its
// attempts.
type acquisition struct {
	c         *Client
	ctx       context.Context
	key, name string
	ttl       time.Duration
	policy    retry.Delays
	began     time.Time
	w         *wake.Waiter // nil unless the call waits for release notifications

	retryAt time.Time            // when the current retry delay of the policy runs out
	token   string               // kept across rounds while we win a split
	sent    *unanswered.Requests // the token's requests per node
	splits  int                  // split rounds in a row
	prev    node.Holding         // the holder before us, seen by the rounds of token
	behind  int                  // attempts in a row lost to the holder whose release woke us
	ahead   string               // that holder's release id
	undone  []string             // release ids of the tokens this call gave up (see gaveUpToken)
	from    string               // a hand-over's: the releasing lock's token, then those that handed over to it (see Lock)
	lost    int                  // attempts lost to a holder (see retry: yield to seniors)
}

// won hands out the lock of a successful attempt, and reports it.
func (a *acquisition) won(o outcome, attempts int) *Lock {
	c, ctx := a.c, a.ctx
	o.lock.previous = a.prev
	e := observe.Event{Kind: observe.Acquired, Key: a.key, Attempts: attempts, Fence: o.lock.fence, Latency: time.Since(a.began), Context: ctx}
	if a.prev.Token != "" { // what TookOver reports
		e.Reason = reasonTookOver
	}
	c.obs.Observe(e)
	if c.logger.Enabled(ctx, slog.LevelDebug) {
		c.logger.DebugContext(ctx, "redlock: acquired", "key", a.key, "token", token.Short(a.token),
			"fence", o.lock.fence, "attempts", attempts, "validity", time.Until(o.lock.ValidUntil()))
	}
	return o.lock
}

// failed handles a failed attempt: it returns the call's error when the call
// gives up, or nil once it is time for the next attempt.
func (a *acquisition) failed(o outcome, attempts int, s wake.Seen) error {
	c, ctx := a.c, a.ctx
	if !o.keep {
		a.undone = gaveUpToken(a.undone, a.token)
		a.token = ""
	}
	if errors.Is(o.err, ErrInvalidArgument) { // a node found to be a duplicate, say
		return a.gaveUp(reasonInvalid, attempts, o.err)
	}
	if o.held || o.split {
		c.obs.Observe(observe.Event{Kind: observe.Contended, Key: a.key, Attempts: attempts, Reason: o.reason(), Context: ctx})
	}
	if ctx.Err() != nil {
		a.abandon()
		return a.canceled(attempts, context.Cause(ctx))
	}
	if o.split {
		if resolving, err := a.resolveSplit(o, attempts, s); resolving {
			return err
		}
	}
	a.splits = 0
	return a.retry(o, attempts, s)
}

// canceled is the error of a call whose context ended (cause) or whose
// wait failed.
func (a *acquisition) canceled(attempts int, cause error) error {
	return a.gaveUp(reasonCanceled, attempts, fmt.Errorf("redlock: acquire %q: %w", a.key, cause))
}

// resolveSplit resolves a split now, without using up a retry: the winner
// asks again as soon as the losers' undo can have landed, the losers look
// again once the winner can have finished, or when it releases. It reports
// false once the call has spent maxSplitRounds in a row on splits: the
// token is then given up and the split counts as a contended attempt.
func (a *acquisition) resolveSplit(o outcome, attempts int, s wake.Seen) (bool, error) {
	c := a.c
	if a.splits++; a.splits <= maxSplitRounds {
		d := o.rtt + splitJitter(o.rtt/2+time.Microsecond)
		if !o.keep {
			d = 3*o.rtt + splitJitter(o.rtt+time.Microsecond)
		}
		d = max(d, 100*time.Microsecond)
		w := a.w
		if o.keep {
			w = nil // the split's winner keeps its keys and only sleeps: no release is awaited
		}
		if err := c.notify.WaitRelease(a.ctx, w, s, o.wake, d); err != nil {
			a.abandon()
			return true, a.canceled(attempts, err)
		}
		return true, nil
	}
	a.abandon()
	a.undone = gaveUpToken(a.undone, a.token)
	a.token = ""
	return false, nil
}

// retry waits for the next attempt of a contended or failed call: the
// policy's delay, cut short by the holder's expiry or release. It returns
// the call's error when the policy gives up or the wait fails.
func (a *acquisition) retry(o outcome, attempts int, s wake.Seen) error {
	c := a.c
	if o.held {
		a.lost++
	}
	// A retry of the policy is used up when its delay runs out, not
	// when a release notification or the holder's expiry brings us
	// back early: within one delay we try again on every such wake, so
	// notifications speed waiters up without shrinking their budget.
	now := time.Now()
	if !now.Before(a.retryAt) {
		delay, ok := a.policy.Next()
		if !ok {
			return a.gaveUp(o.reason(), attempts, fmt.Errorf("redlock: acquire %q: gave up after %d attempt(s): %w", a.key, attempts, o.err))
		}
		a.retryAt = now.Add(delay)
	}
	delay := a.retryAt.Sub(now)
	if o.wait > 0 && o.wait < delay {
		// The holder's key expires before our next scheduled try: come
		// back just then, spread by a little jitter.
		delay = o.wait + rand.N(2*time.Millisecond)
	}
	delay = a.lookAgain(o, delay)
	if err := c.notify.WaitRelease(a.ctx, a.w, s, o.wake, delay); err != nil {
		return a.canceled(attempts, err)
	}
	// Yield to seniors: each client wakes one waiter per release and they
	// race. Woken by a release, a waiter that lost k attempts to a holder
	// waits 2 round trips / k² (never past the policy's next try), so the
	// one that has waited longest tends to try first and win, and the
	// others find the key taken instead of splitting it. Not after a quick
	// look or a wake by the timer.
	if o.held && a.behind == 0 && c.notify.WokeBy(a.w) != "" {
		if d := min(2*o.rtt/time.Duration(a.lost*a.lost), time.Until(a.retryAt)); d > 0 {
			if err := c.notify.WaitRelease(a.ctx, nil, s, wake.On{}, d); err != nil { // a plain sleep
				return a.canceled(attempts, err)
			}
		}
	}
	return nil
}

// lookAgain shortens delay after a wake by a holder's release that had not
// reached a majority when we tried: it is on its way, and nodes that cannot
// announce it would leave us asleep. We look again in two round trips,
// then four, then six, at most maxBehind times in a row.
func (a *acquisition) lookAgain(o outcome, delay time.Duration) time.Duration {
	if o.held && o.wake.Holder != "" && a.c.notify.WokeBy(a.w) == o.wake.Holder {
		a.ahead = o.wake.Holder
	}
	if o.held && o.wake.Holder == a.ahead && a.behind < maxBehind {
		a.behind++
		return min(delay, time.Duration(a.behind)*max(2*o.rtt, time.Millisecond)+rand.N(o.rtt+time.Microsecond))
	}
	a.behind, a.ahead = 0, ""
	return delay
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

// gaveUp reports the call's failure, err, and returns it.
func (a *acquisition) gaveUp(reason string, attempts int, err error) error {
	a.c.obs.Observe(observe.Event{Kind: observe.NotAcquired, Key: a.key, Reason: reason, Attempts: attempts, Latency: time.Since(a.began), Err: err, Context: a.ctx})
	return err
}

// abandon undoes a split we were winning, when we give it up.
func (a *acquisition) abandon() {
	if a.token != "" {
		a.undo(nil)
	}
}

// undo deletes the token of the current attempt (see rounds.undo).
func (a *acquisition) undo(skip []bool) { a.c.rounds.undo(a.key, a.name, a.token, a.ttl, skip) }

// outcome is what one attempt came to.
type outcome struct {
	lock  *Lock
	err   error
	wait  time.Duration // until the holder's keys expire on enough nodes, when known
	split bool          // no client holds a majority of the nodes that answered
	held  bool          // another client holds a majority
	wake  wake.On       // which release announcements can help the next attempt
	keep  bool          // split: we won it and keep our keys for the next round
	rtt   time.Duration // how long the nodes' replies took (see quorum.Round.RepliedIn)
	prev  node.Holding  // the previous holder with the largest fence that our nodes reported
}

// reason says why an attempt that got no lock failed.
func (o outcome) reason() string {
	switch {
	case o.split:
		return reasonSplitVote
	case o.held:
		return reasonContended
	case errors.Is(o.err, ErrQuorumUnreachable):
		return reasonNoQuorum
	case errors.Is(o.err, ErrInvalidArgument):
		return reasonInvalid
	case errors.Is(o.err, ErrRecovering):
		return reasonRecovering
	}
	return reasonExpired // validity used up while acquiring or settling the fence
}

// attempt is one round of the Redlock algorithm: ask every node at once,
// decide as soon as a majority said yes or can no longer say yes, make the
// fence safe, and undo (in the background) what a failed attempt set.
// waiter says that the caller waits for release notifications
// (node.AcquireArgs.Waiter): a holder that refuses it announces its release.
func (a *acquisition) attempt(waiter bool) outcome {
	c := a.c
	timeout := c.cfg.timeoutFor(a.ttl)
	start := time.Now()                                 // monotonic: validity is measured from before the first request
	at := time.UnixMicro(c.cfg.wallClock().UnixMicro()) // as the nodes store it
	handing, _, _ := strings.Cut(a.from, " ")           // the token on the nodes
	args := node.AcquireArgs{Name: a.name, Token: a.token, TTL: c.cfg.nodeTTL(a.ttl),
		Seed: uint64(at.Add(node.MaxSeedSkew / 2).UnixMicro()), Retention: c.cfg.retention,
		Owner: c.cfg.ownerOf(a.ctx), At: at, Waiter: waiter, Recovery: c.cfg.recovery, Hold: c.learning.Hold.Get(), From: handing}
	sent := a.sent
	sent.Send(false)
	r := startRoundAt(&c.rounds, a.ctx, "acquire", a.key, nil, timeout, func(ctx context.Context, i int) (node.AcquireReply, error) {
		v, err := c.nodes[i].Acquire(ctx, args)
		sent.Answered(i, err)
		return v, err
	})
	defer r.Close()

	b := ballot.New(len(c.nodes), recovery.NewJudge(c.cfg.recovery, len(c.nodes), &c.learning.Hold)) // nodes that lost their data sit out
	count := a.counter(&b, timeout)
	// Once a majority replied, the rest get a moment, not their timeout: a
	// split is then called with the live nodes' answers. (Learners' yes
	// votes stay pending, and the round waits for every node, while they
	// may still count.)
	_ = r.Collect(&b.Tally, quorum.Rules{UntilDecided: true, Stragglers: timeout / stragglerShare}, count)
	b.Recount() // nodes presumed silent: learners' votes pending on them sit out
	rtt := r.RepliedIn()
	switch {
	case b.ConfigErr != nil:
		a.undo(b.HeldBy())
		return outcome{err: b.ConfigErr, rtt: rtt}
	case b.Tally.Won():
		_ = a.recovering(&b)       // learners that sat out are reported, and kept moving
		if b.Rec.NewDeployment() { // its records vote from now on
			c.learning.Promote(a.ctx, a.name, b.Rec)
		}
		return a.acquired(&b, start, args, rtt)
	case b.Tally.Unreachable():
		return a.unreachable(&b, rtt)
	case b.Outcome(a.undone) == quorum.Split && r.Pending() > r.FailingPending():
		// Nobody holds a majority of the answers so far: before calling it
		// a split, the other nodes get as long again as the attempt took
		// (at least 1 ms) to complete the picture; a silent node costs
		// that moment, not its timeout.
		r.CollectWithin(max(time.Since(start), time.Millisecond), count, true)
	}
	return a.notGranted(&b, rtt)
}

// notGranted is the verdict of an attempt that no majority granted and enough
// nodes answered: held by another client, a split, or too few nodes that
// kept their data for the key.
func (a *acquisition) notGranted(b *ballot.Ballot, rtt time.Duration) outcome {
	if !b.HeldByAMajority(a.undone) {
		// A sitting-out node's yes is a no: the attempt is lost, not a split.
		if err := a.recovering(b); err != nil {
			top, _ := b.Leader(a.undone)
			a.undo(b.HeldBy())
			return outcome{err: err, rtt: rtt, wake: wake.On{Holder: top}}
		}
	}
	return a.refused(b, rtt)
}

// counter returns the counter of an attempt's answers into b: a node that
// has not said which server it is, or that lost its data for the key
// (b.Rec), answers but its yes does not count.
func (a *acquisition) counter(b *ballot.Ballot, timeout time.Duration) func(quorum.Answer[node.AcquireReply]) error {
	c := a.c
	return func(v quorum.Answer[node.AcquireReply]) error {
		defer b.Recount()
		counts := v.Err == nil && c.ident.Counts(v.Node)
		if v.Err == nil && !counts && b.ConfigErr == nil {
			counts, b.ConfigErr = c.ident.Now(a.ctx, v.Node, timeout)
		}
		switch {
		case v.Err != nil:
			b.Tally.Fail(v.Err)
		case !counts:
			// The undo reaches it like every node that did not answer "held".
			name := c.nodes[v.Node].Name()
			b.Tally.Fail(&NodeError{Node: name, Op: "acquire", Err: identity.Unidentified(name)})
		case v.Val.Acquired:
			b.Rec.Note(v.Node, v.Val.Standing, true)
			b.Yes = append(b.Yes, v)
			if p := v.Val.Previous; p.Token != "" && p.Fence >= b.Prev.Fence {
				b.Prev = p
			}
		default:
			b.Rec.Note(v.Node, v.Val.Standing, false)
			b.Tally.Refused++
			b.Others = append(b.Others, v)
		}
		return nil
	}
}

// recovering reports each node whose yes did not count because it lost its
// data for the key, and returns the attempt's error when they kept it from
// a majority.
func (a *acquisition) recovering(b *ballot.Ballot) error {
	if b.Tally.Out == 0 {
		return nil
	}
	for i, s := range b.Rec.Learners() { // kept moving until they vote
		a.c.learning.Watch(i, a.name, s)
	}
	out, left := b.Rec.SittingOut()
	var first error
	for _, o := range out {
		e := recoveringError(a.c.nodes[o.Node].Name(), o.Learned, o.Remaining)
		a.c.obs.Observe(observe.Event{Kind: observe.Node, Key: a.key, Node: e.Node, Op: "acquire", Reason: reasonRecovering, Err: e, Context: a.ctx})
		first = cmp.Or(first, error(e))
	}
	if first == nil {
		return nil
	}
	// Both sentinels: the key may be free, but no majority can grant it
	// until the nodes that lost their data count again.
	return fmt.Errorf("%w: %q: %w: too few nodes kept their data, for up to %s more (%w)",
		ErrNotAcquired, a.key, ErrRecovering, left.Round(time.Millisecond), first)
}

// unreachable is the verdict of an attempt that too many nodes failed.
func (a *acquisition) unreachable(b *ballot.Ballot, rtt time.Duration) outcome {
	a.undo(b.HeldBy())
	// Too few nodes answered. If nodes that did named a holder, its
	// release can help (the others may only have been slow); another
	// token's cannot.
	var on wake.On
	if top, votes := b.Leader(a.undone); votes > 0 {
		on.Holder = top
	}
	return outcome{err: errUnreachable(&b.Tally, fmt.Sprintf("acquire %q", a.key)), rtt: rtt, wake: on}
}

// acquired is the verdict of an attempt that a majority granted: the lock,
// once its fence is settled, if validity is left.
func (a *acquisition) acquired(b *ballot.Ballot, start time.Time, args node.AcquireArgs, rtt time.Duration) outcome {
	c, ttl := a.c, a.ttl
	fence, err := a.settleFence(b.Yes)
	if err == nil {
		if validity := ttl - time.Since(start) - c.cfg.drift(ttl); validity > 0 {
			l := &Lock{client: c, key: a.key, name: a.name, token: a.token, from: a.from, sent: a.sent, fence: fence,
				ttl: ttl, validUntil: start.Add(ttl - c.cfg.drift(ttl)), start: start,
				owner: args.Owner, acquiredAt: args.At}
			l.startLife()
			return outcome{lock: l, prev: b.Prev}
		}
		err = fmt.Errorf("%w: %q: validity used up while acquiring (%s elapsed of ttl %s)", ErrNotAcquired, a.key, time.Since(start), ttl)
	}
	a.undo(nil)
	return outcome{err: err, rtt: rtt}
}

// refused is the verdict of an attempt that no majority granted and enough
// nodes answered: held by another client, or a split.
func (a *acquisition) refused(b *ballot.Ballot, rtt time.Duration) outcome {
	n := b.Tally.N
	v, top := b.Votes(a.undone)
	votes := v.Top
	if v.Held() {
		a.undo(b.HeldBy())
		return outcome{
			err:  fmt.Errorf("%w: %q is held by another client (on %d of %d nodes)", ErrNotAcquired, a.key, votes, n),
			wait: b.HolderWait(), rtt: rtt, held: true, wake: wake.On{Holder: top},
		}
	}
	// A split: no token holds a majority of the nodes that answered. Every
	// client that took part sees the same holders on the nodes it heard
	// from, so they agree on a winner without talking to each other: the
	// token with the most nodes, ties going to the smallest release id.
	ours := node.ReleaseID(a.token)
	yes := len(b.Yes)
	win := yes > votes || (yes == votes && yes > 0 && ours < top)
	err := fmt.Errorf("%w: %q: no client holds a majority (%d of %d nodes ours, at most %d another's, %d failed or silent)",
		ErrSplitVote, a.key, yes, n, votes, n-yes-len(b.Others))
	// A split given up later is a contended attempt: the holders' expiry,
	// announced to nobody, is when to look again.
	wait := b.HolderWait()
	if !win {
		a.undo(b.HeldBy())
		return outcome{err: err, split: true, rtt: rtt, prev: b.Prev, wake: wake.On{Holder: top}, wait: wait} // wake: the winner
	}
	return outcome{err: err, split: true, keep: true, rtt: rtt, prev: b.Prev, wake: wake.On{All: true}, wait: wait}
}

// settleFence picks the fence of an acquisition and makes it safe.
//
// Each node counts acquisitions of a key; the fence is the largest count
// among the nodes that granted the lock. The counters can drift apart (an
// attempt that lost still counted on the nodes it reached; a node that lost
// its data started again from its clock), and then the plain maximum is not
// enough: a later acquisition on a different majority could read a smaller
// maximum. So before the lock is handed out, a majority of its nodes must
// hold a counter of at least the fence: the nodes whose own count equals it
// already do; the others are raised (RaiseFence, which also checks that our
// token is still there). Every later acquisition's majority then meets one
// of these nodes after our key left it, and counts above our fence. In the
// common case all counters agree and no extra round trip is made.
func (a *acquisition) settleFence(acquired []quorum.Answer[node.AcquireReply]) (uint64, error) {
	c, name, token := a.c, a.name, a.token
	var fence uint64
	for _, a := range acquired {
		fence = max(fence, a.Val.Fence)
	}
	var behind []int
	for _, a := range acquired {
		if a.Val.Fence < fence {
			behind = append(behind, a.Node)
		}
	}
	t := quorum.NewTally(len(c.nodes))
	t.Granted = len(acquired) - len(behind) // already at the fence
	if t.Won() {
		return fence, nil
	}
	r := startRound(&c.rounds, a.ctx, "fence", a.key, behind, c.cfg.timeoutFor(a.ttl), func(ctx context.Context, nd node.Node) (bool, error) {
		return nd.RaiseFence(ctx, name, token, fence, c.cfg.retention)
	})
	defer r.Close()
	_ = r.Collect(&t, quorum.Rules{UntilDecided: true}, t.CountHeld)
	if t.Won() {
		return fence, nil
	}
	if len(t.Failures) > 0 {
		return 0, fmt.Errorf("%w: fence %d not settled on a majority: %w", ErrQuorumUnreachable, fence, joined(t.Failures))
	}
	return 0, fmt.Errorf("%w: %q: lock expired while settling fence %d", ErrNotAcquired, a.key, fence)
}

// splitJitter is uniform in [0, n) for n > 0, drawn from crypto/rand
// rather than math/rand: a test that fixes crypto/rand (as
// testing/cryptotest does, and locktest's schedules with it) then fixes
// who wins a split vote, so a schedule that splits replays. The draw costs
// well under a microsecond, on a path that already waits a round trip.
func splitJitter(n time.Duration) time.Duration {
	if n <= 0 {
		return 0
	}
	var b [8]byte
	_, _ = crand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+ it panics instead of erring)
	// The modulo's bias is under n/2^64: nothing for delays of seconds.
	return time.Duration(binary.LittleEndian.Uint64(b[:]) % uint64(n))
}

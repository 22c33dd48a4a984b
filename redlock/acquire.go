package redlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Acquire takes the lock named key for ttl, retrying per the client's retry
// policy while other holders have it. It returns a *Lock held on a majority
// of nodes, valid until Lock.ValidUntil, or an error that wraps
// ErrNotAcquired (contention outlasted the retries), ErrQuorumUnreachable
// (too many nodes failed), ErrInvalidArgument, or ctx.Err().
//
// Between attempts it waits the policy's random delay, but never past the
// moment the holder's key expires when the nodes report it, nor past the
// holder's release when release notifications are on (the default; see
// WithReleaseNotifications). Waiters of one Client for one key are woken
// one release at a time, in arrival order, so they do not stampede.
func (c *Client) Acquire(ctx context.Context, key string, ttl time.Duration) (*Lock, error) {
	return c.acquire(ctx, key, ttl, c.cfg.retry.NewBackOff())
}

// TryAcquire makes a single attempt: it returns at once with an error that
// wraps ErrNotAcquired when another holder has the lock.
func (c *Client) TryAcquire(ctx context.Context, key string, ttl time.Duration) (*Lock, error) {
	return c.acquire(ctx, key, ttl, &backoff.StopBackOff{})
}

func (c *Client) acquire(ctx context.Context, key string, ttl time.Duration, b backoff.BackOff) (*Lock, error) {
	if err := c.checkArgs(ctx, key, ttl); err != nil {
		return nil, err
	}
	began := time.Now()
	var w *waiter // registered with the client's release notifications after the first lost attempt
	acquired := false
	defer func() { c.leaveWaiters(w, acquired) }()
	var retryAt time.Time // when the current retry delay of the policy runs out
	for attempts := 1; ; attempts++ {
		c.observe(Event{Kind: EventAttempt, Key: key, Attempts: attempts})
		lock, wait, err := c.attempt(ctx, key, ttl)
		if err == nil {
			acquired = true
			c.observe(Event{Kind: EventAcquired, Key: key, Attempts: attempts, Latency: time.Since(began)})
			if c.logger.Enabled(ctx, slog.LevelDebug) {
				c.logger.DebugContext(ctx, "redlock: acquired", "key", key, "token", shortToken(lock.token),
					"fence", lock.fence, "attempts", attempts, "validity", time.Until(lock.ValidUntil()))
			}
			return lock, nil
		}
		if errors.Is(err, ErrNotAcquired) {
			c.observe(Event{Kind: EventContended, Key: key, Attempts: attempts})
		}
		if ctx.Err() != nil {
			return nil, c.gaveUp(key, attempts, began, fmt.Errorf("redlock: acquire %q: %w", key, context.Cause(ctx)))
		}
		// A retry of the policy is used up when its delay runs out, not
		// when a release notification or the holder's expiry brings us
		// back early: within one delay we try again on every such wake, so
		// notifications speed waiters up without shrinking their budget.
		now := time.Now()
		if !now.Before(retryAt) {
			delay := b.NextBackOff()
			if delay == backoff.Stop {
				return nil, c.gaveUp(key, attempts, began, fmt.Errorf("redlock: acquire %q: gave up after %d attempt(s): %w", key, attempts, err))
			}
			retryAt = now.Add(delay)
		}
		delay := retryAt.Sub(now)
		if wait > 0 && wait < delay {
			// The holder's key expires before our next scheduled try: come
			// back just then, spread by a little jitter so that waiters do
			// not split the nodes' votes between them.
			delay = wait + rand.N(2*time.Millisecond)
		}
		if w == nil && errors.Is(err, ErrNotAcquired) {
			w = c.joinWaiters(c.cfg.prefix + key)
		}
		if err := c.waitRelease(ctx, w, delay); err != nil {
			return nil, c.gaveUp(key, attempts, began, fmt.Errorf("redlock: acquire %q: %w", key, err))
		}
	}
}

func (c *Client) gaveUp(key string, attempts int, began time.Time, err error) error {
	c.observe(Event{Kind: EventNotAcquired, Key: key, Attempts: attempts, Latency: time.Since(began), Err: err})
	return err
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

type acquireReply struct {
	node int
	AcquireReply
	err error
}

// attempt is one round of the Redlock algorithm: ask every node at once,
// decide as soon as a majority said yes or can no longer say yes, make the
// fence safe, and undo everything on failure. wait is how long until the
// holder's key expires on enough nodes for us to win, when known.
func (c *Client) attempt(ctx context.Context, key string, ttl time.Duration) (lock *Lock, wait time.Duration, err error) {
	name := c.cfg.prefix + key
	token := newToken()
	timeout := c.cfg.timeoutFor(ttl)
	n := len(c.nodes)
	start := time.Now() // monotonic: validity is measured from before the first request

	// One deadline for all nodes, cancelled by the last node to answer: not
	// when attempt returns, since cancelling a request in flight makes
	// go-redis drop its connection, and the late nodes' answers still
	// strengthen the lock.
	nctx, answered := sharedDeadline(ctx, timeout, n)
	keys := []string{name, name + FenceSuffix}
	seed := fenceSeed(start) // one value for every node: their new counters agree
	replies := make(chan acquireReply, n)
	for i, node := range c.nodes {
		go func() {
			var r AcquireReply
			var err error
			switch nd := node.(type) {
			case *RedisNode:
				r, err = nd.acquireKeys(nctx, keys, token, ttl, seed)
			case SeededAcquirer:
				r, err = nd.AcquireSeeded(nctx, name, token, ttl, seed)
			default:
				r, err = node.Acquire(nctx, name, token, ttl)
			}
			replies <- acquireReply{node: i, AcquireReply: r, err: err}
			answered()
		}()
	}

	var (
		acquired  = make([]acquireReply, 0, n)
		contended []time.Duration // holders' remaining TTLs
		failures  []error
		failed    []int // indexes of the nodes that errored
		pending   = n
	)
	// The timer guards against a node whose client ignores context deadlines
	// (go-redis without ContextTimeoutEnabled): its silence counts as a
	// failure once the node timeout has passed.
	stalled := time.NewTimer(timeout + stallGrace)
	defer stalled.Stop()
	for len(acquired) < c.quorum && len(contended)+len(failures) <= n-c.quorum {
		var r acquireReply
		select {
		case r = <-replies:
		case <-stalled.C:
			failures = append(failures, fmt.Errorf("%d node(s) gave no answer within the node timeout %s", pending, timeout))
			err = fmt.Errorf("%w: %d of %d nodes failed or did not answer: %w", ErrQuorumUnreachable, len(failed)+pending, n, errors.Join(failures...))
			c.undo(key, name, token, timeout, replies, pending, acquired, failed)
			return nil, 0, err
		}
		pending--
		switch {
		case r.err != nil:
			failed = append(failed, r.node)
			failures = append(failures, c.nodeError(ctx, key, c.nodes[r.node], "acquire", r.err))
		case r.Acquired:
			acquired = append(acquired, r)
		default:
			contended = append(contended, r.HolderTTL)
		}
	}

	if len(acquired) >= c.quorum {
		fence, ferr := c.settleFence(ctx, key, name, token, timeout, acquired)
		validity := ttl - time.Since(start) - c.cfg.drift(ttl)
		if ferr == nil && validity > 0 {
			return newLock(c, key, name, token, fence, ttl, start), 0, nil
		}
		if ferr == nil {
			ferr = fmt.Errorf("%w: validity used up while acquiring (%s elapsed of ttl %s)", ErrNotAcquired, time.Since(start), ttl)
		}
		err = ferr
	} else if len(failures) > n-c.quorum {
		err = fmt.Errorf("%w: %d of %d nodes failed: %w", ErrQuorumUnreachable, len(failures), n, errors.Join(failures...))
	} else {
		err = fmt.Errorf("%w: held by another client on %d of %d nodes", ErrNotAcquired, len(contended), n)
		wait = c.holderWait(contended, n)
	}
	c.undo(key, name, token, timeout, replies, pending, acquired, failed)
	return nil, wait, err
}

// holderWait estimates when enough holders' keys expire for a majority to be
// free. It is zero when unknown (a node gave no TTL).
func (c *Client) holderWait(ttls []time.Duration, n int) time.Duration {
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

// undo releases a failed attempt on every node that may hold our token:
// those that said yes, those that failed (the write may have landed before
// the error), and those that have not answered yet (after they answer, so
// the release cannot overtake the acquire). The caller's cancellation must
// not cut this short, or keys would stay until their TTL.
func (c *Client) undo(key, name, token string, timeout time.Duration, replies <-chan acquireReply, pending int, acquired []acquireReply, failed []int) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*timeout)
	defer cancel()
	// Nodes that answered "held by another" need nothing: our token is not there.
	targets := slices.Clone(failed)
	for _, r := range acquired {
		targets = append(targets, r.node)
	}
	done := make(chan struct{}, len(c.nodes))
	release := func(i int) {
		rctx, rcancel := context.WithTimeout(ctx, timeout)
		defer rcancel()
		if _, err := c.nodes[i].Release(rctx, name, token); err != nil {
			_ = c.nodeError(rctx, key, c.nodes[i], "release", err)
		}
		done <- struct{}{}
	}
	for _, i := range targets {
		go release(i)
	}
	started := len(targets)
	stalled := time.NewTimer(timeout + stallGrace)
	defer stalled.Stop()
drain:
	for ; pending > 0; pending-- {
		select {
		case r := <-replies:
			if r.err != nil || r.Acquired {
				go release(r.node)
				started++
			}
		case <-stalled.C:
			// Nodes that ignore their deadline: release each one when it
			// finally answers, in the background, rather than block here.
			go func(pending int) {
				for ; pending > 0; pending-- {
					r := <-replies
					rctx, rcancel := context.WithTimeout(context.Background(), timeout)
					_, _ = c.nodes[r.node].Release(rctx, name, token)
					rcancel()
				}
			}(pending)
			break drain
		}
	}
	for ; started > 0; started-- {
		<-done
	}
}

// stallGrace is how long past its timeout a node's answer is awaited before
// the node counts as silent.
const stallGrace = 50 * time.Millisecond

// sharedDeadline is one timeout context for n requests; each calls answered
// once when done, and the last one releases the context's timer.
func sharedDeadline(ctx context.Context, timeout time.Duration, n int) (context.Context, func()) {
	nctx, cancel := context.WithTimeout(ctx, timeout)
	var outstanding atomic.Int32
	outstanding.Store(int32(n))
	return nctx, func() {
		if outstanding.Add(-1) == 0 {
			cancel()
		}
	}
}

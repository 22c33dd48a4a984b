package redlock

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/extend"
)

// ExtendOp is one lock's extension in a batch: the arguments of Node.Extend.
type ExtendOp struct {
	Key   string
	Token string
	TTL   time.Duration
	Fence uint64
}

// BatchNode is an optional interface of a Node that extends many locks in
// one round trip. The watchdog (Lock.KeepAlive, Client.Do) sends every
// extension due in one tick to each node at once; a node with ExtendBatch
// gets them in one call, a node without it one Extend call per lock.
//
// ExtendBatch returns one result and one error per op, in order (errs[i] nil
// when results[i] is valid): Extended when the key held the op's token and
// its TTL was reset, NotHeld otherwise. Unlike Node.Extend it must never
// re-create a missing key: a batch that reaches a node after its round gave
// up on it (after Release returned, say) must not bring a released lock
// back. (A node that restarted empty therefore stays without the key until
// the next acquisition; the lock lives on while a majority keeps it.)
// RedisNode (one pipeline of EVALSHA) and MemoryNode implement it.
type BatchNode interface {
	ExtendBatch(ctx context.Context, ops []ExtendOp) (results []ExtendResult, errs []error)
}

// ExtendBatch implements BatchNode.
func (n *MemoryNode) ExtendBatch(ctx context.Context, ops []ExtendOp) ([]ExtendResult, []error) {
	res, errs := make([]ExtendResult, len(ops)), make([]error, len(ops))
	if err := n.enter(ctx); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return res, errs
	}
	defer n.mu.Unlock()
	now := time.Now()
	for i, op := range ops {
		if e, held := n.lookup(op.Key, now); held && e.token == op.Token {
			n.locks[op.Key] = memoryEntry{token: op.Token, expires: now.Add(op.TTL)}
			res[i] = Extended
		}
	}
	return res, errs
}

// perLockConcurrency bounds the Extend calls in flight to a node that is not
// a BatchNode.
const perLockConcurrency = 32

// extendOn sends ops to one node: in one batch when it can, otherwise one
// Extend per lock.
func extendOn(ctx context.Context, node Node, ops []ExtendOp) ([]ExtendResult, []error) {
	if bn, ok := node.(BatchNode); ok {
		return bn.ExtendBatch(ctx, ops)
	}
	res, errs := make([]ExtendResult, len(ops)), make([]error, len(ops))
	sem := make(chan struct{}, perLockConcurrency)
	var wg sync.WaitGroup
	for i, op := range ops {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			res[i], errs[i] = node.Extend(ctx, op.Key, op.Token, op.TTL, op.Fence)
		})
	}
	wg.Wait()
	return res, errs
}

// errBusy: the lock was being extended or released by its holder when the
// round started; the watchdog retries it.
var errBusy = errors.New("redlock: lock busy with another extend or release")

// renewer is the Client's extend.Renewer: one round extends every lock due
// in a tick, with one batch per node, and applies rule 6 to each lock: a
// majority must confirm while the lock is still valid, and the new validity
// counts from the start of the round.
type renewer struct{ c *Client }

type renewItem struct {
	at  int // index in the round's leases
	l   *Lock
	ttl time.Duration
	vu  time.Time
}

type nodeBatch struct {
	node int
	res  []ExtendResult
	errs []error
	at   time.Time
}

func (r renewer) Renew(ctx context.Context, leases []extend.Lease) []error {
	c := r.c
	out := make([]error, len(leases))
	start := time.Now()
	items := make([]renewItem, 0, len(leases))
	var deadline time.Time
	for i, le := range leases {
		l, ok := le.(*Lock)
		if !ok || l.client != c {
			out[i] = fmt.Errorf("%w: lease %T is not a lock of this client", ErrInvalidArgument, le)
			continue
		}
		if !l.op.TryLock() { // the holder is extending or releasing it right now
			out[i] = errBusy
			continue
		}
		l.mu.RLock()
		released, vu, ttl := l.released, l.validUntil, l.ttl
		l.mu.RUnlock()
		switch {
		case released || l.Err() != nil:
			out[i] = fmt.Errorf("%w: extend %q: lock has ended", ErrLockLost, l.key)
			l.op.Unlock()
			continue
		case !start.Before(vu):
			out[i] = l.lost(ctx, fmt.Errorf("%w: extend %q: validity ended %s ago", ErrLockLost, l.key, start.Sub(vu)))
			l.op.Unlock()
			continue
		}
		items = append(items, renewItem{at: i, l: l, ttl: ttl, vu: vu})
		deadline = latest(deadline, earliest(vu, start.Add(c.cfg.timeoutFor(ttl))))
	}
	if len(items) == 0 {
		return out
	}
	defer func() {
		for _, it := range items {
			it.l.op.Unlock()
		}
	}()

	ops := make([]ExtendOp, len(items))
	for k, it := range items {
		ops[k] = ExtendOp{Key: it.l.name, Token: it.l.token, TTL: it.ttl, Fence: it.l.fence}
	}
	nctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	n, q := len(c.nodes), c.quorum
	answers := make(chan nodeBatch, n) // buffered: late nodes never block
	for ni, node := range c.nodes {
		go func() {
			res, errs := extendOn(nctx, node, ops)
			answers <- nodeBatch{node: ni, res: res, errs: errs, at: time.Now()}
		}()
	}
	// Nodes whose client ignores the deadline count as failed after it.
	stalled := time.NewTimer(time.Until(deadline) + stallGrace)
	defer stalled.Stop()
	got := make([]nodeBatch, 0, n)
	var silent error
collect:
	for len(got) < n {
		select {
		case a := <-answers:
			got = append(got, a)
		case <-stalled.C:
			silent = fmt.Errorf("%d node(s) gave no answer to the extend round by its deadline", n-len(got))
			break collect
		}
	}
	// One NodeError per failing node (not per lock), for logs and metrics.
	nodeErrs := make(map[int]error)
	for _, a := range got {
		for _, err := range a.errs {
			if err != nil {
				nodeErrs[a.node] = c.nodeError(nctx, fmt.Sprintf("(%d locks)", len(items)), c.nodes[a.node], "extend", err)
				break
			}
		}
	}

	var dropped []*Lock
	yesAt := make([]time.Time, 0, n)
	for k, it := range items {
		l := it.l
		yes, no := 0, 0
		yesAt = yesAt[:0]
		var failures []error
		for _, a := range got {
			switch {
			case a.errs[k] != nil:
				failures = append(failures, nodeErrs[a.node])
			case a.res[k] == Extended:
				yes++
				yesAt = append(yesAt, a.at)
			default:
				no++ // held by another token, or re-asserted on a node that had lost it
			}
		}
		if silent != nil {
			failures = append(failures, silent)
		}
		failed := n - yes - no
		var decidedAt time.Time
		if yes >= q {
			sort.Slice(yesAt, func(i, j int) bool { return yesAt[i].Before(yesAt[j]) })
			decidedAt = yesAt[q-1]
		}
		switch {
		case yes >= q && decidedAt.Before(it.vu):
			l.mu.Lock()
			ok := !l.released && l.Err() == nil
			if ok {
				l.ttl, l.validUntil = it.ttl, start.Add(it.ttl-c.cfg.drift(it.ttl))
			}
			l.mu.Unlock()
			if !ok { // the watchdog gave it up while the round was in flight
				out[it.at] = fmt.Errorf("%w: extend %q: lock ended during the round", ErrLockLost, l.key)
				continue
			}
			l.rearm()
			c.observe(Event{Kind: EventExtended, Key: l.key, Latency: decidedAt.Sub(start)})
		case no > n-q:
			dropped = append(dropped, l)
			out[it.at] = l.lost(ctx, fmt.Errorf("%w: extend %q: held by us on too few nodes (%d of %d not ours)", ErrLockLost, l.key, no, n))
		case yes >= q || !time.Now().Before(it.vu):
			dropped = append(dropped, l)
			out[it.at] = l.lost(ctx, fmt.Errorf("%w: extend %q: majority confirmed after the validity ended", ErrLockLost, l.key))
		default:
			out[it.at] = fmt.Errorf("%w: extend %q: %d of %d nodes failed: %w", ErrQuorumUnreachable, l.key, failed, n, errors.Join(failures...))
		}
	}
	dropAll(ctx, dropped)
	return out
}

// dropAll deletes the keys of locks found lost in a round (see dropKeys), a
// few locks at a time.
func dropAll(ctx context.Context, locks []*Lock) {
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, l := range locks {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			l.dropKeys(ctx, l.TTL())
		})
	}
	wg.Wait()
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

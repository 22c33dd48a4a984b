package sim

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// truth is what the nodes really held, recorded as the servers applied
// requests: per node, the intervals in which a token held the lock key.
// The checks that the client's history alone cannot decide (was the lock
// held by anyone when a client said "held"? was it free while a waiter
// slept? did a request create a key after its release?) read it.
type truth struct {
	mu       sync.Mutex
	held     []map[string][]span // per node: token -> intervals (one key per schedule)
	released []map[string]tomb   // per node: token -> its release on that node
	late     []string            // keys created by a token after its release was processed there
}

type span struct{ from, to time.Time }

type tomb struct {
	at    time.Time
	until time.Time
}

func newTruth(nodes int) *truth {
	t := &truth{held: make([]map[string][]span, nodes), released: make([]map[string]tomb, nodes)}
	for i := range t.held {
		t.held[i] = map[string][]span{}
		t.released[i] = map[string]tomb{}
	}
	return t
}

// set records that token holds the key on node n from now for ttl (an
// acquire, an extension or a re-assertion). A set after a release of the
// token was processed on n, within the tombstone, breaks the rule that
// once a node processed a release no request of that lock creates its key
// there.
func (t *truth) set(n int, token string, ttl time.Duration, op string) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.released[n][token]; ok && now.Before(r.until) {
		t.late = append(t.late, fmt.Sprintf("node %d: %s of token %s applied %s after its release there (tombstone for %s)",
			n, op, short(token), now.Sub(r.at), r.until.Sub(r.at)))
	}
	sp := t.held[n][token]
	if k := len(sp) - 1; k >= 0 && sp[k].to.After(now) {
		sp[k].to = now.Add(ttl)
	} else {
		sp = append(sp, span{now, now.Add(ttl)})
	}
	t.held[n][token] = sp
}

func (t *truth) end(n int, token string, now time.Time) {
	sp := t.held[n][token]
	if k := len(sp) - 1; k >= 0 && sp[k].to.After(now) {
		sp[k].to = now
	}
}

func (t *truth) release(n int, token string, tombstone time.Duration, deleted bool) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if deleted {
		t.end(n, token, now)
	}
	if tombstone > 0 {
		t.released[n][token] = tomb{at: now, until: now.Add(tombstone)}
	}
}

func (t *truth) evict(n int, token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.end(n, token, time.Now())
}

func (t *truth) wipe(n int) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for tok := range t.held[n] {
		t.end(n, tok, now)
	}
	t.released[n] = map[string]tomb{} // tombstones are gone with the data
}

func short(token string) string { return token[:min(8, len(token))] }

// edge is one end of a holding interval, for sweeps.
type edge struct {
	at    time.Time
	delta int
}

func sweep(es []edge) []edge {
	sort.Slice(es, func(i, j int) bool {
		if !es[i].at.Equal(es[j].at) {
			return es[i].at.Before(es[j].at)
		}
		return es[i].delta < es[j].delta // an end before a start at the same instant
	})
	return es
}

// majorityHeld reports whether some token held the key on at least q nodes
// within [from, to], each node at some moment of it: what a client's reads
// of the nodes, one per node at different instants, can see. A quorum read
// is no atomic snapshot: an acquire request that lands late on one node,
// after its token's release reached another, shows that token on a
// majority it never held at one instant (a stress run's seed 7245), and a
// client cannot tell. A split (no token on q nodes even so) is still
// caught. Spans and the call are closed intervals: a node that resumes
// from a pause applies its queued requests at one fake instant, so a
// holder's acquire and release there make a span of zero length, and a
// refusal applied between them named a holder that really was there.
func (t *truth) majorityHeld(q int, from, to time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	nodes := map[string]int{}
	for _, m := range t.held {
		for tok, sps := range m {
			for _, s := range sps {
				if a, b := later(s.from, from), earlier(s.to, to); !a.After(b) {
					if nodes[tok]++; nodes[tok] >= q {
						return true
					}
					break // one per node
				}
			}
		}
	}
	return false
}

// freeStretches returns, in order, the intervals in which at least q of
// the n nodes held no key of any token.
func (t *truth) freeStretches(n, q int, from, to time.Time) []span {
	t.mu.Lock()
	var es []edge
	for _, m := range t.held {
		for _, sps := range m {
			for _, s := range sps {
				es = append(es, edge{s.from, 1}, edge{s.to, -1})
			}
		}
	}
	t.mu.Unlock()
	var out []span
	heldNodes, freeFrom, isFree := 0, from, true
	for _, e := range sweep(es) {
		heldNodes += e.delta
		nowFree := n-heldNodes >= q
		switch {
		case isFree && !nowFree:
			if e.at.After(freeFrom) {
				out = append(out, span{freeFrom, e.at})
			}
		case !isFree && nowFree:
			freeFrom = e.at
		}
		isFree = nowFree
	}
	if isFree && to.After(freeFrom) {
		out = append(out, span{freeFrom, to})
	}
	return out
}

// longestWithin is the longest part of a stretch of free (sorted) that lies
// within [from, to).
func longestWithin(free []span, from, to time.Time) (time.Duration, time.Time) {
	i := sort.Search(len(free), func(i int) bool { return free[i].to.After(from) })
	var best time.Duration
	var at time.Time
	for ; i < len(free) && free[i].from.Before(to); i++ {
		a, b := later(free[i].from, from), earlier(free[i].to, to)
		if d := b.Sub(a); d > best {
			best, at = d, a
		}
	}
	return best, at
}

func (t *truth) lateSets() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.late...)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

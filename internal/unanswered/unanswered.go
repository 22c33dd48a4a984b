// Package unanswered follows, per node, the requests of one lock token that
// could set its key there (acquires and extensions) until their replies
// come back. A request that failed (a timeout, a broken connection) may
// still land later, so the node stays marked for good.
//
// The client's release uses it: its request to a node first waits (a
// bounded while) for the token's requests to that node still on their way,
// and leaves a tombstone only if one of them failed or did not come back in
// time. On the other nodes every request of the token has already run, so
// none can set the key after the release, and the tombstone, a write and a
// key per release, is not needed.
package unanswered

import (
	"sync"
	"time"
)

// Requests are a token's requests, per node, still without a reply.
type Requests struct {
	mu       sync.Mutex
	nodes    []requests
	extended bool        // an extension was sent: a release does not wait (see Settle)
	room     [7]requests // nodes' storage for up to 7 nodes: no allocation of its own
}

// requests are the token's requests to one node.
type requests struct {
	pending int32         // without a reply yet
	failed  bool          // one failed
	idle    chan struct{} // closed when pending drops to zero; made by a waiter
}

// mayLand reports whether one of these requests may still land: it
// failed, or is on its way.
func (r *requests) mayLand() bool { return r.failed || r.pending > 0 }

// New follows the requests of a token to nodes nodes.
func New(nodes int) *Requests {
	u := &Requests{}
	u.nodes = u.room[:]
	if nodes > len(u.room) {
		u.nodes = make([]requests, nodes)
	}
	u.nodes = u.nodes[:nodes]
	return u
}

// Send counts a request to each node, before the round starts: the
// request is on its way from then on, even while its goroutine waits to
// run. extends says the requests are extensions.
func (u *Requests) Send(extends bool) {
	u.mu.Lock()
	u.extended = u.extended || extends
	for i := range u.nodes {
		u.nodes[i].pending++
	}
	u.mu.Unlock()
}

// Answered ends a request to node i; err marks the node for good.
func (u *Requests) Answered(i int, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	r := &u.nodes[i]
	r.pending--
	if err != nil {
		r.failed = true
	}
	if r.pending == 0 && r.idle != nil {
		close(r.idle)
		r.idle = nil
	}
}

// Settle waits, at most for d, until no request of the token to node i is
// on its way, and reports whether one may still land there (it failed, or
// is still on its way). A nil Requests knows nothing: one may. It does
// not wait once an extension was sent: a kept lock has extension rounds in
// flight most of the time, and its release must not queue behind them.
func (u *Requests) Settle(i int, d time.Duration) (mayLand bool) {
	if u == nil {
		return true
	}
	u.mu.Lock()
	r := &u.nodes[i]
	if r.pending > 0 && !u.extended {
		if r.idle == nil {
			r.idle = make(chan struct{})
		}
		idle := r.idle
		u.mu.Unlock()
		t := time.NewTimer(d)
		select {
		case <-idle:
		case <-t.C:
		}
		t.Stop()
		u.mu.Lock()
	}
	defer u.mu.Unlock()
	return r.mayLand()
}

// Settled reports whether no request can land any more on any node: all
// of them came back, none failed.
func (u *Requests) Settled() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	for i := range u.nodes {
		if u.nodes[i].mayLand() {
			return false
		}
	}
	return true
}

// MayLand reports, per node, whether a request may still land there (it
// failed, or is on its way), without waiting: what Settle would say now.
func (u *Requests) MayLand() []bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]bool, len(u.nodes))
	for i := range u.nodes {
		out[i] = u.nodes[i].mayLand()
	}
	return out
}

package redlock

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/quorumlock/quorumlock/internal/guard"
	"github.com/quorumlock/quorumlock/internal/inflight"
	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/internal/unanswered"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/observe"
)

// Every operation is a quorum round (internal/quorum): one request to each
// of a set of nodes at once, read until decided. The client lends each
// round what it owns (rounds): its nodes, their health (health.go), the
// NodeError of a failure, its log, its observer, and the count of requests
// in flight that Close waits for. Two rounds are no one operation's own,
// and live here too: the identify round (internal/identity asks through it)
// and the delete round (release, undo, a lost lock's keys).

// opIdentify names the identify round (in errors, and in rounds.Note).
const opIdentify = "identify"

// stallGuardFired is the debug log message of a round whose stall guard
// fired: it waited for silent nodes as long as it ever does.
const stallGuardFired = "redlock: round waited past the node timeout for silent nodes"

// rounds is what the client lends each of its rounds (quorum.Caller),
// set once by New: its nodes, their health, its log, its observer, and the
// counts of requests in flight that Close waits for.
type rounds struct {
	nodes    []node.Node
	all      []int // 0..len(nodes)-1: every node
	health   health
	logger   *slog.Logger
	obs      observe.Observer  // never nil
	observed bool              // WithObserver was given: Report tells obs
	bg       *inflight.Group   // requests in flight, which Close waits for
	checks   *inflight.Group   // identify requests in flight, which Close cuts
	closing  *inflight.Closing // cancelled by Close: the identify requests' context
	cfg      *config           // the client's options: the node timeout of a TTL
	announce string            // the channel a delete announces its release on; "" when WithReleaseNotifications(false)
}

// startRound asks the nodes (indexes into r.nodes; nil: all of them) with
// call, each with timeout, under parent.
func startRound[T any](r *rounds, parent context.Context, op, key string, nodes []int, timeout time.Duration, call func(ctx context.Context, n node.Node) (T, error)) *quorum.Round[T] {
	return startRoundAt(r, parent, op, key, nodes, timeout, func(ctx context.Context, i int) (T, error) { return call(ctx, r.nodes[i]) })
}

// startRoundAt is startRound for calls that need the node's index.
func startRoundAt[T any](r *rounds, parent context.Context, op, key string, nodes []int, timeout time.Duration, call func(ctx context.Context, i int) (T, error)) *quorum.Round[T] {
	if nodes == nil {
		nodes = r.all
	}
	inFlight := r.bg // Close waits for requests still in flight
	if op == opIdentify {
		inFlight = r.checks // Close cuts these, and waits for them a node timeout at most
	}
	return quorum.Start(r, quorum.Ask{Op: op, Key: key, Parent: parent}, len(r.nodes), nodes, timeout, inFlight, call)
}

// identify is the identify round (internal/identity's Ask): it asks nodes
// who they are; the answers of those that said. It does not wait for
// silent nodes once a quorum answered.
//
// Close cancels the requests (a node's answer is no use to a closed
// client); the requests of nodes still silent when it returns end with it.
func (r *rounds) identify(ctx context.Context, nodes []int, timeout time.Duration) []quorum.Answer[node.Identity] {
	ctx, stop := r.closing.Until(ctx)
	defer stop()
	rd := startRound(r, ctx, opIdentify, "", nodes, timeout, func(ctx context.Context, n node.Node) (node.Identity, error) {
		return n.Identify(ctx)
	})
	defer rd.Close()
	var got []quorum.Answer[node.Identity]
	t := quorum.NewTally(len(r.nodes))
	count := func(a quorum.Answer[node.Identity]) error {
		if a.Err == nil && a.Val.ID != "" {
			t.Granted++
			got = append(got, a)
		}
		return nil
	}
	for !t.Won() {
		a, ok := rd.Next()
		if !ok {
			return got
		}
		_ = count(a)
	}
	// Enough to work with: the others get a moment (as long again as these
	// took), then are asked again in the background, and their answers do
	// not count until they say who they are.
	rd.CollectWithin(max(time.Since(rd.Began()), time.Millisecond), count, false)
	return got
}

func (r *rounds) Failing(i int) bool { return r.health.failing(i) }

// Note records node i's answer in its health. An identify request's
// failure marks nothing: its timeout (first contact's, longer than a lock's
// node timeout) says nothing about the node's lock requests, and an
// unidentified node's answers do not count.
func (r *rounds) Note(a quorum.Ask, i int, err error) {
	if err != nil && a.Op == opIdentify {
		return
	}
	r.health.note(a.Parent, i, err)
}

// Panicked makes a panic recovered from node i's call that node's failure,
// ErrNodePanic, and logs the panic's value and stack.
func (r *rounds) Panicked(a quorum.Ask, i int, err error) error {
	guard.Log(r.logger, "redlock: node call", err, "node", r.nodes[i].Name(), "op", a.Op, "key", a.Key)
	return fmt.Errorf("%w: %w", ErrNodePanic, err)
}

// NodeError is node i's failure in the round, logged as a warning.
func (r *rounds) NodeError(a quorum.Ask, i int, err error) error {
	name := r.nodes[i].Name()
	if r.logger.Enabled(a.Parent, slog.LevelWarn) {
		r.logger.WarnContext(a.Parent, "redlock: node failed", "node", name, "op", a.Op, "key", a.Key, "err", err)
	}
	return &NodeError{Node: name, Op: a.Op, Err: err}
}

// Report tells the client's observer of node i's answer.
func (r *rounds) Report(a quorum.Ask, i int, err error, took time.Duration) {
	if r.observed {
		r.obs.Observe(observe.Event{Kind: observe.Node, Key: a.Key, Node: r.nodes[i].Name(), Op: a.Op, Latency: took, Err: err, Context: a.Parent})
	}
}

func (r *rounds) StallGuardFired(a quorum.Ask, silent int) {
	r.logger.DebugContext(a.Parent, stallGuardFired, "op", a.Op, "key", a.Key, "nodes", silent)
}

// The delete round deletes a token's key on nodes: for Release (release.go),
// and in the background for the undo of a failed attempt (acquire.go) and
// the keys of a lost lock (loss.go). Where a request of the token may still
// land (see internal/unanswered), it leaves a tombstone that stops it.

// undo deletes a failed attempt's token, in the background, on every node
// except those marked in skip (they answered that another token holds the
// key): on those that said yes, those that failed (the write may have
// landed before the error), and those that have not answered. Each delete
// leaves a tombstone, so an acquire still in flight cannot set the key
// after it. Close waits for it; the caller's cancellation cannot cut it
// short. Each request has the node timeout; a node it does not reach (an
// error, or no answer in time) is reported to the observer
// (observe.UndoFailed), and keeps the attempt's key until its TTL ends.
func (r *rounds) undo(key, name, token string, ttl time.Duration, skip []bool) {
	var nodes []int
	for i := range r.nodes {
		if skip == nil || !skip[i] {
			nodes = append(nodes, i)
		}
	}
	if len(nodes) == 0 {
		return
	}
	r.bg.GoGuarded(r.logger, func() {
		rd := r.deleteRound(context.Background(), key, name, token, "", ttl, nodes, nil)
		defer rd.Close()
		for a, ok := rd.Next(); ok; a, ok = rd.Next() {
			if a.Err != nil && r.observed {
				r.obs.Observe(observe.Event{Kind: observe.UndoFailed, Key: key, Node: r.nodes[a.Node].Name(), Op: "release", Err: a.Err})
			}
		}
	})
}

// deleteRound deletes our token's key on nodes and leaves a tombstone of the
// token for ttl on those where sent says a request of the token may still
// land (all of them when sent is nil), announcing the release where the
// key was deleted and a waiting attempt had marked it (and from's, the
// tokens that handed the key over in a row, if any). A node's delete first
// waits (up to a quarter of the node timeout; not after an extension) for
// the token's requests to that node still on their way: they are usually
// answered by then, and the round decides on the other nodes meanwhile.
func (r *rounds) deleteRound(ctx context.Context, key, name, token, from string, ttl time.Duration, nodes []int, sent *unanswered.Requests) *quorum.Round[bool] {
	args := node.ReleaseArgs{Name: name, Token: token, Channel: r.announce, From: from}
	timeout := r.cfg.timeoutFor(ttl)
	return startRoundAt(r, ctx, "release", key, nodes, timeout, func(ctx context.Context, i int) (bool, error) {
		a := args
		if sent.Settle(i, timeout/4) {
			a.Tombstone = ttl
		}
		return r.nodes[i].Release(ctx, a)
	})
}

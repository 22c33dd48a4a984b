package redlock

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/quorumlock/quorumlock/internal/guard"
	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/observe"
)

// Every operation is a quorum round (internal/quorum): one request to each
// of a set of nodes at once, read until decided. The client lends each
// round what it owns: its nodes, their health (health.go), the NodeError of
// a failure, its log, its observer, and the count of requests in flight
// that Close waits for.

// opIdentify names the identify round (in errors, and in rounds.Note).
const opIdentify = "identify"

// stallGuardFired is the debug log message of a round whose stall guard
// fired: it waited for silent nodes as long as it ever does.
const stallGuardFired = "redlock: round waited past the node timeout for silent nodes"

// startRound asks the nodes (indexes into c.nodes; nil: all of them) with
// call, each with timeout, under parent.
func startRound[T any](c *Client, parent context.Context, op, key string, nodes []int, timeout time.Duration, call func(ctx context.Context, n node.Node) (T, error)) *quorum.Round[T] {
	return startRoundAt(c, parent, op, key, nodes, timeout, func(ctx context.Context, i int) (T, error) { return call(ctx, c.nodes[i]) })
}

// startRoundAt is startRound for calls that need the node's index.
func startRoundAt[T any](c *Client, parent context.Context, op, key string, nodes []int, timeout time.Duration, call func(ctx context.Context, i int) (T, error)) *quorum.Round[T] {
	if nodes == nil {
		nodes = c.all
	}
	inFlight := &c.bg // Close waits for requests still in flight
	if op == opIdentify {
		inFlight = &c.checks // Close cuts these, and waits for them a node timeout at most
	}
	return quorum.Start(rounds{c}, quorum.Ask{Op: op, Key: key, Parent: parent}, len(c.nodes), nodes, timeout, inFlight, call)
}

// rounds is the client's side of its rounds (quorum.Caller).
type rounds struct{ c *Client }

func (r rounds) Failing(i int) bool { return r.c.health.failing(i) }

// Note records node i's answer in its health. An identify request's
// failure marks nothing: its timeout (first contact's, longer than a lock's
// node timeout) says nothing about the node's lock requests, and an
// unidentified node's answers do not count.
func (r rounds) Note(a quorum.Ask, i int, err error) {
	if err != nil && a.Op == opIdentify {
		return
	}
	r.c.health.note(a.Parent, i, err)
}

// Panicked makes a panic recovered from node i's call that node's failure,
// ErrNodePanic, and logs the panic's value and stack.
func (r rounds) Panicked(a quorum.Ask, i int, err error) error {
	guard.Log(r.c.logger, "redlock: node call", err, "node", r.c.nodes[i].Name(), "op", a.Op, "key", a.Key)
	return fmt.Errorf("%w: %w", ErrNodePanic, err)
}

// NodeError is node i's failure in the round, logged as a warning.
func (r rounds) NodeError(a quorum.Ask, i int, err error) error {
	name := r.c.nodes[i].Name()
	if r.c.logger.Enabled(a.Parent, slog.LevelWarn) {
		r.c.logger.WarnContext(a.Parent, "redlock: node failed", "node", name, "op", a.Op, "key", a.Key, "err", err)
	}
	return &NodeError{Node: name, Op: a.Op, Err: err}
}

// Report tells the client's observer of node i's answer.
func (r rounds) Report(a quorum.Ask, i int, err error, took time.Duration) {
	if r.c.cfg.observer != nil {
		r.c.obs.Observe(observe.Event{Kind: observe.Node, Key: a.Key, Node: r.c.nodes[i].Name(), Op: a.Op, Latency: took, Err: err, Context: a.Parent})
	}
}

func (r rounds) StallGuardFired(a quorum.Ask, silent int) {
	r.c.logger.DebugContext(a.Parent, stallGuardFired, "op", a.Op, "key", a.Key, "nodes", silent)
}

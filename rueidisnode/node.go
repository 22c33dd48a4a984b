package rueidisnode

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
)

// The scripts of redisnode.Node, verbatim: a lock taken through one kind of
// node can be extended, released and inspected through the other.
var (
	src        = wire.Scripts()
	acquireLua = rueidis.NewLuaScript(src.Acquire)
	releaseLua = rueidis.NewLuaScript(src.Release)
	raiseLua   = rueidis.NewLuaScript(src.RaiseFence)
	inspectLua = rueidis.NewLuaScript(src.Inspect)
	learnLua   = rueidis.NewLuaScript(src.Learn)
	forceLua   = rueidis.NewLuaScript(src.ForceRelease)
	extendSHA  = sha1Hex(src.Extend) // Extend builds its EVALSHA itself
)

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Node is a node.Node backed by one independent Redis server, reached
// through a rueidis client the caller owns (and closes). It is safe for
// concurrent use.
type Node struct {
	name    string
	client  rueidis.Client
	perSlot bool // a Redis Cluster: one standing record per hash slot (wire.RecordKey)
}

var _ node.Node = (*Node)(nil)

// Option configures a Node.
type Option func(*Node)

// WithName names the node in errors, logs and metrics. The default is the
// address of the client's server when it has exactly one (a standalone
// client), otherwise "rueidis@" and the client's pointer.
func WithName(name string) Option { return func(n *Node) { n.name = name } }

// New wraps a rueidis client to one Redis server (a client made with
// rueidis.ClientOption{InitAddress: []string{addr}}; ForceSingleClient
// spares it a cluster probe at start). Each Node must reach a different,
// independent server. A call ends when its ctx is done.
func New(client rueidis.Client, opts ...Option) *Node {
	n := &Node{client: client, perSlot: client.Mode() == rueidis.ClientModeCluster}
	for _, o := range opts {
		o(n)
	}
	if n.name == "" {
		n.name = fmt.Sprintf("rueidis@%p", client)
		if nodes := client.Nodes(); len(nodes) == 1 {
			for addr := range nodes {
				n.name = addr
			}
		}
	}
	return n
}

// Name implements node.Node.
func (n *Node) Name() string { return n.name }

// Client returns the wrapped rueidis client.
func (n *Node) Client() rueidis.Client { return n.client }

// ms formats d in whole milliseconds, rounded up as redisnode.Node does.
func ms(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Millisecond-1)/time.Millisecond), 10)
}

func u64(v uint64) string { return strconv.FormatUint(v, 10) }

// Identify implements node.Node: INFO server and INFO memory.
func (n *Node) Identify(ctx context.Context) (node.Identity, error) {
	server, err := n.client.Do(ctx, n.client.B().Info().Section("server").Build()).ToString()
	if err != nil {
		return node.Identity{}, err
	}
	memory, err := n.client.Do(ctx, n.client.B().Info().Section("memory").Build()).ToString()
	if err != nil {
		return node.Identity{}, err
	}
	return wire.ParseIdentity(server, memory)
}

// Acquire implements node.Node.
func (n *Node) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	if err := a.Validate(); err != nil {
		return node.AcquireReply{}, err
	}
	keys, args := wire.AcquireScriptArgs(a, n.perSlot) // built once per call for all nodes
	vals, err := acquireLua.Exec(ctx, n.client, keys, args).ToArray()
	if err != nil {
		return node.AcquireReply{}, err
	}
	if len(vals) < 2 || len(vals) > 4 {
		return node.AcquireReply{}, fmt.Errorf("rueidisnode: unexpected acquire reply of %d values", len(vals))
	}
	ok, err := vals[0].AsInt64()
	if err != nil {
		return node.AcquireReply{}, err
	}
	v, err := vals[1].AsInt64() // an integer, or a counter sent as a string
	if err != nil {
		return node.AcquireReply{}, err
	}
	var third string
	if len(vals) >= 3 {
		third, _ = vals[2].ToString()
	}
	r := wire.AcquireReplyOf(ok == 1, v, third)
	if len(vals) == 4 {
		if r.Standing, err = standingOf(vals[3]); err != nil {
			return node.AcquireReply{}, err
		}
	}
	return r, nil
}

// standingOf reads a standing from a script's reply: 1 (it votes), a
// string, or Lua false (nil in RESP2, false in RESP3) when not asked.
func standingOf(m rueidis.RedisMessage) (node.Standing, error) {
	if n, err := m.AsInt64(); err == nil && m.IsInt64() && n == 1 {
		return node.Standing{Known: true, Voting: true}, nil
	}
	if !m.IsString() {
		if m.IsNil() || m.IsBool() {
			return node.Standing{}, nil
		}
		return node.Standing{}, fmt.Errorf("rueidisnode: standing is not a string")
	}
	s, _ := m.ToString()
	return wire.ParseStanding(s)
}

// Learn implements node.Learner.
func (n *Node) Learn(ctx context.Context, a node.LearnArgs) (node.Standing, error) {
	if err := a.Validate(); err != nil {
		return node.Standing{}, err
	}
	m, err := learnLua.Exec(ctx, n.client, []string{wire.RecordKey(a.Name, n.perSlot)}, []string{ms(a.Recovery), a.Promote, ms(a.Hold)}).ToMessage()
	if err != nil {
		return node.Standing{}, err
	}
	return standingOf(m)
}

// Extend implements node.Node: every op as EVALSHA in one DoMulti, which
// rueidis writes as one pipeline. If the server lost its script cache
// (NOSCRIPT, after a restart), the batch is sent again with EVAL, which
// also loads the script; the script is idempotent, so ops that ran before
// may run again.
func (n *Node) Extend(ctx context.Context, ops []node.ExtendArgs) ([]node.ExtendResult, error) {
	for _, op := range ops {
		if err := op.Validate(); err != nil {
			return nil, err
		}
	}
	res := make([]node.ExtendResult, len(ops))
	if len(ops) == 0 {
		return res, nil
	}
	build := func(eval bool) rueidis.Commands {
		cmds := make(rueidis.Commands, len(ops))
		for i, op := range ops {
			k := wire.KeysOf(op.Name, op.Token)
			keys := []string{k.Lock, k.Tombstone}
			args := []string{op.Token, ms(op.TTL), u64(op.Fence), ms(wire.RetentionOrDefault(op.Retention)),
				wire.Micros(op.At), op.Owner}
			if eval {
				cmds[i] = n.client.B().Eval().Script(src.Extend).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
			} else {
				cmds[i] = n.client.B().Evalsha().Sha1(extendSHA).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
			}
		}
		return cmds
	}
	for _, eval := range []bool{false, true} {
		noscript := false
		for i, r := range n.client.DoMulti(ctx, build(eval)...) {
			v, err := r.AsInt64()
			if !eval && isNoScript(err) {
				noscript = true
				break
			}
			if err != nil {
				return nil, err
			}
			if v < int64(node.NotHeld) || v > int64(node.Reasserted) {
				return nil, fmt.Errorf("rueidisnode: unexpected extend reply %d", v)
			}
			res[i] = node.ExtendResult(v)
		}
		if !noscript {
			return res, nil
		}
	}
	return res, nil // unreachable: EVAL never meets NOSCRIPT
}

func isNoScript(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && re.IsNoScript()
}

// Release implements node.Node.
func (n *Node) Release(ctx context.Context, a node.ReleaseArgs) (bool, error) {
	if err := a.Validate(); err != nil {
		return false, err
	}
	keys, args := wire.ReleaseScriptArgs(a)
	v, err := releaseLua.Exec(ctx, n.client, keys, args).AsInt64()
	return err == nil && v == 1, err
}

// ForceRelease implements node.Node.
func (n *Node) ForceRelease(ctx context.Context, a node.ForceReleaseArgs) (bool, error) {
	if err := a.Validate(); err != nil {
		return false, err
	}
	tomb := "0"
	if a.Tombstone > 0 {
		tomb = ms(a.Tombstone)
	}
	keys := []string{a.Name, wire.TombstoneKey(a.Name, a.Token)}
	args := []string{a.Token, u64(a.Fence), ms(wire.RetentionOrDefault(a.Retention)), tomb, a.Channel}
	v, err := forceLua.Exec(ctx, n.client, keys, args).AsInt64()
	return err == nil && v == 1, err
}

// Scan implements node.Node with SCAN MATCH COUNT (never KEYS), on the
// server of a standalone client; a cluster client's SCAN reaches one
// server of many, so there it fails with errors.ErrUnsupported.
func (n *Node) Scan(ctx context.Context, a node.ScanArgs) (node.ScanPage, error) {
	if err := a.Validate(); err != nil {
		return node.ScanPage{}, err
	}
	if len(n.client.Nodes()) != 1 {
		return node.ScanPage{}, fmt.Errorf("rueidisnode: %s: scan over a client of %d servers: %w (use one node per server)", n.name, len(n.client.Nodes()), errors.ErrUnsupported)
	}
	var cursor uint64
	if a.Cursor != "" {
		c, err := strconv.ParseUint(a.Cursor, 10, 64)
		if err != nil {
			return node.ScanPage{}, fmt.Errorf("%w: scan cursor %q", node.ErrInvalidArgument, a.Cursor)
		}
		cursor = c
	}
	match := a.Match
	if match == "" {
		match = "*"
	}
	e, err := n.client.Do(ctx, n.client.B().Scan().Cursor(cursor).Match(match).Count(int64(a.CountOrDefault())).Build()).AsScanEntry()
	if err != nil {
		return node.ScanPage{}, err
	}
	return wire.ScanPageOf(e.Elements, e.Cursor), nil
}

// RaiseFence implements node.Node.
func (n *Node) RaiseFence(ctx context.Context, name, token string, fence uint64, retention time.Duration) (bool, error) {
	if err := wire.ValidateRaise(name, token, fence, retention); err != nil {
		return false, err
	}
	keys := []string{name}
	v, err := raiseLua.Exec(ctx, n.client, keys, []string{token, u64(fence), ms(wire.RetentionOrDefault(retention))}).AsInt64()
	return err == nil && v == 1, err
}

// Inspect implements node.Node.
func (n *Node) Inspect(ctx context.Context, name string) (node.Holding, error) {
	if name == "" {
		return node.Holding{}, fmt.Errorf("%w: empty name", node.ErrInvalidArgument)
	}
	vals, err := inspectLua.Exec(ctx, n.client, []string{name, wire.CounterKey(name), wire.RecordKey(name, n.perSlot)}, nil).ToArray()
	if err != nil {
		return node.Holding{}, err
	}
	if len(vals) != 4 {
		return node.Holding{}, fmt.Errorf("rueidisnode: unexpected inspect reply of %d values", len(vals))
	}
	var value string
	if vals[0].IsString() { // a free key is Lua false: nil (RESP2) or false (RESP3)
		value, _ = vals[0].ToString()
	}
	pttl, _ := vals[1].AsInt64()
	f, err := vals[2].AsInt64()
	if err != nil {
		return node.Holding{}, err
	}
	h := wire.HoldingOf(value, pttl, f)
	if h.Standing, err = standingOf(vals[3]); err != nil {
		return node.Holding{}, err
	}
	return h, nil
}

package rueidisnode

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/redlock"
)

// The scripts of redlock's RedisNode, verbatim: a lock taken through one
// kind of node can be extended, released and inspected through the other.
var (
	src           = redlock.Scripts()
	acquireLua    = rueidis.NewLuaScript(src.Acquire)
	extendLua     = rueidis.NewLuaScript(src.Extend)
	releaseLua    = rueidis.NewLuaScript(src.Release)
	raiseFenceLua = rueidis.NewLuaScript(src.RaiseFence)
	inspectLua    = rueidis.NewLuaScript(src.Inspect)
	extendHeldSHA = sha1Hex(src.ExtendHeld) // ExtendBatch builds its EVALSHA itself
)

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Node is a redlock.Node backed by one independent Redis server, reached
// through a rueidis client the caller owns (and closes). It also implements
// redlock.BatchNode and redlock.Notifier. It is safe for concurrent use.
type Node struct {
	name   string
	client rueidis.Client
	ttl    atomic.Pointer[msString] // the last TTL argument, reused
}

// Interfaces the Client looks for.
var (
	_ redlock.Node      = (*Node)(nil)
	_ redlock.BatchNode = (*Node)(nil)
	_ redlock.Notifier  = (*Node)(nil)
)

// Option configures a Node.
type Option func(*Node)

// WithName names the node in errors, logs and metrics. The default is the
// address of the client's server when it has exactly one (a standalone
// client), otherwise "rueidis@" and the client's pointer.
func WithName(name string) Option { return func(n *Node) { n.name = name } }

// New wraps a rueidis client to one Redis server (a client made with
// rueidis.ClientOption{InitAddress: []string{addr}}; ForceSingleClient
// spares it a cluster probe at start). Each Node must reach a different,
// independent server. The client's context handling applies: a call ends
// when its ctx is done.
func New(client rueidis.Client, opts ...Option) *Node {
	n := &Node{client: client}
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

// Name implements redlock.Node.
func (n *Node) Name() string { return n.name }

// Client returns the wrapped rueidis client.
func (n *Node) Client() rueidis.Client { return n.client }

// msString is a TTL in milliseconds and its decimal form.
type msString struct {
	ms int64
	s  string
}

// millis formats ttl in milliseconds, reusing the last result: a client
// uses few TTLs, so most calls format nothing.
func (n *Node) millis(ttl time.Duration) string {
	ms := ttl.Milliseconds()
	if c := n.ttl.Load(); c != nil && c.ms == ms {
		return c.s
	}
	c := &msString{ms: ms, s: strconv.FormatInt(ms, 10)}
	n.ttl.Store(c)
	return c.s
}

func formatFence(f uint64) string { return strconv.FormatUint(f, 10) }

// Acquire implements redlock.Node.
func (n *Node) Acquire(ctx context.Context, key, token string, ttl time.Duration) (redlock.AcquireReply, error) {
	return n.AcquireSeeded(ctx, key, token, ttl, 0)
}

// AcquireSeeded implements redlock.SeededAcquirer: a new fence counter
// starts from seed (the client's clock, the same on every node of an
// attempt), or from the server's clock when seed is zero.
func (n *Node) AcquireSeeded(ctx context.Context, key, token string, ttl time.Duration, seed uint64) (redlock.AcquireReply, error) {
	keys := [2]string{key, key + redlock.FenceSuffix}
	args := [3]string{token, n.millis(ttl), ""}
	nargs := 2
	if seed > 0 {
		args[2], nargs = strconv.FormatUint(seed, 10), 3
	}
	vals, err := acquireLua.Exec(ctx, n.client, keys[:], args[:nargs]).ToArray()
	if err != nil {
		return redlock.AcquireReply{}, err
	}
	if len(vals) != 2 {
		return redlock.AcquireReply{}, fmt.Errorf("rueidisnode: unexpected acquire reply of %d values", len(vals))
	}
	ok, err := vals[0].AsInt64()
	if err != nil {
		return redlock.AcquireReply{}, err
	}
	v, err := vals[1].AsInt64()
	if err != nil {
		return redlock.AcquireReply{}, err
	}
	switch {
	case ok == 1:
		return redlock.AcquireReply{Acquired: true, Fence: uint64(v)}, nil
	case v == -1: // a key without expiry: nobody can say when it frees up
		return redlock.AcquireReply{}, nil
	case v <= 0: // expiring within the millisecond (or just gone)
		return redlock.AcquireReply{HolderTTL: time.Millisecond}, nil
	}
	return redlock.AcquireReply{HolderTTL: time.Duration(v) * time.Millisecond}, nil
}

// Extend implements redlock.Node.
func (n *Node) Extend(ctx context.Context, key, token string, ttl time.Duration, fence uint64) (redlock.ExtendResult, error) {
	keys := [2]string{key, key + redlock.FenceSuffix}
	args := [3]string{token, n.millis(ttl), formatFence(fence)}
	v, err := extendLua.Exec(ctx, n.client, keys[:], args[:]).AsInt64()
	if err != nil {
		return redlock.NotHeld, err
	}
	return redlock.ExtendResult(v), nil
}

// Release implements redlock.Node.
func (n *Node) Release(ctx context.Context, key, token string) (bool, error) {
	keys := [1]string{key}
	args := [1]string{token}
	v, err := releaseLua.Exec(ctx, n.client, keys[:], args[:]).AsInt64()
	return v == 1, err
}

// RaiseFence implements redlock.Node.
func (n *Node) RaiseFence(ctx context.Context, key, token string, fence uint64) (bool, error) {
	keys := [2]string{key, key + redlock.FenceSuffix}
	args := [2]string{token, formatFence(fence)}
	v, err := raiseFenceLua.Exec(ctx, n.client, keys[:], args[:]).AsInt64()
	return v == 1, err
}

// Inspect implements redlock.Node.
func (n *Node) Inspect(ctx context.Context, key string) (redlock.Holding, error) {
	keys := [2]string{key, key + redlock.FenceSuffix}
	vals, err := inspectLua.Exec(ctx, n.client, keys[:], nil).ToArray()
	if err != nil {
		return redlock.Holding{}, err
	}
	if len(vals) != 3 {
		return redlock.Holding{}, fmt.Errorf("rueidisnode: unexpected inspect reply of %d values", len(vals))
	}
	var h redlock.Holding
	if vals[0].IsString() { // a free key is Lua false: nil (RESP2) or false (RESP3)
		h.Token, _ = vals[0].ToString()
	}
	if ms, err := vals[1].AsInt64(); err == nil && ms > 0 {
		h.TTL = time.Duration(ms) * time.Millisecond
	}
	if f, err := vals[2].AsInt64(); err == nil && f > 0 {
		h.Fence = uint64(f)
	}
	return h, nil
}

// ExtendBatch implements redlock.BatchNode: every op's extension (the
// extend-if-held script, which never re-creates a missing key) as EVALSHA
// in one DoMulti, which rueidis writes as one pipeline. Ops that met
// NOSCRIPT (the server restarted and lost its script cache) are sent again
// in a second DoMulti with EVAL, which also loads the script.
func (n *Node) ExtendBatch(ctx context.Context, ops []redlock.ExtendOp) ([]redlock.ExtendResult, []error) {
	res, errs := make([]redlock.ExtendResult, len(ops)), make([]error, len(ops))
	if len(ops) == 0 {
		return res, errs
	}
	cmds := make(rueidis.Commands, len(ops))
	for i, op := range ops {
		cmds[i] = n.client.B().Evalsha().Sha1(extendHeldSHA).Numkeys(1).Key(op.Key).Arg(op.Token, n.millis(op.TTL)).Build()
	}
	var again []int
	for i, r := range n.client.DoMulti(ctx, cmds...) {
		v, err := r.AsInt64()
		if isNoScript(err) {
			again = append(again, i)
			continue
		}
		res[i], errs[i] = extendResult(v, err)
	}
	if len(again) == 0 {
		return res, errs
	}
	cmds = cmds[:0]
	for _, i := range again {
		op := ops[i]
		cmds = append(cmds, n.client.B().Eval().Script(src.ExtendHeld).Numkeys(1).Key(op.Key).Arg(op.Token, n.millis(op.TTL)).Build())
	}
	for k, r := range n.client.DoMulti(ctx, cmds...) {
		res[again[k]], errs[again[k]] = extendResult(r.AsInt64())
	}
	return res, errs
}

func extendResult(v int64, err error) (redlock.ExtendResult, error) {
	if err != nil {
		return redlock.NotHeld, err
	}
	return redlock.ExtendResult(v), nil
}

func isNoScript(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && re.IsNoScript()
}

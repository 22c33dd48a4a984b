package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a Node backed by one independent Redis server, reached through a
// go-redis client the caller owns (and closes): a *redis.Client, a
// *redis.ClusterClient (the client's names put a lock, its counter and its
// tombstones in one slot), a *redis.Ring, or any redis.Scripter. It is safe
// for concurrent use.
type Redis struct {
	name   string
	client redis.Scripter
}

var _ Node = (*Redis)(nil)

// NewRedis wraps a go-redis client. The node's name is the client's address
// when it has one (Options().Addr); use NewRedisNamed otherwise.
func NewRedis(client redis.Scripter) *Redis {
	name := fmt.Sprintf("redis@%p", client)
	if o, ok := client.(interface{ Options() *redis.Options }); ok && o.Options() != nil && o.Options().Addr != "" {
		name = o.Options().Addr
	}
	return &Redis{name: name, client: client}
}

// NewRedisNamed is NewRedis with an explicit name for errors and logs.
func NewRedisNamed(name string, client redis.Scripter) *Redis {
	return &Redis{name: name, client: client}
}

// Name implements Node.
func (n *Redis) Name() string { return n.name }

// Client returns the wrapped go-redis client.
func (n *Redis) Client() redis.Scripter { return n.client }

var maxSkewMicros = strconv.FormatInt(MaxSeedSkew.Microseconds(), 10)

// Acquire implements Node.
func (n *Redis) Acquire(ctx context.Context, a AcquireArgs) (AcquireReply, error) {
	if err := a.Validate(); err != nil {
		return AcquireReply{}, err
	}
	keys := []string{a.Name, CounterKey(a.Name), TombstoneKey(a.Name, a.Token)}
	vals, err := acquireScript.Run(ctx, n.client, keys, a.Token, millis(a.TTL),
		strconv.FormatUint(a.Seed, 10), millis(RetentionOrDefault(a.Retention)), maxSkewMicros).Slice()
	if err != nil {
		return AcquireReply{}, err
	}
	if len(vals) != 2 && len(vals) != 3 {
		return AcquireReply{}, fmt.Errorf("node: unexpected acquire reply %v", vals)
	}
	ok, err1 := replyInt(vals[0])
	v, err2 := replyInt(vals[1])
	if err := errors.Join(err1, err2); err != nil {
		return AcquireReply{}, fmt.Errorf("node: acquire reply %v: %w", vals, err)
	}
	var holder string
	if len(vals) == 3 {
		holder, _ = vals[2].(string)
	}
	return AcquireReplyOf(ok == 1, v, holder), nil
}

// AcquireReplyOf reads the reply {acquired, value[, holder]} of the acquire
// script: value is the counter when acquired, the holder's PTTL otherwise
// (0 for a tombstone, -1 for a key without expiry), and holder the holder's
// release id.
func AcquireReplyOf(acquired bool, value int64, holder string) AcquireReply {
	switch {
	case acquired:
		return AcquireReply{Acquired: true, Fence: uint64(max(value, 0))}
	case holder == "" || value == -1: // a tombstone, or a key that never expires
		return AcquireReply{Holder: holder}
	case value <= 0: // expiring within the millisecond, or just gone
		return AcquireReply{HolderTTL: time.Millisecond, Holder: holder}
	}
	return AcquireReply{HolderTTL: time.Duration(value) * time.Millisecond, Holder: holder}
}

// replyInt reads an integer reply, or a counter sent as a string (which
// Lua's doubles would round above 2^53).
func replyInt(v any) (int64, error) {
	switch v := v.(type) {
	case int64:
		return v, nil
	case string:
		return strconv.ParseInt(v, 10, 64)
	case nil:
		return 0, nil
	}
	return 0, fmt.Errorf("unexpected %T", v)
}

// Extend implements Node: one EVALSHA per op, all in one pipeline when the
// client can pipeline (a ClusterClient splits it by slot).
func (n *Redis) Extend(ctx context.Context, ops []ExtendArgs) ([]ExtendResult, error) {
	for _, op := range ops {
		if err := op.Validate(); err != nil {
			return nil, err
		}
	}
	res := make([]ExtendResult, len(ops))
	if len(ops) == 0 {
		return res, nil
	}
	p, ok := n.client.(interface{ Pipeline() redis.Pipeliner })
	if !ok {
		for i, op := range ops {
			v, err := extendScript.Run(ctx, n.client, extendKeys(op), extendArgs(op)...).Int64()
			if res[i], err = extendResult(v, err); err != nil {
				return nil, err
			}
		}
		return res, nil
	}
	run := func(eval bool) (noscript bool, err error) {
		pipe := p.Pipeline()
		cmds := make([]*redis.Cmd, len(ops))
		for i, op := range ops {
			if eval {
				cmds[i] = extendScript.Eval(ctx, pipe, extendKeys(op), extendArgs(op)...)
			} else {
				cmds[i] = extendScript.EvalSha(ctx, pipe, extendKeys(op), extendArgs(op)...)
			}
		}
		_, _ = pipe.Exec(ctx) // errors are read per command
		for i, c := range cmds {
			v, err := c.Int64()
			if !eval && redis.HasErrorPrefix(err, "NOSCRIPT") {
				return true, nil
			}
			if res[i], err = extendResult(v, err); err != nil {
				return false, err
			}
		}
		return false, nil
	}
	noscript, err := run(false)
	if noscript {
		// The server lost its script cache (a restart): load the script and
		// send the batch again; EVAL, which carries the source with every
		// op, only if the load failed. The script is idempotent, so ops
		// that already ran before the NOSCRIPT may run again.
		if extendScript.Load(ctx, n.client).Err() == nil {
			noscript, err = run(false)
		}
		if noscript {
			_, err = run(true)
		}
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

func extendKeys(op ExtendArgs) []string {
	return []string{op.Name, CounterKey(op.Name), TombstoneKey(op.Name, op.Token)}
}

func extendArgs(op ExtendArgs) []any {
	return []any{op.Token, millis(op.TTL), strconv.FormatUint(op.Fence, 10), millis(RetentionOrDefault(op.Retention))}
}

func extendResult(v int64, err error) (ExtendResult, error) {
	if err != nil {
		return NotHeld, err
	}
	if v < int64(NotHeld) || v > int64(Reasserted) {
		return NotHeld, fmt.Errorf("node: unexpected extend reply %d", v)
	}
	return ExtendResult(v), nil
}

// Release implements Node.
func (n *Redis) Release(ctx context.Context, a ReleaseArgs) (bool, error) {
	if err := a.Validate(); err != nil {
		return false, err
	}
	var tomb int64
	if a.Tombstone > 0 {
		tomb = millis(a.Tombstone)
	}
	v, err := releaseScript.Run(ctx, n.client, []string{a.Name, TombstoneKey(a.Name, a.Token)}, a.Token, tomb, a.Channel).Int64()
	return err == nil && v == 1, err
}

// RaiseFence implements Node.
func (n *Redis) RaiseFence(ctx context.Context, name, token string, fence uint64, retention time.Duration) (bool, error) {
	if err := ValidateRaise(name, token, fence, retention); err != nil {
		return false, err
	}
	v, err := raiseScript.Run(ctx, n.client, []string{name, CounterKey(name)},
		token, strconv.FormatUint(fence, 10), millis(RetentionOrDefault(retention))).Int64()
	return err == nil && v == 1, err
}

// Inspect implements Node.
func (n *Redis) Inspect(ctx context.Context, name string) (Holding, error) {
	if name == "" {
		return Holding{}, invalid("empty name")
	}
	vals, err := inspectScript.Run(ctx, n.client, []string{name, CounterKey(name)}).Slice()
	if err != nil {
		return Holding{}, err
	}
	if len(vals) != 3 {
		return Holding{}, fmt.Errorf("node: unexpected inspect reply %v", vals)
	}
	var h Holding
	if s, ok := vals[0].(string); ok {
		h.Token = s
	}
	ms, err1 := replyInt(vals[1])
	f, err2 := replyInt(vals[2])
	if err := errors.Join(err1, err2); err != nil {
		return Holding{}, fmt.Errorf("node: inspect reply %v: %w", vals, err)
	}
	if h.Token != "" && ms > 0 {
		h.TTL = time.Duration(ms) * time.Millisecond
	}
	h.Fence = uint64(max(f, 0))
	return h, nil
}

// Identify implements Node: INFO through the client when it has Info, else
// through a script (INFO is allowed in Lua).
func (n *Redis) Identify(ctx context.Context) (Identity, error) {
	if c, ok := n.client.(interface {
		Info(ctx context.Context, section ...string) *redis.StringCmd
	}); ok {
		server, err := c.Info(ctx, "server").Result()
		if err != nil {
			return Identity{}, err
		}
		memory, err := c.Info(ctx, "memory").Result()
		if err != nil {
			return Identity{}, err
		}
		return ParseIdentity(server, memory)
	}
	vals, err := identifyScript.Run(ctx, n.client, nil).StringSlice()
	if err != nil {
		return Identity{}, fmt.Errorf("node: identify %s through a script: %w", n.name, err)
	}
	return ParseIdentity(vals...)
}

// ParseIdentity reads run_id and maxmemory_policy from INFO replies.
func ParseIdentity(info ...string) (Identity, error) {
	var id Identity
	for _, s := range info {
		for line := range strings.Lines(s) {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			switch k {
			case "run_id":
				id.ID = v
			case "maxmemory_policy":
				id.Eviction = v
			}
		}
	}
	if id.ID == "" || id.Eviction == "" {
		return id, errors.New("node: INFO lacks run_id or maxmemory_policy")
	}
	return id, nil
}

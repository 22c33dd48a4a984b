package redlock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisNode is a Node backed by one independent Redis server, reached through
// a go-redis client the caller owns (and closes).
type RedisNode struct {
	name   string
	client redis.Scripter
}

// NewRedisNode wraps a go-redis client: *redis.Client, *redis.Ring, a
// *redis.ClusterClient slot owner, or any redis.Scripter. The node's name is
// the client's address when it has one; name it yourself with
// NewRedisNodeNamed otherwise.
func NewRedisNode(client redis.Scripter) *RedisNode {
	name := fmt.Sprintf("redis@%p", client)
	if o, ok := client.(interface{ Options() *redis.Options }); ok && o.Options() != nil {
		name = o.Options().Addr
	}
	return &RedisNode{name: name, client: client}
}

// NewRedisNodeNamed is NewRedisNode with an explicit name for errors and logs.
func NewRedisNodeNamed(name string, client redis.Scripter) *RedisNode {
	return &RedisNode{name: name, client: client}
}

// Name implements Node.
func (n *RedisNode) Name() string { return n.name }

// Client returns the wrapped go-redis client.
func (n *RedisNode) Client() redis.Scripter { return n.client }

func (n *RedisNode) keys(key string) []string { return []string{key, key + FenceSuffix} }

// Acquire implements Node. A new fence counter starts from the server's
// clock.
func (n *RedisNode) Acquire(ctx context.Context, key, token string, ttl time.Duration) (AcquireReply, error) {
	return n.acquireKeys(ctx, n.keys(key), token, ttl, 0)
}

// AcquireSeeded implements SeededAcquirer.
func (n *RedisNode) AcquireSeeded(ctx context.Context, key, token string, ttl time.Duration, seed uint64) (AcquireReply, error) {
	return n.acquireKeys(ctx, n.keys(key), token, ttl, seed)
}

// acquireKeys is Acquire with the key pair built once per attempt by the
// client and shared by all its nodes (go-redis copies it, never writes it).
// A zero seed leaves the seeding to the server's clock.
func (n *RedisNode) acquireKeys(ctx context.Context, keys []string, token string, ttl time.Duration, seed uint64) (AcquireReply, error) {
	var cmd *redis.Cmd
	if seed > 0 {
		cmd = acquireScript.Run(ctx, n.client, keys, token, ttl.Milliseconds(), seed)
	} else {
		cmd = acquireScript.Run(ctx, n.client, keys, token, ttl.Milliseconds())
	}
	vals, err := cmd.Int64Slice()
	if err != nil {
		return AcquireReply{}, err
	}
	if len(vals) != 2 {
		return AcquireReply{}, fmt.Errorf("unexpected acquire reply %v", vals)
	}
	if vals[0] == 1 {
		return AcquireReply{Acquired: true, Fence: uint64(vals[1])}, nil
	}
	switch ms := vals[1]; {
	case ms == -1: // a key without expiry: nobody can say when it frees up
		return AcquireReply{}, nil
	case ms <= 0: // expiring within the millisecond (or just gone)
		return AcquireReply{HolderTTL: time.Millisecond}, nil
	default:
		return AcquireReply{HolderTTL: time.Duration(ms) * time.Millisecond}, nil
	}
}

// Extend implements Node.
func (n *RedisNode) Extend(ctx context.Context, key, token string, ttl time.Duration, fence uint64) (ExtendResult, error) {
	v, err := extendScript.Run(ctx, n.client, n.keys(key), token, ttl.Milliseconds(), fence).Int64()
	if err != nil {
		return NotHeld, err
	}
	return ExtendResult(v), nil
}

// Release implements Node.
func (n *RedisNode) Release(ctx context.Context, key, token string) (bool, error) {
	v, err := releaseScript.Run(ctx, n.client, []string{key}, token).Int64()
	return v == 1, err
}

// RaiseFence implements Node.
func (n *RedisNode) RaiseFence(ctx context.Context, key, token string, fence uint64) (bool, error) {
	v, err := raiseFenceScript.Run(ctx, n.client, n.keys(key), token, fence).Int64()
	return v == 1, err
}

// Inspect implements Node.
func (n *RedisNode) Inspect(ctx context.Context, key string) (Holding, error) {
	vals, err := inspectScript.Run(ctx, n.client, n.keys(key)).Slice()
	if err != nil {
		return Holding{}, err
	}
	if len(vals) != 3 {
		return Holding{}, fmt.Errorf("unexpected inspect reply %v", vals)
	}
	var h Holding
	if s, ok := vals[0].(string); ok {
		h.Token = s
	}
	if ms, ok := vals[1].(int64); ok && ms > 0 {
		h.TTL = time.Duration(ms) * time.Millisecond
	}
	if f, ok := vals[2].(int64); ok && f > 0 {
		h.Fence = uint64(f)
	}
	return h, nil
}

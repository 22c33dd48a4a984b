package redlock

import (
	"context"
	"time"
)

// Node is one independent lock server. Implementations must be safe for
// concurrent use and must make each operation atomic on the server. Two are
// provided: NewRedisNode (Lua scripts over a go-redis client) and
// NewMemoryNode (in-process). The conformance suite in this package's tests
// runs against both; a third implementation should pass it too.
//
// Keys given to a Node are full names (the client's prefix included). Each
// lock key has a fence counter beside it (the key with FenceSuffix) that
// outlives the lock, so that fences keep growing across acquisitions.
type Node interface {
	// Name identifies the node in errors, logs and metrics (e.g. its address).
	Name() string
	// Acquire sets key to token with the given ttl if the key is free, and
	// increments the key's fence counter. Acquiring again with the token
	// that already holds the key only refreshes the ttl (the call must be
	// idempotent: clients retry on network errors).
	Acquire(ctx context.Context, key, token string, ttl time.Duration) (AcquireReply, error)
	// Extend resets the ttl of key if it holds token. If the key is missing
	// (the node restarted empty, say) it sets it again and raises the fence
	// counter to at least fence, reporting Reasserted.
	Extend(ctx context.Context, key, token string, ttl time.Duration, fence uint64) (ExtendResult, error)
	// Release deletes key if, and only if, it holds token.
	Release(ctx context.Context, key, token string) (released bool, err error)
	// RaiseFence lifts the key's fence counter to at least fence and reports
	// whether key still holds token (atomically with the raise).
	RaiseFence(ctx context.Context, key, token string, fence uint64) (held bool, err error)
	// Inspect reports who holds key and the fence counter, without changing
	// anything.
	Inspect(ctx context.Context, key string) (Holding, error)
}

// FenceSuffix is appended to a lock's key to name its fence counter on each
// node. Lock keys may therefore not end with it.
const FenceSuffix = ":fence"

// AcquireReply is what one node answers to Acquire.
type AcquireReply struct {
	Acquired bool
	// Fence is the key's counter on this node after the increment (when
	// Acquired).
	Fence uint64
	// HolderTTL is the remaining time to live of the current holder when
	// not Acquired; zero when the node does not know (no expiry set).
	HolderTTL time.Duration
}

// ExtendResult is what one node answers to Extend.
type ExtendResult int

const (
	// NotHeld: another token holds the key; nothing changed.
	NotHeld ExtendResult = iota
	// Extended: the key held our token and its ttl was reset.
	Extended
	// Reasserted: the key was missing and was set again to our token.
	Reasserted
)

// Holding describes a key on one node.
type Holding struct {
	Token string        // empty when the key is free
	TTL   time.Duration // remaining time to live; zero when free
	Fence uint64        // the fence counter, also after the lock is gone
}

// SeededAcquirer is an optional Node method: Acquire with the value at which
// a missing fence counter starts (the client's clock in microseconds, the
// same for every node of one attempt, so that nodes seeding a new key agree
// on its fence). A Node without it seeds from its own clock. RedisNode and
// MemoryNode implement it.
type SeededAcquirer interface {
	AcquireSeeded(ctx context.Context, key, token string, ttl time.Duration, seed uint64) (AcquireReply, error)
}

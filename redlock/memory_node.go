package redlock

import (
	"context"
	"errors"
	"sync"
	"time"
)

// MemoryNode is an in-process Node with the same semantics as a Redis node:
// keys expire on the monotonic clock, only the token's owner may extend or
// release, fence counters outlive the locks. It is the embedded backend of
// the demo, development without Redis, and unit tests of code that takes
// locks. It is not shared between processes: a client on memory nodes
// excludes only within one process.
type MemoryNode struct {
	name string

	mu     sync.Mutex
	locks  map[string]memoryEntry
	fences map[string]uint64
	down   bool
	sweep  int // new keys set since the last sweep of expired ones
	swept  int // entries left by the last sweep

	broker memoryBroker // release notifications; see memory_notify.go
}

type memoryEntry struct {
	token   string
	expires time.Time
}

// ErrNodeDown is returned by a MemoryNode that was stopped with SetDown, to
// stand in for an unreachable server.
var ErrNodeDown = errors.New("redlock: memory node is down")

// NewMemoryNode returns an empty in-memory node.
func NewMemoryNode(name string) *MemoryNode {
	return &MemoryNode{name: name, locks: map[string]memoryEntry{}, fences: map[string]uint64{}}
}

// Name implements Node.
func (n *MemoryNode) Name() string { return n.name }

// SetDown makes every call fail with ErrNodeDown (true) or work again
// (false). With wipe, the node also forgets its keys and fence counters, as a
// Redis server restarted without persistence does.
func (n *MemoryNode) SetDown(down, wipe bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.down = down
	if wipe {
		n.locks = map[string]memoryEntry{}
		n.fences = map[string]uint64{}
	}
}

// lookup returns the live entry of key, dropping it once expired. The caller
// holds n.mu.
func (n *MemoryNode) lookup(key string, now time.Time) (memoryEntry, bool) {
	e, ok := n.locks[key]
	if ok && !now.Before(e.expires) {
		delete(n.locks, key)
		return memoryEntry{}, false
	}
	return e, ok
}

// Len is the number of lock entries the node keeps, expired ones not yet
// swept included: for tests and monitoring of the node's memory.
func (n *MemoryNode) Len() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.locks)
}

// sweepExpired drops expired entries that nobody asked about again, once
// as many new keys were set as the last sweep left (at least 1024):
// amortized O(1) per acquisition, and the map stays within about twice the
// locks alive (Redis expires keys on its own). The caller holds n.mu.
func (n *MemoryNode) sweepExpired(now time.Time) {
	if n.sweep++; n.sweep < max(n.swept, 1024) {
		return
	}
	for k, e := range n.locks {
		if !now.Before(e.expires) {
			delete(n.locks, k)
		}
	}
	n.sweep, n.swept = 0, len(n.locks)
}

func (n *MemoryNode) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n.mu.Lock()
	if n.down {
		n.mu.Unlock()
		return ErrNodeDown
	}
	return nil
}

// Acquire implements Node. A new fence counter starts from the clock.
func (n *MemoryNode) Acquire(ctx context.Context, key, token string, ttl time.Duration) (AcquireReply, error) {
	return n.AcquireSeeded(ctx, key, token, ttl, 0)
}

// AcquireSeeded implements SeededAcquirer.
func (n *MemoryNode) AcquireSeeded(ctx context.Context, key, token string, ttl time.Duration, seed uint64) (AcquireReply, error) {
	if err := n.enter(ctx); err != nil {
		return AcquireReply{}, err
	}
	defer n.mu.Unlock()
	now := time.Now()
	e, held := n.lookup(key, now)
	switch {
	case held && e.token == token:
		n.locks[key] = memoryEntry{token: token, expires: now.Add(ttl)}
		return AcquireReply{Acquired: true, Fence: n.fences[key]}, nil
	case held:
		return AcquireReply{HolderTTL: e.expires.Sub(now)}, nil
	}
	n.locks[key] = memoryEntry{token: token, expires: now.Add(ttl)}
	n.sweepExpired(now)
	if _, ok := n.fences[key]; !ok {
		if seed == 0 {
			seed = fenceSeed(now)
		}
		n.fences[key] = seed
	}
	n.fences[key]++
	return AcquireReply{Acquired: true, Fence: n.fences[key]}, nil
}

// Extend implements Node.
func (n *MemoryNode) Extend(ctx context.Context, key, token string, ttl time.Duration, fence uint64) (ExtendResult, error) {
	if err := n.enter(ctx); err != nil {
		return NotHeld, err
	}
	defer n.mu.Unlock()
	now := time.Now()
	e, held := n.lookup(key, now)
	if held && e.token != token {
		return NotHeld, nil
	}
	n.locks[key] = memoryEntry{token: token, expires: now.Add(ttl)}
	if held {
		return Extended, nil
	}
	n.fences[key] = max(n.fences[key], fence)
	return Reasserted, nil
}

// Release implements Node.
func (n *MemoryNode) Release(ctx context.Context, key, token string) (bool, error) {
	if err := n.enter(ctx); err != nil {
		return false, err
	}
	defer n.mu.Unlock()
	e, held := n.lookup(key, time.Now())
	if !held || e.token != token {
		return false, nil
	}
	delete(n.locks, key)
	return true, nil
}

// RaiseFence implements Node.
func (n *MemoryNode) RaiseFence(ctx context.Context, key, token string, fence uint64) (bool, error) {
	if err := n.enter(ctx); err != nil {
		return false, err
	}
	defer n.mu.Unlock()
	n.fences[key] = max(n.fences[key], fence)
	e, held := n.lookup(key, time.Now())
	return held && e.token == token, nil
}

// Inspect implements Node.
func (n *MemoryNode) Inspect(ctx context.Context, key string) (Holding, error) {
	if err := n.enter(ctx); err != nil {
		return Holding{}, err
	}
	defer n.mu.Unlock()
	now := time.Now()
	h := Holding{Fence: n.fences[key]}
	if e, held := n.lookup(key, now); held {
		h.Token, h.TTL = e.token, e.expires.Sub(now)
	}
	return h, nil
}

// fenceSeed is where a missing fence counter starts: the clock in
// microseconds since 1970. A node that lost its counters (restarted empty)
// then still counts above every fence it handed out before, unless a key was
// locked more than once a microsecond or the clock went back.
func fenceSeed(now time.Time) uint64 { return uint64(max(now.UnixMicro(), 1)) }

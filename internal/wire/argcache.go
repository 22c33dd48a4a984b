package wire

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// Cache shares what a node builds from one call among the nodes the
// call is sent to: a client sends the same arguments to every node of a
// round, and building a script's keys and arguments once rather than once
// per node saves most of an attempt's allocations, without the client
// knowing anything of scripts. A slot holds the last call whose token
// hashed to it; a call that finds another there takes the slot, and one
// that loses the slot to a concurrent call builds its own. What is shared
// is a pure function of the arguments, so an entry is never wrong, at most
// missing.
type Cache[K comparable, V any] struct {
	seed  maphash.Seed
	slots [64]atomic.Pointer[argEntry[K, V]]
}

type argEntry[K comparable, V any] struct {
	key  K
	once sync.Once
	val  V
}

func NewCache[K comparable, V any]() *Cache[K, V] {
	return &Cache[K, V]{seed: maphash.MakeSeed()}
}

// Get returns build(k), built by the first caller with k and shared with
// the callers that find it in token's slot.
func (c *Cache[K, V]) Get(k K, token string, build func(K) V) V {
	slot := &c.slots[maphash.String(c.seed, token)%uint64(len(c.slots))]
	e := slot.Load()
	if e == nil || e.key != k {
		fresh := &argEntry[K, V]{key: k}
		if slot.CompareAndSwap(e, fresh) {
			e = fresh
		} else if e = slot.Load(); e == nil || e.key != k {
			return build(k)
		}
	}
	e.once.Do(func() { e.val = build(e.key) })
	return e.val
}

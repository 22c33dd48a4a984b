package node

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// argCache shares what a node builds from one call among the nodes the
// call is sent to: a client sends the same arguments to every node of a
// round, and building a script's keys and arguments once rather than once
// per node saves most of an attempt's allocations, without the client
// knowing anything of scripts. A slot holds the last call whose token
// hashed to it; a call that finds another there takes the slot, and one
// that loses the slot to a concurrent call builds its own. What is shared
// is a pure function of the arguments, so an entry is never wrong, at most
// missing.
type argCache[K comparable, V any] struct {
	seed  maphash.Seed
	slots [64]atomic.Pointer[argEntry[K, V]]
}

type argEntry[K comparable, V any] struct {
	key  K
	once sync.Once
	val  V
}

func newArgCache[K comparable, V any]() *argCache[K, V] {
	return &argCache[K, V]{seed: maphash.MakeSeed()}
}

// get returns build(k), built by the first caller with k and shared with
// the callers that find it in token's slot.
func (c *argCache[K, V]) get(k K, token string, build func(K) V) V {
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

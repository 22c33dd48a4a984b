package memnode

import (
	"context"
	"time"

	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
)

var _ node.ReadWriter = (*Node)(nil)

// memRW is a Memory node's read-write locks, by name (see ReadWriter).
type memRW struct {
	writers map[string]memLock
	readers map[string]map[string]time.Time // token -> expiry
	intents map[string]memLock              // token, expiry
}

func (r *memRW) reset() {
	r.writers = map[string]memLock{}
	r.readers = map[string]map[string]time.Time{}
	r.intents = map[string]memLock{}
}

func (r *memRW) len() int { return len(r.writers) + len(r.readers) + len(r.intents) }

func (r *memRW) sweep(now time.Time) {
	for name := range r.writers {
		r.writer(name, now)
	}
	for name := range r.intents {
		r.intent(name, now)
	}
	for name := range r.readers {
		r.lastReader(name, now)
	}
}

func (r *memRW) writer(name string, now time.Time) (memLock, bool) {
	return liveLock(r.writers, name, now)
}

func (r *memRW) intent(name string, now time.Time) (memLock, bool) {
	return liveLock(r.intents, name, now)
}

// lastReader drops expired readers of name and returns the latest expiry
// of those left (false when none is).
func (r *memRW) lastReader(name string, now time.Time) (time.Time, bool) {
	var last time.Time
	for tok, exp := range r.readers[name] {
		if !live(exp, now) {
			delete(r.readers[name], tok)
		} else if exp.After(last) {
			last = exp
		}
	}
	if len(r.readers[name]) == 0 {
		delete(r.readers, name)
		return time.Time{}, false
	}
	return last, true
}

func (r *memRW) reading(name, token string, now time.Time) bool {
	r.lastReader(name, now)
	_, ok := r.readers[name][token]
	return ok
}

// firstReader is the smallest release id among the readers of name: the
// holder a refused writer is told of, comparable with its own id.
func (r *memRW) firstReader(name string) string {
	first := ""
	for tok := range r.readers[name] {
		if id := node.ReleaseID(tok); first == "" || id < first {
			first = id
		}
	}
	return first
}

func (r *memRW) addReader(name, token string, ttl time.Duration, now time.Time) {
	if r.readers[name] == nil {
		r.readers[name] = map[string]time.Time{}
	}
	r.readers[name][token] = now.Add(ttl)
}

// AcquireRW implements ReadWriter.
func (m *Node) AcquireRW(ctx context.Context, mode node.Mode, a node.AcquireArgs) (node.AcquireReply, error) {
	if err := mode.Validate(); err != nil {
		return node.AcquireReply{}, err
	}
	if err := a.Validate(); err != nil {
		return node.AcquireReply{}, err
	}
	if err := m.enter(ctx); err != nil {
		return node.AcquireReply{}, err
	}
	defer m.mu.Unlock()
	now := m.now()
	if m.tombstoned(a.Name, a.Token, now) {
		return node.AcquireReply{}, nil
	}
	if mode == node.Shared {
		return m.acquireShared(a, now), nil
	}
	w, writing := m.rw.writer(a.Name, now)
	if writing {
		if w.token != a.Token {
			return node.AcquireReply{HolderTTL: w.expires.Sub(now), Holder: node.ReleaseID(w.token)}, nil
		}
		w.expires = now.Add(a.TTL)
		m.rw.writers[a.Name] = w
		return node.AcquireReply{Acquired: true, Fence: m.rwCounter(a, now)}, nil
	}
	if last, ok := m.rw.lastReader(a.Name, now); ok {
		m.rw.intents[a.Name] = memLock{token: a.Token, expires: now.Add(a.TTL)}
		m.wrote(now)
		return node.AcquireReply{HolderTTL: last.Sub(now), Holder: m.rw.firstReader(a.Name)}, nil
	}
	m.rw.writers[a.Name] = memLock{token: a.Token, owner: a.Owner, at: a.At, expires: now.Add(a.TTL)}
	delete(m.rw.intents, a.Name) // a writer got in: the intent is done
	c := m.rwCounter(a, now) + 1
	m.counters[a.Name] = memCount{value: c, expires: now.Add(wire.RetentionOrDefault(a.Retention))}
	m.wrote(now)
	return node.AcquireReply{Acquired: true, Fence: c}, nil
}

// acquireShared is AcquireRW(Shared), with m.mu held.
func (m *Node) acquireShared(a node.AcquireArgs, now time.Time) node.AcquireReply {
	if w, writing := m.rw.writer(a.Name, now); writing {
		return node.AcquireReply{HolderTTL: w.expires.Sub(now), Holder: node.ReleaseID(w.token)}
	}
	if i, waits := m.rw.intent(a.Name, now); waits {
		// A reader not yet in (also one asking again after a split) waits
		// for the writer; its entry goes, as the attempt's cleanup skips a
		// node that refused it.
		if m.rw.reading(a.Name, a.Token, now) {
			delete(m.rw.readers[a.Name], a.Token)
			m.rw.lastReader(a.Name, now)
		}
		return node.AcquireReply{HolderTTL: i.expires.Sub(now), Holder: node.WaitingWriterHolder}
	}
	m.rw.addReader(a.Name, a.Token, a.TTL, now)
	m.wrote(now)
	return node.AcquireReply{Acquired: true, Fence: m.rwCounter(a, now)}
}

// rwCounter is the counter of a.Name as it is, started from the seed or
// the clock when missing (readers start it too, so that a reader after data
// loss reads above the writers before it), with its expiry reset.
func (m *Node) rwCounter(a node.AcquireArgs, now time.Time) uint64 {
	c, ok := m.counter(a.Name, now)
	if !ok {
		c = seedOrClock(a.Seed, now)
	}
	m.counters[a.Name] = memCount{value: c, expires: now.Add(wire.RetentionOrDefault(a.Retention))}
	return c
}

// ExtendRW implements ReadWriter.
func (m *Node) ExtendRW(ctx context.Context, mode node.Mode, ops []node.ExtendArgs) ([]node.ExtendResult, error) {
	if err := mode.Validate(); err != nil {
		return nil, err
	}
	for _, op := range ops {
		if err := op.Validate(); err != nil {
			return nil, err
		}
	}
	if err := m.enter(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	now := m.now()
	res := make([]node.ExtendResult, len(ops))
	for i, op := range ops {
		w, writing := m.rw.writer(op.Name, now)
		res[i] = node.Extended
		if mode == node.Shared {
			if !m.rw.reading(op.Name, op.Token, now) {
				if writing || m.tombstoned(op.Name, op.Token, now) {
					res[i] = node.NotHeld
					continue
				}
				res[i] = node.Reasserted
				m.wrote(now)
			}
			m.rw.addReader(op.Name, op.Token, op.TTL, now)
		} else {
			switch _, reading := m.rw.lastReader(op.Name, now); {
			case writing && w.token == op.Token:
			case writing, reading, m.tombstoned(op.Name, op.Token, now):
				res[i] = node.NotHeld
				continue
			default:
				res[i] = node.Reasserted
				w = memLock{token: op.Token, owner: op.Owner, at: op.At}
				delete(m.rw.intents, op.Name) // a writer got in: the intent is done
				m.wrote(now)
			}
			w.expires = now.Add(op.TTL)
			m.rw.writers[op.Name] = w
		}
		m.raise(op.Name, op.Fence, op.Retention, now)
	}
	return res, nil
}

// ReleaseRW implements ReadWriter.
func (m *Node) ReleaseRW(ctx context.Context, mode node.Mode, a node.ReleaseArgs) (bool, error) {
	if err := mode.Validate(); err != nil {
		return false, err
	}
	if err := a.Validate(); err != nil {
		return false, err
	}
	if err := m.enter(ctx); err != nil {
		return false, err
	}
	now := m.now()
	released := false
	if mode == node.Shared {
		if released = m.rw.reading(a.Name, a.Token, now); released {
			delete(m.rw.readers[a.Name], a.Token)
			m.rw.lastReader(a.Name, now)
		}
	} else {
		// The intent stays: a failed attempt's cleanup can land after
		// this node refused the attempt (see ReadWriter).
		if w, ok := m.rw.writer(a.Name, now); ok && w.token == a.Token {
			delete(m.rw.writers, a.Name)
			released = true
		}
	}
	if a.Tombstone > 0 {
		m.tombstones[wire.TombstoneKey(a.Name, a.Token)] = now.Add(a.Tombstone)
		m.wrote(now)
	}
	m.mu.Unlock()
	if released && a.Channel != "" {
		m.broker.publish(a.Channel, a.Name, node.ReleaseID(a.Token))
	}
	return released, nil
}

// RaiseFenceRW implements ReadWriter.
func (m *Node) RaiseFenceRW(ctx context.Context, mode node.Mode, name, token string, fence uint64, retention time.Duration) (bool, error) {
	if err := mode.Validate(); err != nil {
		return false, err
	}
	if err := wire.ValidateRaise(name, token, fence, retention); err != nil {
		return false, err
	}
	if err := m.enter(ctx); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	now := m.now()
	m.raise(name, fence, retention, now)
	if mode == node.Shared {
		return m.rw.reading(name, token, now), nil
	}
	w, ok := m.rw.writer(name, now)
	return ok && w.token == token, nil
}

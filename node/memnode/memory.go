package memnode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
)

// Node is an in-process Node with the semantics of the Redis node: keys
// expire by time.Now (so it runs inside testing/synctest bubbles; it starts
// no goroutine or timer of its own), counters outlive locks until their
// retention ends, tombstones refuse late requests. It is the demo's embedded
// backend, development without Redis, and unit tests of code that takes
// locks. It excludes only within one process.
type Node struct {
	name string
	id   string // Identify's ID, drawn at creation

	mu         sync.Mutex
	down       bool
	locks      map[string]memLock   // by lock name
	counters   map[string]memCount  // by lock name
	tombstones map[string]time.Time // by wire.TombstoneKey, until expiry
	trails     map[string]memTrail  // by lock name
	standing   memStanding          // the node's record, see node.Standing
	writes     int                  // entries written since the last sweep
	swept      int                  // entries left by the last sweep

	clockOffset atomic.Int64 // nanoseconds added to time.Now; see SetClockOffset

	broker memBroker // release notifications, see memory_notify.go
	rw     memRW     // read-write locks, see memory_rw.go
}

type memLock struct {
	token   string
	owner   string
	at      time.Time
	expires time.Time
	waited  bool // a waiter found it held: its release is announced
}

// memTrail is the last acquisition of a lock not released (see TrailKey).
type memTrail struct {
	h       node.Holding // Token, Fence, Owner, AcquiredAt
	expires time.Time
}

// memStanding is the node's record of its standing (node.Standing), as
// lua/standing.lua keeps it: missing, learning or voting, with the longest
// hold it was told of.
type memStanding struct {
	exists, voting bool
	id             string
	learned        time.Duration
	last           time.Time
	hold           time.Duration
}

// report is the standing as a reply carries it: a voter's hold only when
// it is longer than known, the caller's period or told hold (as the
// script's).
func (s memStanding) report(known time.Duration) node.Standing {
	if s.voting {
		st := node.Standing{Known: true, Voting: true}
		if s.hold > known {
			st.Hold = s.hold
		}
		return st
	}
	return node.Standing{Known: true, ID: s.id, Learned: s.learned.Truncate(time.Millisecond), Scope: wire.NodeRecordKey, Hold: s.hold}
}

// peek is the standing as it stands at now, the step since the last one
// counted, without writing it (Inspect).
func (s memStanding) peek(now time.Time) node.Standing {
	switch {
	case !s.exists:
		return node.Standing{Known: true, ID: "0", Scope: wire.NodeRecordKey}
	case !s.voting:
		s.learned = s.step(now)
	}
	return s.report(0)
}

// step is how long a learning record has learned at now: what it records,
// plus the time since its last step, at least 0 and at most a LearnStep.
func (s memStanding) step(now time.Time) time.Duration {
	return s.learned + min(max(now.Sub(s.last), 0), node.LearnStep)
}

// stand advances the record by the step since its last one (a missing one
// is written new), keeps the longer of its hold and told, makes it voting
// once it has learned period and its hold, and returns the standing.
func (m *Node) stand(now time.Time, period, told time.Duration) node.Standing {
	s := &m.standing
	told = told.Truncate(time.Millisecond) // as the script's, in ms
	switch {
	case s.voting:
	case s.exists:
		s.learned = s.step(now)
	default:
		*s = memStanding{exists: true, id: strconv.FormatInt(now.UnixMicro(), 10)}
	}
	s.hold = max(s.hold, told)
	if !s.voting {
		s.last = now
		if s.learned >= max(period, s.hold) {
			*s = memStanding{exists: true, voting: true, hold: s.hold}
		}
	}
	return s.report(max(period, told))
}

// Learn implements node.Learner.
func (m *Node) Learn(ctx context.Context, a node.LearnArgs) (node.Standing, error) {
	if err := a.Validate(); err != nil {
		return node.Standing{}, err
	}
	if err := m.enter(ctx); err != nil {
		return node.Standing{}, err
	}
	defer m.mu.Unlock()
	if s := &m.standing; a.Promote != "" && s.exists && !s.voting && s.id == a.Promote {
		*s = memStanding{exists: true, voting: true, hold: max(s.hold, a.Hold.Truncate(time.Millisecond))}
		return s.report(max(a.Recovery, a.Hold.Truncate(time.Millisecond))), nil
	}
	return m.stand(m.now(), a.Recovery, a.Hold), nil
}

type memCount struct {
	value   uint64
	expires time.Time
}

// New returns an empty memory node named name.
func New(name string) *Node {
	var id [20]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand panics rather)
	m := &Node{name: name, id: hex.EncodeToString(id[:])}
	m.reset()
	return m
}

func (m *Node) reset() {
	m.locks = map[string]memLock{}
	m.counters = map[string]memCount{}
	m.tombstones = map[string]time.Time{}
	m.trails = map[string]memTrail{}
	m.standing = memStanding{}
	m.rw.reset()
	m.writes, m.swept = 0, 0
}

// Name implements Node.
func (m *Node) Name() string { return m.name }

// ErrDown is returned by every call to a memory node stopped with SetDown,
// standing in for an unreachable server. It is node.ErrDown: errors.Is
// matches either name.
//
//lint:ignore SA1019 the old name's value: one error under both names
var ErrDown = node.ErrDown

// SetDown makes every call fail with ErrDown (down) or work again. With
// wipe, the node forgets its locks, counters and tombstones, as a Redis
// server restarted without persistence does (its Identify ID stays).
// Subscriptions report the change through their onState.
func (m *Node) SetDown(down, wipe bool) {
	m.mu.Lock()
	changed := m.down != down
	m.down = down
	if wipe {
		m.reset()
	}
	m.mu.Unlock()
	if changed {
		m.broker.reportState(m)
	}
}

// SetClockOffset sets how far the node's clock is from time.Now: its keys
// expire, and missing fence counters start, by time.Now plus d. It stands
// in for a server whose clock jumps or drifts, while the clients' clocks
// do not.
func (m *Node) SetClockOffset(d time.Duration) { m.clockOffset.Store(int64(d)) }

// now is the node's clock.
func (m *Node) now() time.Time { return time.Now().Add(time.Duration(m.clockOffset.Load())) }

// Len is the number of live entries (locks, counters, tombstones): tests
// use it to show that state goes back to zero once everything expired.
func (m *Node) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepAll(m.now())
	return len(m.locks) + len(m.counters) + len(m.tombstones) + len(m.trails) + m.rw.len()
}

// enter locks m for one call, or says why it cannot run.
func (m *Node) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	if m.down {
		m.mu.Unlock()
		return ErrDown
	}
	return nil
}

// Expiry as Redis has it: an entry is gone once its time has come.
func live(expires, now time.Time) bool { return now.Before(expires) }

// lock returns the live holder of name, dropping an expired entry.
func (m *Node) lock(name string, now time.Time) (memLock, bool) {
	return liveLock(m.locks, name, now)
}

// liveLock returns the live entry of name in locks, dropping an expired one.
func liveLock(locks map[string]memLock, name string, now time.Time) (memLock, bool) {
	e, ok := locks[name]
	if ok && !live(e.expires, now) {
		delete(locks, name)
		return memLock{}, false
	}
	return e, ok
}

func (m *Node) counter(name string, now time.Time) (uint64, bool) {
	c, ok := m.counters[name]
	if ok && !live(c.expires, now) {
		delete(m.counters, name)
		return 0, false
	}
	return c.value, ok
}

// trail returns the live trail of name, dropping an expired one.
func (m *Node) trail(name string, now time.Time) (memTrail, bool) {
	t, ok := m.trails[name]
	if ok && !live(t.expires, now) {
		delete(m.trails, name)
		return memTrail{}, false
	}
	return t, ok
}

func (m *Node) tombstoned(name, token string, now time.Time) bool {
	k := wire.TombstoneKey(name, token)
	exp, ok := m.tombstones[k]
	if ok && !live(exp, now) {
		delete(m.tombstones, k)
		return false
	}
	return ok
}

// wrote counts a new entry and sweeps expired entries nobody asks about
// again once as many were written as the last sweep left (at least 1024):
// amortized O(1) per write, and the maps stay within about twice the live
// entries, as Redis's own expiry keeps its memory bounded.
func (m *Node) wrote(now time.Time) {
	if m.writes++; m.writes >= max(m.swept, 1024) {
		m.sweepAll(now)
	}
}

func (m *Node) sweepAll(now time.Time) {
	for k, e := range m.locks {
		if !live(e.expires, now) {
			delete(m.locks, k)
		}
	}
	for k, c := range m.counters {
		if !live(c.expires, now) {
			delete(m.counters, k)
		}
	}
	for k, exp := range m.tombstones {
		if !live(exp, now) {
			delete(m.tombstones, k)
		}
	}
	for k, t := range m.trails {
		if !live(t.expires, now) {
			delete(m.trails, k)
		}
	}
	m.rw.sweep(now)
	m.writes, m.swept = 0, len(m.locks)+len(m.counters)+len(m.tombstones)+len(m.trails)+m.rw.len()
}

// Identify implements Node: the ID drawn at creation, and "noeviction"
// (the node never drops a live entry).
func (m *Node) Identify(ctx context.Context) (node.Identity, error) {
	if err := m.enter(ctx); err != nil {
		return node.Identity{}, err
	}
	defer m.mu.Unlock()
	return node.Identity{ID: m.id, Eviction: "noeviction"}, nil
}

// Acquire implements Node.
func (m *Node) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	if err := a.Validate(); err != nil {
		return node.AcquireReply{}, err
	}
	if err := m.enter(ctx); err != nil {
		return node.AcquireReply{}, err
	}
	defer m.mu.Unlock()
	now := m.now()
	retention := wire.RetentionOrDefault(a.Retention)
	var mark node.Standing
	if a.Recovery > 0 {
		mark = m.stand(now, a.Recovery, a.Hold)
	}
	if m.tombstoned(a.Name, a.Token, now) {
		return withStanding(node.AcquireReply{}, mark), nil
	}
	e, held := m.lock(a.Name, now)
	handed := held && a.From != "" && e.token == a.From && a.From != a.Token
	if handed {
		held = false // taken as a free key
	}
	if held && e.token != a.Token {
		if a.Waiter && !e.waited { // the holding's only change: its release will be announced
			e.waited = true
			m.locks[a.Name] = e
		}
		return withStanding(node.AcquireReply{HolderTTL: e.expires.Sub(now), Holder: node.ReleaseID(e.token)}, mark), nil
	}
	c, ok := m.counter(a.Name, now)
	if held { // a resend: the counter stays as the first acquire left it
		e.expires = now.Add(a.TTL)
		m.locks[a.Name] = e
		if ok {
			m.counters[a.Name] = memCount{value: c, expires: now.Add(retention)}
		}
		return withStanding(node.AcquireReply{Acquired: true, Fence: c}, mark), nil
	}
	m.locks[a.Name] = memLock{token: a.Token, owner: a.Owner, at: a.At, expires: now.Add(a.TTL), waited: handed && e.waited}
	if !ok {
		c = seedOrClock(a.Seed, now)
	}
	c++
	m.counters[a.Name] = memCount{value: c, expires: now.Add(retention)}
	r := withStanding(node.AcquireReply{Acquired: true, Fence: c}, mark)
	if prev, ok := m.trail(a.Name, now); ok && prev.h.Token != a.Token && prev.h.Token != a.From {
		r.Previous = prev.h
	}
	m.trails[a.Name] = memTrail{h: node.Holding{Token: a.Token, Fence: c, Owner: a.Owner, AcquiredAt: micro(a.At)}, expires: now.Add(retention)}
	m.wrote(now)
	m.wrote(now) // the trail is an entry of its own
	return r, nil
}

// withStanding returns r with the node's standing.
func withStanding(r node.AcquireReply, s node.Standing) node.AcquireReply {
	r.Standing = s
	return r
}

// micro is t as the Redis node stores it: to the microsecond, without a
// monotonic reading or location.
func micro(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return time.UnixMicro(t.UnixMicro())
}

// seedOrClock is where a missing counter starts: the client's seed when it
// is at most MaxSeedSkew ahead of the clock (so that the nodes of one
// attempt agree), the clock in microseconds otherwise. Never below the
// clock, so that a node that lost its counters still counts above the
// fences handed out more than MaxSeedSkew before.
func seedOrClock(seed uint64, now time.Time) uint64 {
	clock := uint64(max(now.UnixMicro(), 0))
	skew := uint64(node.MaxSeedSkew / time.Microsecond)
	if seed >= clock && seed <= clock+skew {
		return seed
	}
	return clock
}

// Extend implements Node.
func (m *Node) Extend(ctx context.Context, ops []node.ExtendArgs) ([]node.ExtendResult, error) {
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
		e, held := m.lock(op.Name, now)
		switch {
		case held && e.token == op.Token:
			res[i] = node.Extended
		case held, m.tombstoned(op.Name, op.Token, now):
			res[i] = node.NotHeld
			continue
		default:
			res[i] = node.Reasserted
			e = memLock{token: op.Token, owner: op.Owner, at: op.At}
		}
		e.expires = now.Add(op.TTL)
		m.locks[op.Name] = e
		m.raise(op.Name, op.Fence, op.Retention, now)
		if t, ok := m.trail(op.Name, now); ok {
			t.expires = now.Add(wire.RetentionOrDefault(op.Retention))
			if t.h.Token == op.Token && t.h.Fence < op.Fence {
				t.h.Fence = op.Fence // the trail records the lock's fence, as raise does
			}
			m.trails[op.Name] = t
		}
		if res[i] == node.Reasserted {
			m.wrote(now)
		}
	}
	return res, nil
}

// raise lifts the counter of name to at least fence and resets its
// expiry; a missing counter is created only for a positive fence.
func (m *Node) raise(name string, fence uint64, retention time.Duration, now time.Time) {
	c, ok := m.counter(name, now)
	if !ok && fence == 0 {
		return
	}
	m.counters[name] = memCount{value: max(c, fence), expires: now.Add(wire.RetentionOrDefault(retention))}
}

// Release implements Node.
func (m *Node) Release(ctx context.Context, a node.ReleaseArgs) (bool, error) {
	if err := a.Validate(); err != nil {
		return false, err
	}
	if err := m.enter(ctx); err != nil {
		return false, err
	}
	now := m.now()
	e, held := m.lock(a.Name, now)
	released := held && e.token == a.Token
	if released {
		delete(m.locks, a.Name)
		delete(m.trails, a.Name)
	}
	if a.Tombstone > 0 {
		m.tombstones[wire.TombstoneKey(a.Name, a.Token)] = now.Add(a.Tombstone)
		m.wrote(now)
	}
	m.mu.Unlock()
	// Announced outside m.mu: a subscriber may call the node.
	if released && e.waited && a.Channel != "" {
		m.broker.publish(a.Channel, a.Name, node.ReleaseID(a.Token))
		for _, from := range strings.Fields(a.From) {
			m.broker.publish(a.Channel, a.Name, node.ReleaseID(from))
		}
	}
	return released, nil
}

// RaiseFence implements Node.
func (m *Node) RaiseFence(ctx context.Context, name, token string, fence uint64, retention time.Duration) (bool, error) {
	if err := wire.ValidateRaise(name, token, fence, retention); err != nil {
		return false, err
	}
	if err := m.enter(ctx); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	now := m.now()
	m.raise(name, fence, retention, now)
	if t, ok := m.trail(name, now); ok && t.h.Token == token && t.h.Fence < fence {
		t.h.Fence = fence
		m.trails[name] = t
	}
	e, held := m.lock(name, now)
	return held && e.token == token, nil
}

// ForceRelease implements Node.
func (m *Node) ForceRelease(ctx context.Context, a node.ForceReleaseArgs) (bool, error) {
	if err := a.Validate(); err != nil {
		return false, err
	}
	if err := m.enter(ctx); err != nil {
		return false, err
	}
	now := m.now()
	m.raise(a.Name, a.Fence, a.Retention, now)
	if a.Tombstone > 0 {
		m.tombstones[wire.TombstoneKey(a.Name, a.Token)] = now.Add(a.Tombstone)
		m.wrote(now)
	}
	e, held := m.lock(a.Name, now)
	released := held && e.token == a.Token
	if released {
		delete(m.locks, a.Name)
	}
	m.mu.Unlock()
	if released && e.waited && a.Channel != "" {
		m.broker.publish(a.Channel, a.Name, node.ReleaseID(a.Token))
	}
	return released, nil
}

// Scan implements Node: the live lock names matching a.Match in byte
// order, after the cursor (the last name of the previous page), a.Count
// at a time. Each call sorts the matching names: O(n log n) for n locks.
func (m *Node) Scan(ctx context.Context, a node.ScanArgs) (node.ScanPage, error) {
	if err := a.Validate(); err != nil {
		return node.ScanPage{}, err
	}
	if err := m.enter(ctx); err != nil {
		return node.ScanPage{}, err
	}
	defer m.mu.Unlock()
	now := m.now()
	var names []string
	for name, e := range m.locks {
		if live(e.expires, now) && name > a.Cursor && (a.Match == "" || globMatch(a.Match, name)) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if n := a.CountOrDefault(); len(names) > n {
		return node.ScanPage{Names: names[:n], Cursor: names[n-1]}, nil
	}
	return node.ScanPage{Names: names}, nil
}

// Inspect implements Node.
func (m *Node) Inspect(ctx context.Context, name string) (node.Holding, error) {
	if name == "" {
		return node.Holding{}, wire.Invalid("empty name")
	}
	if err := m.enter(ctx); err != nil {
		return node.Holding{}, err
	}
	defer m.mu.Unlock()
	now := m.now()
	var h node.Holding
	h.Fence, _ = m.counter(name, now)
	if e, held := m.lock(name, now); held {
		h.Token, h.TTL, h.Owner, h.AcquiredAt = e.token, e.expires.Sub(now), e.owner, micro(e.at)
	}
	h.Standing = m.standing.peek(now)
	return h, nil
}

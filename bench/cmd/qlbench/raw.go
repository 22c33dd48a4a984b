package main

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
)

// libRaw is the raw floor: a two-round Redlock cycle over these nodes with
// no client library in the way, the nearest this bench gets to the
// physical limit.
const libRaw = "raw"

// compareAndDeleteLua is the release every Redlock client runs: delete the
// key only if it still holds our token.
const compareAndDeleteLua = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`

// libRawRecord is the raw floor running quorumlock's own scripts: the
// acquire and release scripts of its Redis node, with the arguments its
// client sends on a plain cycle (recovery on, notifications on), and no
// client library in the way. Its ratio to raw is what the one record per
// key costs the nodes; quorumlock's ratio to it is what the client adds.
const libRawRecord = "raw-record"

// rawKeyPrefix keeps the raw floor's keys apart from the other libraries';
// rawRecordPrefix the raw-record floor's from the raw floor's.
const (
	rawKeyPrefix    = "bench:raw:"
	rawRecordPrefix = "bench:raw-record:"
)

// rawIOTimeout bounds one round's writes and reads (go-redis's ReadTimeout
// in the other libraries), so that a stuck node cannot hang the bench.
const rawIOTimeout = time.Second

var (
	errRawNotAcquired = errors.New("raw: no majority said OK")
	errRawNotReleased = errors.New("raw: release deleted the key on no majority")
	errRawConfig      = errors.New("raw: bad configuration")
	errRawNotHeld     = errors.New("raw: lock handle already released")
)

// rawFloor is the raw floor: one TCP connection per node, RESP written and
// parsed by hand, one goroutine per cycle. Acquire writes SET key token NX
// PX ttl to every node and then reads every reply; release writes EVALSHA
// of compareAndDeleteLua (loaded once per connection with SCRIPT LOAD) to
// every node and then reads every reply. Acquired (released) when a
// majority said OK (1); it waits for every reply and decides nothing else
// (no undo, retry, validity or fence).
//
// A cycle takes an idle connection set from a free list (dialling one when
// none is idle), so concurrent cycles never share a connection: the
// parallel scenario ends up with one set per goroutine.
type rawFloor struct {
	addrs  []string
	quorum int
	ttlMS  string
	sha    string
	free   chan *rawSet

	record bool   // lib raw-record: quorumlock's scripts
	acqSHA string // its acquire script's
	relSHA string // its release script's
	ttlArg string // ttl as its scripts take it (ms)
}

// rawSet is one connection per node, used by one cycle at a time, with the
// buffers its cycles reuse.
type rawSet struct {
	conns    []rawConn
	buf      []byte   // the command being written to every node
	errReply string   // the first error reply of the last round, if any
	seed     [16]byte // the token's random bits
	lock     rawLock  // the handle of the lock this set holds
}

type rawConn struct {
	conn net.Conn
	rr   *respReader
}

// rawLock is the raw floor's handle: the key and token of one acquisition.
// It is its set's own (no allocation per cycle), so it is valid until its
// release: the set's next acquisition reuses it.
type rawLock struct {
	set   *rawSet
	key   string
	token [32]byte // hex of 128 random bits
	held  bool     // from acquire to release: a second release must not free the set twice
}

// newRawFloor dials one connection set to addrs and loads the release
// script on it.
func newRawFloor(ctx context.Context, addrs []string, ttl time.Duration, record bool) (*rawFloor, error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: no node addresses", errRawConfig)
	}
	if ttl < time.Millisecond {
		return nil, fmt.Errorf("%w: ttl %s is under the 1ms PX resolution", errRawConfig, ttl)
	}
	sum := sha1.Sum([]byte(compareAndDeleteLua))
	f := &rawFloor{
		addrs:  addrs,
		quorum: len(addrs)/2 + 1,
		ttlMS:  strconv.FormatInt(ttl.Milliseconds(), 10),
		sha:    hex.EncodeToString(sum[:]),
		free:   make(chan *rawSet, 64),
	}
	if record {
		f.record, f.ttlArg = true, f.ttlMS
		f.acqSHA, f.relSHA = shaOf(wire.Scripts().Acquire), shaOf(wire.Scripts().Release)
	}
	s, err := f.dial(ctx)
	if err != nil {
		return nil, err
	}
	f.put(s)
	return f, nil
}

// newRaw is the raw floor as a bench locker.
func newRaw(addrs []string, ttl time.Duration, record bool) (*locker, error) {
	f, err := newRawFloor(context.Background(), addrs, ttl, record)
	if err != nil {
		return nil, err
	}
	name := libRaw
	if record {
		name = libRawRecord
	}
	return &locker{
		name: name,
		acquire: func(ctx context.Context, key string) (any, error) {
			return f.acquire(ctx, key)
		},
		release: func(ctx context.Context, h any) error {
			return f.release(ctx, h.(*rawLock))
		},
		close: f.close,
	}, nil
}

// dial opens one connection per node and loads the release script on each.
func (f *rawFloor) dial(ctx context.Context) (*rawSet, error) {
	s := &rawSet{}
	d := net.Dialer{Timeout: 500 * time.Millisecond}
	for _, a := range f.addrs {
		c, err := d.DialContext(ctx, "tcp", a)
		if err != nil {
			s.close()
			return nil, err
		}
		s.conns = append(s.conns, rawConn{conn: c, rr: newRESPReader(c)})
	}
	s.lock.set = s
	load := map[string]string{f.sha: compareAndDeleteLua}
	if f.record {
		load = map[string]string{f.acqSHA: wire.Scripts().Acquire, f.relSHA: wire.Scripts().Release}
	}
	if f.record {
		// The nodes count from the start, as a new deployment's client
		// makes them (its first round promotes them): no learner's write.
		s.buf = appendArrayHeader(s.buf[:0], 3)
		s.buf = appendBulk(s.buf, "SET")
		s.buf = appendBulk(s.buf, wire.RecordKey(rawRecordPrefix, false))
		s.buf = appendBulk(s.buf, "V")
		if _, err := s.round(ctx, reply.isOK); err != nil {
			s.close()
			return nil, err
		}
	}
	for sha, src := range load {
		s.buf = appendArrayHeader(s.buf[:0], 3)
		s.buf = appendBulk(s.buf, "SCRIPT")
		s.buf = appendBulk(s.buf, "LOAD")
		s.buf = appendBulk(s.buf, src)
		yes, err := s.round(ctx, func(r reply) bool { return r.kind == '$' && string(r.str) == sha })
		if err == nil && yes < len(f.addrs) {
			err = s.noQuorum(fmt.Errorf("raw: SCRIPT LOAD answered %s on %d of %d nodes", sha, yes, len(f.addrs)))
		}
		if err != nil {
			s.close()
			return nil, err
		}
	}
	return s, nil
}

func shaOf(src string) string {
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}

// Arguments of quorumlock's scripts that a plain cycle sends unchanged: its
// defaults (see node/redisnode).
var (
	recordRetention = strconv.FormatInt(node.DefaultRetention.Milliseconds(), 10)
	recordSkew      = strconv.FormatInt(node.MaxSeedSkew.Microseconds(), 10)
	recordPeriod    = strconv.FormatInt((10 * time.Minute).Milliseconds(), 10)
)

// writeRecordAcquire writes quorumlock's acquire script call for the set's
// lock: KEYS lock, tombstone, the node's record; ARGV as wire.Scripts
// documents them.
func (f *rawFloor) writeRecordAcquire(s *rawSet) {
	now := strconv.FormatInt(time.Now().UnixMicro(), 10)
	k := wire.KeysOf(rawRecordPrefix+s.lock.key, string(s.lock.token[:]))
	s.buf = appendArrayHeader(s.buf[:0], 3+3+10)
	for _, a := range []string{"EVALSHA", f.acqSHA, "3", k.Lock, k.Tombstone, wire.RecordKey(rawRecordPrefix+s.lock.key, false),
		string(s.lock.token[:]), f.ttlArg, now, recordRetention, recordSkew, now, "", "0", recordPeriod, "0"} {
		s.buf = appendBulk(s.buf, a)
	}
}

// writeRecordRelease writes quorumlock's release script call for l, with
// the release announced on a channel as its client does.
func (f *rawFloor) writeRecordRelease(s *rawSet, l *rawLock) {
	k := wire.KeysOf(rawRecordPrefix+l.key, string(l.token[:]))
	s.buf = appendArrayHeader(s.buf[:0], 3+2+3)
	for _, a := range []string{"EVALSHA", f.relSHA, "2", k.Lock, k.Tombstone, string(l.token[:]), "0", "bench:raw-record:released"} {
		s.buf = appendBulk(s.buf, a)
	}
}

// get returns an idle connection set, dialling one when none is idle.
func (f *rawFloor) get(ctx context.Context) (*rawSet, error) {
	select {
	case s := <-f.free:
		return s, nil
	default:
		return f.dial(ctx)
	}
}

// put returns a set to the free list (closing it if the list is full).
func (f *rawFloor) put(s *rawSet) {
	select {
	case f.free <- s:
	default:
		s.close()
	}
}

// acquire writes SET key token NX PX ttl to every node, then reads every
// reply; the lock is held when a majority answered OK.
func (f *rawFloor) acquire(ctx context.Context, key string) (*rawLock, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := f.get(ctx)
	if err != nil {
		return nil, err
	}
	_, _ = rand.Read(s.seed[:]) // never fails (Go 1.24+)
	hex.Encode(s.lock.token[:], s.seed[:])
	s.lock.key = key
	granted := reply.isOK
	if f.record {
		f.writeRecordAcquire(s)
		granted = func(r reply) bool { return r.kind == '*' && r.hasHead && r.head == 1 }
	} else {
		s.buf = appendArrayHeader(s.buf[:0], 6)
		s.buf = appendBulk(s.buf, "SET")
		s.buf = appendBulkKey(s.buf, key)
		s.buf = appendBulk(s.buf, s.lock.token[:])
		s.buf = appendBulk(s.buf, "NX")
		s.buf = appendBulk(s.buf, "PX")
		s.buf = appendBulk(s.buf, f.ttlMS)
	}
	yes, err := s.round(ctx, granted)
	if err != nil {
		s.close() // replies may be left unread: the stream is out of step
		return nil, err
	}
	if yes < f.quorum {
		err := s.noQuorum(errRawNotAcquired)
		f.put(s)
		return nil, err
	}
	s.lock.held = true
	return &s.lock, nil
}

// release writes EVALSHA compare-and-delete to every node, then reads every
// reply; it succeeds when a majority deleted our token.
func (f *rawFloor) release(ctx context.Context, l *rawLock) error {
	if !l.held {
		return errRawNotHeld
	}
	l.held = false
	s := l.set
	if f.record {
		f.writeRecordRelease(s, l)
	} else {
		s.buf = appendArrayHeader(s.buf[:0], 5)
		s.buf = appendBulk(s.buf, "EVALSHA")
		s.buf = appendBulk(s.buf, f.sha)
		s.buf = appendBulk(s.buf, "1")
		s.buf = appendBulkKey(s.buf, l.key)
		s.buf = appendBulk(s.buf, l.token[:])
	}
	yes, err := s.round(ctx, func(r reply) bool { return r.kind == ':' && r.num == 1 })
	if err != nil {
		s.close()
		return err
	}
	if yes < f.quorum {
		err := s.noQuorum(errRawNotReleased)
		f.put(s)
		return err
	}
	f.put(s)
	return nil
}

// close closes the idle connection sets.
func (f *rawFloor) close() {
	for {
		select {
		case s := <-f.free:
			s.close()
		default:
			return
		}
	}
}

// round writes s.buf to every node, then reads one reply from every node,
// and counts the replies for which yes is true. An error is an I/O or
// protocol error (after which the set must be closed); error replies just
// count as no.
func (s *rawSet) round(ctx context.Context, yes func(reply) bool) (int, error) {
	deadline := time.Now().Add(rawIOTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	for _, c := range s.conns {
		if err := c.conn.SetDeadline(deadline); err != nil {
			return 0, err
		}
		if _, err := c.conn.Write(s.buf); err != nil {
			return 0, err
		}
	}
	n := 0
	s.errReply = ""
	for _, c := range s.conns {
		r, err := c.rr.read()
		if err != nil {
			return 0, err
		}
		if r.kind == '-' && s.errReply == "" {
			s.errReply = string(r.str)
		}
		if yes(r) {
			n++
		}
	}
	return n, nil
}

// noQuorum is err, with the first error reply of the last round if a node
// answered one (NOSCRIPT after a restart, OOM, ...).
func (s *rawSet) noQuorum(err error) error {
	if s.errReply != "" {
		return fmt.Errorf("%w (a node answered: %s)", err, s.errReply)
	}
	return err
}

func (s *rawSet) close() {
	for _, c := range s.conns {
		_ = c.conn.Close()
	}
}

// appendBulkKey appends rawKeyPrefix+key as one bulk string without
// building the string.
func appendBulkKey(b []byte, key string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(rawKeyPrefix)+len(key)), 10)
	b = append(b, '\r', '\n')
	b = append(b, rawKeyPrefix...)
	b = append(b, key...)
	return append(b, '\r', '\n')
}

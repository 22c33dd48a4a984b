package chaos

import (
	"sync"
	"time"
)

// OpKind is a Register operation.
type OpKind string

// Register operations.
const (
	OpRead  OpKind = "read"
	OpWrite OpKind = "write"
)

// RegOp is one operation on the Register, in the order the Register applied
// it (Seq), with the instant it was applied (At, on the run's timeline).
type RegOp struct {
	Seq      int           `json:"seq"`
	At       time.Duration `json:"at_ns"`
	Kind     OpKind        `json:"kind"`
	Client   int           `json:"client"`
	Fence    uint64        `json:"fence"`
	Value    int64         `json:"value"`     // read: the value returned; write: the value written
	Accepted bool          `json:"accepted"`  // write only
	MaxFence uint64        `json:"max_fence"` // highest fence seen before this op
}

// Register is the resource the lock protects: an integer guarded by its own
// mutex. Every operation carries the caller's fence. With fencing on, a
// write whose fence is lower than the highest fence the Register has seen
// (on any read or write) is refused: that is the fencing check that turns a
// holder that outlived its lock into a refused write instead of a lost
// update. The Register records every operation for the checker.
type Register struct {
	clock   *Clock
	fencing bool

	mu       sync.Mutex
	last     time.Duration // At of the last op: At strictly increases
	value    int64
	maxFence uint64
	ops      []RegOp
}

// NewRegister returns an empty register. With fencing false it accepts every
// write (used to show that the checker catches lost updates).
func NewRegister(clock *Clock, fencing bool) *Register {
	return &Register{clock: clock, fencing: fencing}
}

// Read returns the value and the sequence number of the read.
func (r *Register) Read(client int, fence uint64) (int64, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	op := RegOp{Seq: len(r.ops), At: r.now(), Kind: OpRead, Client: client, Fence: fence, Value: r.value, MaxFence: r.maxFence}
	r.maxFence = max(r.maxFence, fence)
	r.ops = append(r.ops, op)
	return op.Value, op.Seq
}

// Write stores v unless fencing refuses it (fence lower than the highest
// seen). It reports whether the write was accepted and its sequence number.
func (r *Register) Write(client int, fence uint64, v int64) (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	op := RegOp{Seq: len(r.ops), At: r.now(), Kind: OpWrite, Client: client, Fence: fence, Value: v, MaxFence: r.maxFence}
	op.Accepted = !r.fencing || fence >= r.maxFence
	if op.Accepted {
		r.value = v
		r.maxFence = max(r.maxFence, fence)
	}
	r.ops = append(r.ops, op)
	return op.Accepted, op.Seq
}

// now is the timeline, made strictly increasing across ops so that the
// linearizability check sees the register's own order.
func (r *Register) now() time.Duration {
	t := r.clock.Now()
	if t <= r.last {
		t = r.last + 1
	}
	r.last = t
	return t
}

// MaxFence is the highest fence the register has seen.
func (r *Register) MaxFence() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.maxFence
}

// Ops returns a copy of the history.
func (r *Register) Ops() []RegOp {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]RegOp(nil), r.ops...)
}

// Clock is the run's single monotonic timeline.
type Clock struct{ t0 time.Time }

// NewClock starts a timeline at now.
func NewClock() *Clock { return &Clock{t0: time.Now()} }

// Now is the time since the start of the timeline (monotonic).
func (c *Clock) Now() time.Duration { return time.Since(c.t0) }

// At converts an instant (with a monotonic reading) to the timeline.
func (c *Clock) At(t time.Time) time.Duration { return t.Sub(c.t0) }

package node

import (
	"context"
	"errors"
	"time"
)

// ReadWriter is the optional part of the contract for read-write locks: a
// node that implements it can hold, beside (and independent of) the mutex
// of a name, a read-write lock of the same name with any number of shared
// holders (readers) or one exclusive holder (writer). Clients check for it
// with a type assertion; a node without it makes package rwlock fail with
// ErrReadWriteUnsupported, and third-party nodes written before it keep
// compiling.
//
// The calls take the Node's argument types and keep its rules (atomic,
// idempotent for one token, tombstones, the fence counter of the name
// shared with the mutex of the name), with these differences:
//
//   - AcquireRW(Shared) adds the token as a reader, with its own expiry,
//     unless a writer holds the lock or a writer waits (its intent, see
//     below); it does not count: its Fence is the counter as it is, the
//     fence of the last writer. A missing counter (a new name, or data
//     lost) is first started as an exclusive acquisition starts it, from
//     the seed or the clock, so that a reader's fence stays at least that
//     of the writers before it. Refused by a writer, it reports the
//     writer's ReleaseID and TTL; refused by an intent, WaitingWriterHolder
//     and the intent's TTL, and the token's entry, if a split-vote round
//     left it there, is dropped: a reader not yet in never passes a
//     waiting writer.
//   - AcquireRW(Exclusive) takes the lock when no writer and no live
//     reader holds it, and counts as Node.Acquire does. Refused because
//     readers hold it, it records the token as the waiting writer's
//     intent for a.TTL (replacing another's), which refuses new readers
//     until it expires or a writer acquires on the node: a stream of
//     readers cannot starve a writer. It then reports the smallest
//     ReleaseID among the readers and the time until the last reader's
//     entry expires, so that a writer and a reader that split the nodes
//     compare the same two ids and agree on one winner.
//   - ExtendRW and ReleaseRW act on the token in the given mode only;
//     a shared re-assertion is refused while a writer holds the lock, an
//     exclusive one while a writer or reader does (it ends an intent, as
//     an acquisition does). A release never drops an intent: the cleanup
//     of a failed attempt can land after the node refused that attempt.
//     A release is announced on a.Channel with a.Name, as Node.Release
//     does.
//   - RaiseFenceRW raises the counter as RaiseFence does and reports
//     whether the token holds the lock in the given mode.
//
// Previous (the trail) is never reported: read-write locks leave none.
// Keys on Redis, all in the name's slot: the writer name+":rw:w" ("token
// at owner"), the readers name+":rw:r" (a sorted set of tokens by expiry,
// in server milliseconds), the intent name+":rw:i" (the waiting writer's
// token), beside the counter name+":fence" and the tombstones. Scan lists none of them.
type ReadWriter interface {
	AcquireRW(ctx context.Context, mode Mode, a AcquireArgs) (AcquireReply, error)
	ExtendRW(ctx context.Context, mode Mode, ops []ExtendArgs) ([]ExtendResult, error)
	ReleaseRW(ctx context.Context, mode Mode, a ReleaseArgs) (released bool, err error)
	RaiseFenceRW(ctx context.Context, mode Mode, name, token string, fence uint64, retention time.Duration) (held bool, err error)
}

// Mode is the side of a read-write lock a call is for.
type Mode int

const (
	// Shared: one of any number of readers.
	Shared Mode = iota + 1
	// Exclusive: the one writer.
	Exclusive
)

func (m Mode) String() string {
	switch m {
	case Shared:
		return "shared"
	case Exclusive:
		return "exclusive"
	}
	return "invalid mode"
}

// Validate reports ErrInvalidArgument for a mode other than Shared and
// Exclusive.
func (m Mode) Validate() error {
	if m != Shared && m != Exclusive {
		return invalid("read-write mode %d", int(m))
	}
	return nil
}

// WaitingWriterHolder is the Holder a shared AcquireRW reports when a
// waiting writer's intent refuses it. It stands for every writer attempt
// (a reader refused by the intents of several attempts sees one holder),
// and it sorts before every ReleaseID, so a reader that splits the nodes
// with a waiting writer yields to it.
const WaitingWriterHolder = "-waiting-writer"

// ErrReadWriteUnsupported is returned (wrapped) for a node that does not
// implement ReadWriter.
var ErrReadWriteUnsupported = errors.New("node: read-write locks not supported by this node")

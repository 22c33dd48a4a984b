// Package node is the contract between the quorum client (package redlock)
// and one lock server: Node, the calls every lock needs, and optional
// capabilities that a client finds by type assertion, as io.WriterTo is
// found: Inspector (reading who holds a name, listing names),
// ForceReleaser, Subscriber (release notifications) and ReadWriter
// (read-write locks). A client that needs a capability a node lacks gets
// an error wrapping errors.ErrUnsupported (or the capability's own
// sentinel), never a panic. The implementations live in packages of their
// own: node/redisnode (Lua scripts over go-redis), node/memnode
// (in-process, same semantics) and, in a module of its own, rueidisnode.
// The conformance suite in package nodetest runs against every one.
//
// A Node works on names: the lock's full key on the server, built by the
// client (prefix, then the user's key in braces, so that every key of one
// lock hashes to the same Redis Cluster slot). Beside each lock key a node
// keeps the lock's fence counter and, for a while after a release, a
// tombstone per released token that refuses late requests of that token,
// and the trail of the last acquisition that was not released, which lets
// the next acquisition see that it took over from a holder that let the
// lock expire.
//
// A lock key's value is the token, the acquisition time and the owner,
// separated by spaces; tokens therefore have no spaces. A value that starts
// with "!" was marked by a waiter of an older client (the mark is read and
// ignored), so tokens do not start with "!". Every call compares the token
// part only.
package node

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"time"
)

// Node is one independent lock server: the calls every lock needs. Every
// method is atomic on the server and idempotent for the same token (clients
// resend requests whose replies were lost). Implementations are safe for
// concurrent use. The optional capabilities (Inspector, ForceReleaser,
// Subscriber, ReadWriter) keep the same rules.
type Node interface {
	// Name identifies the node in errors, logs and metrics (its address).
	Name() string

	// Identify reports which server answers (so that one server reached
	// under two names is not counted twice) and its eviction policy.
	Identify(ctx context.Context) (Identity, error)

	// Acquire sets the lock key to the token (with a.At and a.Owner) for
	// TTL if the key is free and no tombstone of the token exists, and
	// increments the fence counter; when another token holds the key it
	// reports that token's ReleaseID and remaining TTL. A new acquisition
	// replaces the trail with its own and reports the trail it found when
	// that was another token's (Previous: a holder that never released the
	// key here).
	// A missing counter starts from Seed when Seed is at or ahead of the
	// server's clock (in microseconds) by at most MaxSeedSkew, from the
	// server's clock otherwise: never below the clock. The counter's expiry is reset to Retention (or the
	// TTL, when longer) on every acquisition. Acquiring again with the token that holds the key
	// refreshes its TTL and reports the counter unchanged. A key held by
	// another token is only read, but for one change: with a.Waiter, the
	// holding is marked waited for (once), so that its release is
	// announced. A value that is not a lock's is never changed.
	Acquire(ctx context.Context, a AcquireArgs) (AcquireReply, error)

	// Extend resets the TTL of each lock that holds its token. A missing key
	// without a tombstone of the token is set again (Reasserted). In both
	// cases the counter is raised to at least the op's Fence and its expiry
	// reset to Retention (a held lock's counter never expires), and so is
	// the trail's. A re-asserted key carries op.At and op.Owner. Results are
	// in the order of ops; an error (a bad op included) fails the whole
	// batch.
	Extend(ctx context.Context, ops []ExtendArgs) ([]ExtendResult, error)

	// Release deletes the lock key if it holds the token, and in every case
	// leaves a tombstone of the token for a.Tombstone (when positive), so that a request of
	// the token that reaches the server later (an acquire or extend still
	// in flight) cannot create the key again. When the key was deleted and
	// a.Channel is not empty, it announces ReleaseID(token) and the name on
	// that channel (best effort) if a waiter found the key held
	// (AcquireArgs.Waiter): a release nobody waited for costs no message.
	// It reports whether the key was deleted;
	// when it was, the trail is deleted too (a key that expires, or is
	// force-released, leaves its trail for the next acquisition).
	Release(ctx context.Context, a ReleaseArgs) (released bool, err error)

	// RaiseFence lifts the counter of name to at least fence (resetting its
	// expiry to retention), and the fence of token's trail likewise, and
	// reports whether name holds token, atomically.
	RaiseFence(ctx context.Context, name, token string, fence uint64, retention time.Duration) (held bool, err error)
}

// Inspector is the optional capability of reading a node's locks without
// changing them, for administration (redlock's Inspect, Locks and
// ForceRelease) and tooling.
type Inspector interface {
	// Inspect reports who holds name and its counter, changing nothing.
	Inspect(ctx context.Context, name string) (Holding, error)

	// Scan returns one page of the names of lock keys (never counters,
	// tombstones or trails; a released key may be listed while the node
	// keeps its counter) matching the Redis glob a.Match, as Redis's
	// SCAN does: start with an empty cursor and pass each page's Cursor
	// back until it is empty. A name present for the whole scan is
	// returned at least once; a page may be empty before the end. Each
	// call's cost is bounded by a.Count (a hint, DefaultScanCount when 0).
	Scan(ctx context.Context, a ScanArgs) (ScanPage, error)
}

// ForceReleaser is the optional capability of evicting a holder, for
// administration (redlock's ForceRelease).
type ForceReleaser interface {
	// ForceRelease evicts a holder: atomically, it raises the counter of
	// a.Name to at least a.Fence (its expiry reset to a.Retention), leaves a
	// tombstone of a.Token for a.Tombstone (so that the evicted holder's
	// extensions cannot re-assert the key), and deletes the lock key if it
	// holds a.Token, announcing that on a.Channel as Release does. The
	// trail stays: the next acquisition reports the evicted holder as
	// Previous. It reports whether the key was deleted.
	ForceRelease(ctx context.Context, a ForceReleaseArgs) (released bool, err error)
}

// Subscriber is the optional capability of announcing releases, which
// lets waiters wake at a release rather than at their next retry. A
// client without it (or whose Subscribe returns
// ErrNotificationsUnsupported) waits by its retry policy alone.
type Subscriber interface {
	// Subscribe delivers the releases announced on channel to onRelease
	// (the name and ReleaseID of the token) until stop is called. It
	// returns at once; the subscription is made, and remade after failures,
	// in the background, and onState reports each change: up when the
	// server confirmed it, down with the cause when it broke. Callbacks come
	// from one goroutine at a time per subscription and must be quick. stop
	// waits for deliveries to end and may be called more than once (not
	// from a callback). ctx carries values only: the subscription lasts
	// until stop. A node that cannot subscribe returns
	// ErrNotificationsUnsupported.
	Subscribe(ctx context.Context, channel string, onRelease func(name, releaseID string), onState func(up bool, err error)) (stop func(), err error)
}

// MaxSeedSkew is how far a client's seed may be ahead of the server's clock
// and still start a missing fence counter (a seed behind the clock never
// does). Clients send the same seed to every node of one attempt, half the
// skew ahead of their clock, so that nodes whose clocks are close to theirs
// agree on a new counter; a client whose clock is further off seeds
// nothing, and its fences follow the servers' clocks. It is small because a
// counter may start this far ahead of its node's clock: fences handed out
// less than MaxSeedSkew before every node lost its data could be passed
// again.
const MaxSeedSkew = 20 * time.Millisecond

// DefaultRetention is how long a fence counter outlives the last acquisition
// of its key unless the client says otherwise.
const DefaultRetention = 24 * time.Hour

// AcquireArgs are the arguments of Node.Acquire.
type AcquireArgs struct {
	Name      string
	Token     string
	TTL       time.Duration
	Seed      uint64        // client clock, microseconds since the Unix epoch
	Retention time.Duration // counter expiry, reset on each acquisition; 0: DefaultRetention
	Owner     string        // who acquires (see CheckOwner); may be empty
	At        time.Time     // the client's clock at the attempt; zero: unknown
	// Recovery is the client's recovery period: the node's record (see
	// Standing) is read, created or advanced, and reported in the reply;
	// a learning record that has learned this long (and Hold) votes
	// again. 0: the client does not judge recovery, and the record is left
	// alone.
	Recovery time.Duration
	// Hold is the longest hold the client knows of (Standing.Hold): the
	// node keeps the longest it was told, learning or voting.
	Hold time.Duration
	// Waiter says that the client waits for release notifications: a
	// refusal marks the holding waited for, and its release, extensions
	// and hand-over keep the mark (see Release).
	Waiter bool
	// From, when not empty, is a token of the same client handing the key
	// over: where the key is held by From (valid or expired, not evicted),
	// the acquisition proceeds as on a free key (the count is incremented)
	// and reports no previous holder. Elsewhere it changes nothing.
	From string
}

// AcquireReply is what a node answers to Acquire.
type AcquireReply struct {
	Acquired bool
	// Fence is the key's counter on this node after the increment.
	Fence uint64
	// HolderTTL is the remaining TTL of the current holder when not
	// Acquired; zero when unknown (no expiry, a tombstone, or a free key).
	HolderTTL time.Duration
	// Holder is ReleaseID of the holder's token when not Acquired (empty
	// for a tombstone): clients that split the votes between them agree
	// on who holds what without seeing each other's tokens.
	Holder string
	// Previous is, when Acquired by a new acquisition, the trail it
	// replaced if that was another token's: the holder before us, which
	// never released the key on this node (it expired, or was
	// force-released). Its Token is empty when there was none; its Fence
	// is that holder's fence as counted (or raised) on this node.
	Previous Holding
	// Standing is the node's standing when AcquireArgs.Recovery asked.
	Standing Standing
}

// ExtendArgs is one lock's extension in Node.Extend.
type ExtendArgs struct {
	Name      string
	Token     string
	TTL       time.Duration
	Fence     uint64        // raise the counter to this when re-asserting
	Retention time.Duration // counter expiry, reset by the extension; 0: DefaultRetention
	Owner     string        // written with a re-asserted key, as AcquireArgs.Owner
	At        time.Time     // written with a re-asserted key: the acquisition's time
}

// ExtendResult is what a node answers for one lock of Extend.
type ExtendResult int

const (
	// NotHeld: another token holds the key, or the token has a tombstone;
	// nothing changed.
	NotHeld ExtendResult = iota
	// Extended: the key held the token and its TTL was reset.
	Extended
	// Reasserted: the key was missing and was set again to the token.
	Reasserted
)

func (r ExtendResult) String() string {
	switch r {
	case Extended:
		return "extended"
	case Reasserted:
		return "reasserted"
	}
	return "not held"
}

// ReleaseArgs are the arguments of Node.Release.
type ReleaseArgs struct {
	Name      string
	Token     string
	Tombstone time.Duration // how long late requests of the token are refused; <= 0: none
	Channel   string        // where to announce the release; empty: nowhere
	// From are the tokens that handed the lock over to Token in a row
	// (each one's AcquireArgs.From), separated by spaces, if any: their
	// releases are announced too, since other clients' waiters saw those
	// tokens hold the key.
	From string
}

// Holding describes a key on one node.
type Holding struct {
	Token      string        // empty when free
	TTL        time.Duration // remaining TTL; zero when free or without expiry
	Fence      uint64        // the counter, also after the lock is gone; 0 if none
	Owner      string        // the holder's owner; empty when free or not recorded
	AcquiredAt time.Time     // the holder's acquisition time by its clock; zero if not recorded
	// Standing is the node's standing as it stands (Inspect changes
	// nothing): Known is false for a node that keeps no record.
	Standing Standing
}

// ScanArgs are the arguments of Node.Scan.
type ScanArgs struct {
	Cursor string // "" to start; then the previous page's Cursor
	Match  string // a Redis glob over full names (prefix included); "" matches all
	Count  int    // how much work one call does, a hint; 0: DefaultScanCount
}

// ScanPage is one page of Node.Scan.
type ScanPage struct {
	Names  []string
	Cursor string // "" when the scan is complete
}

// DefaultScanCount is the Count of a Scan that gives none (Redis's SCAN
// default is 10; larger pages save round trips).
const DefaultScanCount = 100

// ForceReleaseArgs are the arguments of Node.ForceRelease.
type ForceReleaseArgs struct {
	Name      string
	Token     string        // the evicted holder's, as Inspect reported it
	Fence     uint64        // the counter is raised to at least this
	Tombstone time.Duration // how long the evicted token's requests are refused; <= 0: none
	Channel   string        // where to announce the release; empty: nowhere
	Retention time.Duration // counter expiry; 0: DefaultRetention
}

// Identity is who a server is.
type Identity struct {
	// ID is unique per running server (Redis: run_id; a memory node: an
	// id drawn when it was created).
	ID string
	// Eviction is the server's maxmemory-policy ("noeviction" is the only
	// one that can never evict a lock key or counter).
	Eviction string
}

// ErrNotificationsUnsupported is returned by Subscribe of a node that cannot
// subscribe (a Redis node over a client without Pub/Sub).
var ErrNotificationsUnsupported = errors.New("node: cannot subscribe to release notifications")

// ReleaseID names one release in announcements without revealing the token
// (which would let any subscriber release the lock): the first 16 hex digits
// of the token's SHA-1, the same on every node.
func ReleaseID(token string) string {
	sum := sha1.Sum([]byte(token))
	return hex.EncodeToString(sum[:8])
}

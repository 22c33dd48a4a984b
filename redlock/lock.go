package redlock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/internal/unanswered"
	"github.com/quorumlock/quorumlock/node"
)

// Lock is one acquisition of a key, safe to share between goroutines. A nil
// *Lock (from a failed Acquire) is an ended lock: its methods do not panic,
// Release, Extend and Err wrap ErrLockLost, and Done is closed.
type Lock struct {
	client *Client
	key    string // as the caller named it
	name   string // on the nodes, prefix included
	token  string
	from   string // the tokens of this client's locks that handed the key over to it in a row, newest first, space-separated; "" if none
	fence  uint64

	owner      string               // WithOwner of the client
	acquiredAt time.Time            // the client's clock at the attempt, to the µs
	previous   node.Holding         // set before the lock is handed out; see TookOver
	sent       *unanswered.Requests // the token's requests per node; see Release

	op sync.Mutex // serializes Extend and Release

	mu         sync.RWMutex
	ttl        time.Duration
	validUntil time.Time // monotonic
	released   bool
	start      time.Time // monotonic: the winning attempt's start
	holdUntil  time.Time // HoldAtLeast: Release leaves the key until then

	life lifecycle // Done, Err, Context, KeepAlive; see loss.go
}

// lifecycle is the part of a Lock that tells its holder when it ends: the
// Done channel (the Done channel of an internal context cancelled with the
// cause), the timer that ends a lock whose validity runs out, and the
// watchdog registration of KeepAlive.
type lifecycle struct {
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu     sync.Mutex
	ended  bool
	expiry *time.Timer // ends the lock at ValidUntil; re-armed by every extension
	keep   func()      // stops auto-extension; nil when not kept
	unkept sync.Once   // reports the end of auto-extension once
}

// errNilLock is what the methods of a nil *Lock return.
var errNilLock = fmt.Errorf("%w: nil *Lock (the Acquire that returned it failed)", ErrLockLost)

// closedChan is the Done of a nil *Lock.
var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// Key is the lock's name as given to Acquire.
func (l *Lock) Key() string {
	if l == nil {
		return ""
	}
	return l.key
}

// Fence is larger than every earlier fence of the key while a majority keeps
// its data; across data loss too, if node clocks do not go back, the loss
// comes node.MaxSeedSkew after those fences, and the key is locked at most
// once a microsecond. Send it with every write; have the resource refuse a
// fence lower than one it has seen.
func (l *Lock) Fence() uint64 {
	if l == nil {
		return 0
	}
	return l.fence
}

// Owner is who took the lock (WithOwner), as the nodes record it.
func (l *Lock) Owner() string {
	if l == nil {
		return ""
	}
	return l.owner
}

// AcquiredAt is when the winning attempt started, by this process's clock
// (to the µs), as the nodes record it.
func (l *Lock) AcquiredAt() time.Time {
	if l == nil {
		return time.Time{}
	}
	return l.acquiredAt
}

// Info is what the nodes say about a lock: in the quorum view (Node is "")
// what a majority says, with each node's Info in Nodes.
type Info struct {
	Key        string        // without the client's prefix
	Node       string        // a node's Info: the node's name
	Held       bool          // one token holds the key on a majority (on the node)
	Holder     string        // the holder's node.ReleaseID, which hides its token
	Owner      string        // the holder's WithOwner; "" when not recorded
	AcquiredAt time.Time     // when the holder's winning attempt started, by its clock
	Fence      uint64        // the largest counter read: at least the holder's fence once it got the lock
	Remaining  time.Duration // how long a majority (the node) keeps the key
	Agree      bool          // every node answered, all the same
	Nodes      []Info        // per node, in the order given to New
	Err        error         // a node's Info: its failure
	Recovering time.Duration // a node's: how long it still sits out, having lost its data (0: it counts)
}

// TookOver reports the previous holder if it never released the key (it
// expired or was evicted), with a Fence below ours. Limits: a node that lost
// its data cannot report it; a release that missed nodes may be reported.
func (l *Lock) TookOver() (Info, bool) {
	if l == nil || l.previous.Token == "" {
		return Info{}, false
	}
	return Info{Key: l.key, Holder: node.ReleaseID(l.previous.Token), Owner: l.previous.Owner,
		AcquiredAt: l.previous.AcquiredAt, Fence: l.previous.Fence}, true
}

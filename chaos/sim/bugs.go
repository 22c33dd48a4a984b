package sim

import (
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
)

// Bug re-introduces one finding of the review that core v2 fixed, at the
// boundary the simulator controls (the servers and the links), so that the
// checker can show it finds it without a hook in the library. BugNone is
// the code as it is.
type Bug string

const (
	BugNone Bug = ""
	// BugNoTombstones: a release leaves no tombstone, as before core v2, so
	// an acquire or extend that lands after the release creates the key
	// again (orphan keys; a late extend re-creating a key).
	BugNoTombstones Bug = "no-tombstones"
	// BugAnySeed: a node starts a missing fence counter from whatever seed
	// the client sends, as the code before core v2 did with the client's
	// clock: a client whose clock is behind hands out smaller fences after
	// data loss (fence inversion with skewed clocks).
	BugAnySeed Bug = "any-seed"
	// BugAnonymousHolder: a node that refuses an acquire does not say who
	// holds the key, as before core v2, so a split vote (no client on a
	// majority) looks like "held by another" to everyone.
	BugAnonymousHolder Bug = "anonymous-holder"
	// BugMissedWakeup: a release announcement that reaches a client while
	// one of its acquire requests is in flight (to any node) is dropped,
	// which is what the client before core v2 did with it (it joined the
	// waiters after its first attempt): the waiter sleeps its retry delay
	// while the lock is free.
	BugMissedWakeup Bug = "missed-wakeup"

	// BugNoQuorum is the checker's own test, not a finding: each client
	// trusts a minority of the nodes, without drift, over an unfenced
	// register. Overlaps and lost updates must be reported.
	BugNoQuorum Bug = "no-quorum"
)

// Bugs lists the re-introduced findings, in the README's order.
var Bugs = []Bug{BugAnonymousHolder, BugNoTombstones, BugMissedWakeup, BugAnySeed}

// seedAnyway starts a missing counter of a.Name from a.Seed, whatever the
// node's clock says (BugAnySeed).
func seedAnyway(m *memnode.Node, a node.AcquireArgs) {
	h, err := m.Inspect(bg, a.Name)
	if err != nil || h.Fence != 0 || a.Seed < 2 {
		return
	}
	_, _ = m.RaiseFence(bg, a.Name, a.Token, a.Seed-1, a.Retention)
}

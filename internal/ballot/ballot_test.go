package ballot

import (
	"slices"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/node"
)

func refusal(i int, holder string, ttl time.Duration) quorum.Answer[node.AcquireReply] {
	return quorum.Answer[node.AcquireReply]{Node: i, Val: node.AcquireReply{Holder: holder, HolderTTL: ttl}}
}

// The leader is the holder with the most refusals, ties to the smallest
// release id, leaving out the tokens given up; HeldBy marks its nodes.
func TestLeaderLeavesOutUndone(t *testing.T) {
	t.Parallel()
	b := New(5, nil)
	b.Others = append(b.Others, refusal(0, "b", 0), refusal(1, "a", 0), refusal(3, "b", 0), refusal(4, "a", 0))
	if top, n := b.Leader(nil); top != "a" || n != 2 {
		t.Errorf("Leader(nil) = %q, %d; want a, 2", top, n)
	}
	if top, n := b.Leader([]string{"a"}); top != "b" || n != 2 {
		t.Errorf("Leader(a undone) = %q, %d; want b, 2", top, n)
	}
	if got, want := b.HeldBy(), []bool{true, true, false, true, true}; !slices.Equal(got, want) {
		t.Errorf("HeldBy = %v, want %v", got, want)
	}
}

// HolderWait: with three of five nodes held, one key must expire (the
// shortest); with two held (a split), the last; unknown TTLs give zero.
func TestHolderWait(t *testing.T) {
	t.Parallel()
	b := New(5, nil)
	b.Others = append(b.Others, refusal(0, "x", 3*time.Second), refusal(1, "x", time.Second), refusal(2, "x", 2*time.Second))
	if got := b.HolderWait(); got != time.Second {
		t.Errorf("three held: HolderWait = %s, want 1s", got)
	}
	b.Others = b.Others[:2]
	if got := b.HolderWait(); got != 3*time.Second {
		t.Errorf("two held: HolderWait = %s, want 3s", got)
	}
	b.Others[1].Val.HolderTTL = 0
	if got := b.HolderWait(); got != 0 {
		t.Errorf("unknown TTL: HolderWait = %s, want 0", got)
	}
}

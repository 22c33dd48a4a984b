package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/redlock/redlocktest"
)

func TestMemoryNodeConformance(t *testing.T) {
	redlocktest.RunNodeConformance(t, func(t *testing.T) redlock.Node { return redlock.NewMemoryNode("mem") })
}

// Expired locks that nobody asks about again are swept, so a memory node
// used with many distinct keys (NewLocal, the demo) does not grow forever.
func TestMemoryNodeSweepsExpiredKeys(t *testing.T) {
	n := redlock.NewMemoryNode("mem")
	ctx := context.Background()
	for i := range 3000 {
		if _, err := n.Acquire(ctx, fmt.Sprintf("short-%d", i), "tok", time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(5 * time.Millisecond)
	for i := range 3000 {
		if _, err := n.Acquire(ctx, fmt.Sprintf("long-%d", i), "tok", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if got := n.Len(); got > 3000+1024 { // at most one sweep interval of leftovers
		t.Fatalf("%d entries held after 3000 expired and 3000 live locks; expired ones were not swept", got)
	}
	if got := n.Len(); got < 3000 {
		t.Fatalf("%d entries: live locks were swept", got)
	}
}

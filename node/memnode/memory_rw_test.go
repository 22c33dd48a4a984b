package memnode_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
)

// Read-write state is bounded as the mutex's is: readers, writers and
// intents expire with their TTL, and the set of a name's readers goes
// with its last reader (synctest's clock).
func TestMemoryRWStateExpiresToZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := memnode.New("m")
		acq := func(mode node.Mode, name, token string, ttl time.Duration) node.AcquireReply {
			r, err := m.AcquireRW(ctx, mode, node.AcquireArgs{Name: name, Token: token, TTL: ttl, Retention: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		for i := range 1000 {
			name := fmt.Sprint("k", i)
			acq(node.Shared, name, "r1", time.Second)
			acq(node.Shared, name, "r2", 2*time.Second)
			if r := acq(node.Exclusive, name, "w", 3*time.Second); r.Acquired {
				t.Fatal("writer acquired under readers")
			}
		}
		// Per name: the readers, the intent, the counter the first reader
		// started.
		if n := m.Len(); n != 3000 {
			t.Fatalf("Len = %d, want 3000", n)
		}
		time.Sleep(3 * time.Second) // readers and intents expired; counters kept
		if n := m.Len(); n != 1000 {
			t.Fatalf("Len = %d, want 1000", n)
		}
		for i := range 1000 {
			acq(node.Exclusive, fmt.Sprint("k", i), "w2", time.Second)
		}
		if n := m.Len(); n != 2000 { // writers, counters
			t.Fatalf("Len = %d, want 2000", n)
		}
		time.Sleep(time.Hour + time.Second)
		if n := m.Len(); n != 0 {
			t.Fatalf("Len = %d, want 0", n)
		}
	})
}

package identity

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/node"
)

// An attempt whose answers come from several nodes that have not said who
// they are (every node restarted, say) identifies them as it reads their
// answers, one after another: it must wait for the slowest identify
// request, not for their sum.
func TestNowIdentifiesEveryUnknownNodeAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const each = 100 * time.Millisecond
		var firstContact atomic.Bool
		firstContact.Store(true)
		var mu sync.Mutex
		asked := map[int]int{}
		ask := func(_ context.Context, nodes []int, _ time.Duration) []quorum.Answer[node.Identity] {
			if firstContact.Load() {
				return nil // nobody answered at first contact
			}
			var out []quorum.Answer[node.Identity]
			for _, n := range nodes {
				mu.Lock()
				asked[n]++
				mu.Unlock()
				time.Sleep(each)
				out = append(out, quorum.Answer[node.Identity]{Node: n, Val: node.Identity{ID: fmt.Sprint("server-", n), Eviction: "noeviction"}})
			}
			return out
		}
		id := New(Config{Names: []string{"a", "b", "c"}, Logger: slog.New(slog.DiscardHandler), Ask: ask,
			Background: func(f func()) { go f() }, Invalid: func(format string, args ...any) error { return fmt.Errorf(format, args...) }})
		ctx := context.Background()
		if err := id.Ready(ctx, time.Second); err != nil {
			t.Fatal(err)
		}
		firstContact.Store(false)
		start := time.Now()
		for i := range 3 { // as an attempt reads three answers
			if ok, err := id.Now(ctx, i, time.Second); !ok || err != nil {
				t.Fatalf("node %d: counts %v, %v", i, ok, err)
			}
		}
		if d := time.Since(start); d != each {
			t.Errorf("identifying three nodes took %s, want %s: their requests at once", d, each)
		}
		for i := range 3 {
			if asked[i] != 1 {
				t.Errorf("node %d asked %d times, want once", i, asked[i])
			}
		}
		if !id.All() {
			t.Error("not every node identified")
		}
	})
}

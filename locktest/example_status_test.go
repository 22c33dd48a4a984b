package locktest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/locktest"
	"github.com/quorumlock/quorumlock/redlock"
)

var errStaleFence = errors.New("status: write refused, fence older than the last write's")

// statusStore is the resource the lock protects: it refuses a write whose
// fence is older than the newest it took (unless ignoreFences, the bug).
type statusStore struct {
	rec          *locktest.Recorder
	ignoreFences bool

	mu    sync.Mutex
	fence uint64
	value string
}

func (s *statusStore) write(who string, fence uint64, v string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fence < s.fence && !s.ignoreFences {
		return errStaleFence
	}
	s.fence, s.value = max(s.fence, fence), v
	s.rec.Wrote(who, "status", fence)
	return nil
}

// writeStatus is the code under test: it writes v under the lock, with the
// lock's fence. midway runs between taking the lock and writing.
func writeStatus(ctx context.Context, c *redlock.Client, s *statusStore, who, v string, midway func()) error {
	return c.Do(ctx, "status", 30*time.Second, func(ctx context.Context) error {
		l, _ := redlock.LockFromContext(ctx)
		midway()
		return s.write(who, l.Fence(), v)
	})
}

// A status writer whose lock is lost halfway through its write: another
// writer takes the lock and writes, and the late write is refused.
func Example_staleWrite() {
	t := locktest.NewSession(os.Stdout) // in a test: the *testing.T
	defer t.Close()
	q := locktest.NewQuorum(t, 3)
	a, b := q.Client(), q.Client()
	rec := locktest.NewRecorder()
	store := &statusStore{rec: rec}
	ctx := context.Background()

	err := writeStatus(ctx, a, store, "a", "stale", func() {
		q.ExpireNow("status") // a's lock is lost here
		fmt.Println("b:", writeStatus(ctx, b, store, "b", "fresh", func() {}))
	})
	fmt.Println("a refused:", errors.Is(err, errStaleFence))
	fmt.Println("status:", store.value)
	fmt.Println("violations:", len(rec.Violations()))
	// Output:
	// b: <nil>
	// a refused: true
	// status: fresh
	// violations: 0
}

// The same scenario with a store that ignores fences: the Recorder reports
// the stale write.
func TestStaleWriteOfBrokenStoreIsCaught(t *testing.T) {
	q := locktest.NewQuorum(t, 3)
	a, b := q.Client(), q.Client()
	rec := locktest.NewRecorder()
	store := &statusStore{rec: rec, ignoreFences: true}
	ctx := t.Context()
	_ = writeStatus(ctx, a, store, "a", "stale", func() {
		q.ExpireNow("status")
		if err := writeStatus(ctx, b, store, "b", "fresh", func() {}); err != nil {
			t.Fatal(err)
		}
	})
	if got := kinds(rec); len(got) != 1 || got[0] != "stale write" {
		t.Fatalf("violations %v, want one stale write\n%s", got, rec.Timeline())
	}
	t.Logf("caught as a user would see it:\n%s", rec.Report())
}

package lockdesc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/lockdesc"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
	"github.com/quorumlock/quorumlock/rwlock"
)

var _ lockdesc.RWLocker = (*rwlock.Client)(nil)

// With package rwlock as the RWLocker, on 3 real nodes: two shared locks of
// a resource are held together, an exclusive one is refused while they are,
// and taken once they are released; a shared one is then refused.
func TestSharedAndExclusiveThroughRWLock(t *testing.T) {
	cluster := redistest.StartT(t, 3)
	var nodes []node.Node
	for _, rc := range cluster.Clients() {
		nodes = append(nodes, redisnode.New(rc))
	}
	rw, err := rwlock.New(nodes, redlock.WithRetry(retry.Never()))
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	m, err := lockdesc.NewManager(redisClient(t, cluster), lockdesc.WithRWLocker(rw))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	read := lockdesc.Descriptor{Kind: lockdesc.Shared, Subject: "schema", Predicate: "access", Resources: []string{"tenant-123"}}
	write := read
	write.Kind = lockdesc.Exclusive
	r1, err := m.TryAcquire(ctx, read, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := m.TryAcquire(ctx, read, 10*time.Second)
	if err != nil {
		t.Fatalf("second reader: %v", err)
	}
	if _, err := m.TryAcquire(ctx, write, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("writer while readers hold: %v, want ErrNotAcquired", err)
	}
	_ = r1.Release(ctx)
	_ = r2.Release(ctx)
	w, err := m.TryAcquire(ctx, write, 10*time.Second)
	if err != nil {
		t.Fatalf("writer after the readers: %v", err)
	}
	if _, err := m.TryAcquire(ctx, read, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("reader while the writer holds: %v, want ErrNotAcquired", err)
	}
	_ = w.Release(ctx)
}

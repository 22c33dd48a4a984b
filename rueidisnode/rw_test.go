package rueidisnode_test

import (
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/rwlock"
)

// The read-write lock over rueidis nodes, and across node kinds: readers
// through rueidis and writers through go-redis (redisnode.Node) on the same
// servers exclude each other, since both run the same scripts.
func TestReadWriteAcrossNodeKinds(t *testing.T) {
	cl := redistest.StartT(t, 3)
	var goredis []node.Node
	for _, rc := range cl.Clients() {
		goredis = append(goredis, redisnode.New(rc))
	}
	opts := []redlock.Option{redlock.WithNodeTimeout(2 * time.Second)}
	viaRueidis, err := rwlock.New(nodesOf(t, cl), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = viaRueidis.Close() })
	viaGoRedis, err := rwlock.New(goredis, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = viaGoRedis.Close() })
	ctx, key := ctxWithin(t, hangGuard), uniqueKey(t)

	r, err := viaRueidis.TryRLock(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := viaGoRedis.TryLock(ctx, key, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("writer through go-redis while a reader through rueidis holds: %v, want ErrNotAcquired", err)
	}
	if err := r.Extend(ctx, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := viaGoRedis.TryLock(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := viaRueidis.TryRLock(ctx, key, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("reader through rueidis while a writer through go-redis holds: %v, want ErrNotAcquired", err)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r, err = viaRueidis.TryRLock(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.Fence() < w.Fence() {
		t.Fatalf("reader's fence %d below the last writer's %d", r.Fence(), w.Fence())
	}
	_ = r.Release(ctx)
}

package statuslock_test

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/statuslock"
)

// A status stuck in DEPLOYING can be traced to its process: each process's
// redlock client records its owner, and listing "status:*" shows which
// process holds which service's lock (and nothing else).
func TestListingShowsWhoHoldsEachStatusLock(t *testing.T) {
	cl, api := startNodes(t, 3, redlock.WithOwner("api-1 pid 101"))
	var nodes []node.Node
	for _, rc := range cl.Clients() {
		nodes = append(nodes, redisnode.New(rc))
	}
	worker, err := redlock.New(nodes, redlock.WithOwner("worker-7 pid 202"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = worker.Close() })
	ctx := ctxFor(t)
	store := statuslock.NewMemoryStore()
	billing, search := serviceID(t), serviceID(t)

	// The API set billing DEPLOYING and is stuck holding its lock; the
	// worker holds search's while it works.
	stuck, err := newLocker(t, api).Acquire(ctx, billing, statuslock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Release(context.Background())
	if err := store.Set(ctx, billing, statuslock.StatusDeploying, stuck.Fence()); err != nil {
		t.Fatal(err)
	}
	busy, err := newLocker(t, worker).Acquire(ctx, search, statuslock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Release(context.Background())
	// A lock of another kind, not listed.
	other, err := api.TryAcquire(ctx, "cron:"+billing, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release(context.Background())

	want := map[string]string{"status:" + billing: "api-1 pid 101", "status:" + search: "worker-7 pid 202"}
	got := map[string]string{}
	for info, err := range api.Locks(ctx, "status:*") {
		if err != nil {
			t.Fatal(err)
		}
		got[info.Key] = info.Owner
	}
	if len(got) != len(want) {
		t.Fatalf("status:* lists %v, want %v", got, want)
	}
	for k, owner := range want {
		if got[k] != owner {
			t.Fatalf("%s held by %q, want %q (listing %v)", k, got[k], owner, got)
		}
	}
}

package redlock_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/redlock"
)

// Locks lists exactly the keys that match and that a majority holds, among
// 10,000 other keys on each node: held keys that do not match, keys of
// another prefix, matching keys that were released (their counters and
// tombstones remain) and matching keys held on one node only.
func TestLocksListsMatchingHeldAmong10000(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	const prefix = "t[1]*:" // glob characters in the prefix must match literally
	c := newClient(t, nodesOf(cl), redlock.WithOwner("lister"), redlock.WithKeyPrefix(prefix))
	ctx := ctxFor(t)

	// 10,000 decoys on every node, written directly in the nodes' format:
	// held locks that do not match, and the matching keys under another
	// prefix.
	at := time.Now()
	for i, rc := range cl.Clients() {
		for batch := 0; batch < 10_000; batch += 1000 {
			pipe := rc.Pipeline()
			for j := batch; j < batch+1000; j++ {
				v := wire.LockValue(fmt.Sprintf("decoy%d", j), at, "decoy")
				pipe.Set(ctx, fmt.Sprintf("%s{batch:420:%d}", prefix, j), v, 5*time.Minute)
				pipe.Set(ctx, fmt.Sprintf("lock:{batch:42:%d}", j), v, 5*time.Minute)
				pipe.Set(ctx, fmt.Sprintf("%s{batch:42:%d}:fence", prefix, 100_000+j), "7", 5*time.Minute)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatalf("node %d: %v", i, err)
			}
		}
	}
	// Matching keys held on one node only: not held.
	for j := range 10 {
		v := wire.LockValue(fmt.Sprintf("minority%d", j), at, "minority")
		if err := cl.Clients()[0].Set(ctx, fmt.Sprintf("%s{batch:42:m%d}", prefix, j), v, 5*time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Matching keys acquired and released: free.
	for j := range 10 {
		l, err := c.TryAcquire(ctx, fmt.Sprintf("batch:42:r%d", j), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The ones to list.
	want := map[string]uint64{}
	for j := range 30 {
		key := fmt.Sprintf("batch:42:%d", j)
		if j == 29 {
			key = "batch:42:*star"
		}
		l, err := c.TryAcquire(ctx, key, 5*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(ctx)
		want[key] = l.Fence()
	}

	var got []string
	for info, err := range c.Locks(ctx, "batch:42:*") {
		if err != nil {
			t.Fatal(err)
		}
		fence, ok := want[info.Key]
		if !ok {
			t.Errorf("listed %q (owner %q), which is not a held matching key", info.Key, info.Owner)
			continue
		}
		if !info.Held || info.Owner != "lister" || info.Fence < fence || !info.Agree {
			t.Errorf("%s listed as %+v, want held by lister with fence >= %d", info.Key, info, fence)
		}
		got = append(got, info.Key)
	}
	slices.Sort(got)
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if fmt.Sprint(got) != fmt.Sprint(keys) {
		t.Fatalf("listed %d keys %q\nwant %d %q", len(got), got, len(keys), keys)
	}

	// A narrower pattern, and stopping early.
	n := 0
	for info, err := range c.Locks(ctx, `batch:42:\*st?r`) {
		if err != nil || info.Key != "batch:42:*star" {
			t.Fatalf("escaped pattern listed %+v, %v", info, err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("escaped pattern listed %d keys, want 1", n)
	}
	n = 0
	for range c.Locks(ctx, "batch:42:*") {
		if n++; n == 3 {
			break
		}
	}
}

// With one of three nodes silent Locks still lists every held key; with
// two silent it yields ErrQuorumUnreachable.
func TestLocksWithNodesDown(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	c := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(2*time.Second))
	ctx := ctxFor(t)
	for j := range 5 {
		// Not released: the servers go away with the test.
		if _, err := c.TryAcquire(ctx, fmt.Sprintf("down:%d", j), 5*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.Nodes()[2].Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Nodes()[2].Resume() })
	n := 0
	for info, err := range c.Locks(ctx, "down:*") {
		if err != nil || !info.Held || info.Agree {
			t.Fatalf("with a node silent: %+v, %v; want held, nodes disagreeing", info, err)
		}
		n++
	}
	if n != 5 {
		t.Fatalf("listed %d of 5 held keys with one node silent", n)
	}
	if err := cl.Nodes()[1].Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Nodes()[1].Resume() })
	var last error
	for _, err := range c.Locks(ctx, "down:*") {
		last = err
	}
	if !errors.Is(last, redlock.ErrQuorumUnreachable) {
		t.Fatalf("with two of three nodes silent: %v, want ErrQuorumUnreachable", last)
	}
}

package memnode_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/node/nodetest"
)

func TestMemoryConformance(t *testing.T) {
	nodetest.Run(t, func(t *testing.T) node.Node { return memnode.New("mem") })
}

func TestMemoryIdentityPerNode(t *testing.T) {
	ctx := t.Context()
	a, _ := memnode.New("a").Identify(ctx)
	b, _ := memnode.New("b").Identify(ctx)
	if a.ID == b.ID || a.Eviction != "noeviction" {
		t.Fatalf("identities %+v and %+v: want distinct IDs, noeviction", a, b)
	}
}

// Every call of a node that is down fails with ErrDown; wipe forgets
// locks, counters and tombstones as an empty restart does.
func TestMemorySetDown(t *testing.T) {
	ctx := t.Context()
	m := memnode.New("m")
	r, err := m.Acquire(ctx, node.AcquireArgs{Name: "k", Token: "a", TTL: time.Minute})
	if err != nil || !r.Acquired {
		t.Fatal(r, err)
	}
	if _, err := m.Release(ctx, node.ReleaseArgs{Name: "t", Token: "x", Tombstone: time.Minute}); err != nil {
		t.Fatal(err)
	}
	m.SetDown(true, false)
	_, errA := m.Acquire(ctx, node.AcquireArgs{Name: "k", Token: "b", TTL: time.Minute})
	_, errE := m.Extend(ctx, []node.ExtendArgs{{Name: "k", Token: "a", TTL: time.Minute}})
	_, errR := m.Release(ctx, node.ReleaseArgs{Name: "k", Token: "a"})
	_, errF := m.RaiseFence(ctx, "k", "a", 1, 0)
	_, errI := m.Inspect(ctx, "k")
	_, errID := m.Identify(ctx)
	for i, err := range []error{errA, errE, errR, errF, errI, errID} {
		if !errors.Is(err, memnode.ErrDown) {
			t.Fatalf("call %d on a down node: %v, want ErrDown", i, err)
		}
	}
	m.SetDown(false, false)
	if h, _ := m.Inspect(ctx, "k"); h.Token != "a" || h.Fence != r.Fence {
		t.Fatalf("after down without wipe: %+v", h)
	}
	if m.Len() != 4 {
		t.Fatalf("Len = %d, want 4 (lock, counter, trail, tombstone)", m.Len())
	}
	m.SetDown(true, true)
	m.SetDown(false, false)
	if h, _ := m.Inspect(ctx, "k"); h != (node.Holding{Standing: h.Standing}) || h.Standing.Voting || m.Len() != 0 {
		t.Fatalf("after a wipe: %+v, Len %d", h, m.Len())
	}
	if r, _ := m.Acquire(ctx, node.AcquireArgs{Name: "t", Token: "x", TTL: time.Minute}); !r.Acquired {
		t.Fatal("the wiped tombstone still refuses")
	}
}

// Locks, counters and tombstones all expire: state goes back to zero on
// the synctest clock, and the sweep keeps entries nobody asks about again
// from piling up.
func TestMemoryStateExpiresToZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := memnode.New("m")
		for i := range 3000 {
			name := fmt.Sprint("k", i)
			if _, err := m.Acquire(ctx, node.AcquireArgs{Name: name, Token: "a", TTL: time.Second, Retention: time.Hour}); err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 {
				if _, err := m.Release(ctx, node.ReleaseArgs{Name: name, Token: "a", Tombstone: time.Minute}); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Locks 1500, counters 3000, trails of the unreleased 1500,
		// tombstones 1500.
		if n := m.Len(); n != 1500+3000+1500+1500 {
			t.Fatalf("Len = %d, want 7500", n)
		}
		time.Sleep(2 * time.Second) // locks expired
		if n := m.Len(); n != 3000+1500+1500 {
			t.Fatalf("Len = %d, want 6000 (counters, trails, tombstones)", n)
		}
		time.Sleep(time.Minute) // tombstones expired
		if n := m.Len(); n != 3000+1500 {
			t.Fatalf("Len = %d, want 4500 (counters, trails)", n)
		}
		time.Sleep(time.Hour)
		if n := m.Len(); n != 0 {
			t.Fatalf("Len = %d, want 0", n)
		}
	})
}

// Entries that expire and are never asked about again are swept as new
// ones are written, without Len: the node's memory stays bounded.
func TestMemorySweepBoundsMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := memnode.New("m")
		for round := range 20 {
			for i := range 1000 {
				name := fmt.Sprint("r", round, "k", i)
				a := node.AcquireArgs{Name: name, Token: "a", TTL: time.Millisecond, Retention: time.Millisecond}
				if _, err := m.Acquire(ctx, a); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(time.Second)
		}
		// Each acquisition writes 3 entries (lock, counter, trail): at
		// most about two rounds' worth stay.
		if n := memnode.MemoryEntries(m); n > 6*1024 {
			t.Fatalf("%d entries kept after 20000 expired acquisitions", n)
		}
	})
}

// Subscriptions follow SetDown: down with ErrDown, then up again.
func TestMemorySubscriptionFollowsSetDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memnode.New("m")
		var states []string
		stop, err := m.Subscribe(context.Background(), "ch", func(string, string) {}, func(up bool, err error) {
			states = append(states, fmt.Sprint(up, errors.Is(err, memnode.ErrDown)))
		})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		m.SetDown(true, true)
		m.SetDown(true, false) // no change, no report
		m.SetDown(false, false)
		stop()
		m.SetDown(true, false)
		if got := fmt.Sprint(states); got != "[true false false true true false]" {
			t.Fatalf("states = %s", got)
		}
	})
}

// The error of a down node keeps its old name in package node: code that
// checks node.ErrDown still matches.
func TestErrDownKeepsItsOldName(t *testing.T) {
	//lint:ignore SA1019 the old name is what this checks
	if old := node.ErrDown; memnode.ErrDown != old {
		t.Fatal("memnode.ErrDown is not node.ErrDown")
	}
}

package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/redis/go-redis/v9"
)

// stepMarkerBack emulates a step back by d of n's clock, as far as the
// marker of name can tell: it moves the marker's recorded times (since
// and touched) d ahead of the clock, keeping its TTL.
func stepMarkerBack(t *testing.T, n *redistest.Node, name string, d time.Duration) {
	t.Helper()
	ctx := ctxFor(t)
	key := wire.MarkerKey(name)
	v, err := n.Client().Get(ctx, key).Result()
	if err != nil {
		t.Fatalf("marker of %s: %v", name, err)
	}
	f := strings.Fields(v) // "since creator touched stale keep"
	if len(f) != 5 {
		t.Fatalf("marker of %s is %q, want 5 fields", name, v)
	}
	for _, i := range []int{0, 2} {
		us, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			t.Fatalf("marker of %s is %q: %v", name, v, err)
		}
		f[i] = strconv.FormatInt(us+d.Microseconds(), 10)
	}
	if err := n.Client().SetArgs(ctx, key, strings.Join(f, " "), redis.SetArgs{KeepTTL: true}).Err(); err != nil {
		t.Fatal(err)
	}
}

// The keeper of a held key, beside two nodes that lost it, has its server
// clock step back (by 5s, by an hour): its marker, now from the future,
// still proves it kept its data, and a competitor is refused while the
// holder is valid, before and after the clock reaches the marker's times
// again.
func TestKeeperClockStepBackKeepsHeldLockExclusive(t *testing.T) {
	t.Parallel()
	for _, step := range []time.Duration{5 * time.Second, time.Hour} {
		t.Run(step.String(), func(t *testing.T) {
			t.Parallel()
			const ttl, period, timeout = 10 * time.Second, 10 * time.Second, 250 * time.Millisecond
			cl := redistest.StartT(t, 3)
			opts := []redlock.Option{redlock.WithNodeTimeout(timeout), redlock.WithRecoveryPeriod(period)}
			holder := newClient(t, nodesOf(cl), opts...)
			competitor := newClient(t, nodesOf(cl), opts...)
			ctx, key := ctxFor(t), uniqueKey(t)
			name := "lock:{" + key + "}"
			nodes := cl.Nodes()
			l, err := holder.TryAcquire(ctx, key, ttl)
			if err != nil {
				t.Fatal(err)
			}
			valid := time.Now().Add(ttl - time.Second) // the holder's validity, with a margin
			waitMarkerOlder(t, nodes[2], name, timeout+100*time.Millisecond)
			for _, i := range []int{0, 1} {
				if err := nodes[i].Client().FlushAll(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			}
			refused := func(when string) {
				t.Helper()
				l2, err := competitor.TryAcquire(ctx, key, ttl)
				if time.Now().After(valid) {
					t.Fatalf("%s: the holder's validity ran out before the attempt was decided", when)
				}
				if err == nil {
					_ = l2.Release(ctx)
					t.Fatalf("%s: a competitor acquired while the holder is valid (%v left)", when, l.Remaining())
				}
				if !errors.Is(err, redlock.ErrNotAcquired) {
					t.Fatalf("%s: competitor: %v, want ErrNotAcquired", when, err)
				}
			}
			refused("after the flush")
			stepMarkerBack(t, nodes[2], name, step)
			refused("after the keeper's clock stepped back")
			refused("again")
			if step < ttl {
				// The clock reaches the marker's old times again.
				if err := sleepCtx(ctx, step+200*time.Millisecond); err != nil {
					t.Fatal(err)
				}
				refused("once the keeper's clock passed the marker's old times")
			}
		})
	}
}

// The same on memory nodes, whose clock really steps back.
func TestKeeperClockStepBackKeepsHeldLockExclusiveMemory(t *testing.T) {
	t.Parallel()
	for _, step := range []time.Duration{5 * time.Second, time.Hour} {
		t.Run(step.String(), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				const ttl, period, timeout = 10 * time.Second, 10 * time.Second, 250 * time.Millisecond
				ms := []*memnode.Node{memnode.New("a"), memnode.New("b"), memnode.New("c")}
				nodes := []node.Node{ms[0], ms[1], ms[2]}
				opts := []redlock.Option{redlock.WithNodeTimeout(timeout), redlock.WithRecoveryPeriod(period)}
				holder := newClient(t, nodes, opts...)
				competitor := newClient(t, nodes, opts...)
				ctx := context.Background()
				l, err := holder.TryAcquire(ctx, "k", ttl)
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				time.Sleep(time.Second) // the markers age past the slack
				for _, m := range ms[:2] {
					m.SetDown(true, true)
					m.SetDown(false, false)
				}
				refused := func(when string) {
					t.Helper()
					l2, err := competitor.TryAcquire(ctx, "k", ttl)
					if err == nil {
						_ = l2.Release(ctx)
						t.Fatalf("%s: a competitor acquired %s after the holder, TTL %s", when, time.Since(start), ttl)
					}
					if !errors.Is(err, redlock.ErrNotAcquired) {
						t.Fatalf("%s: competitor: %v, want ErrNotAcquired", when, err)
					}
				}
				refused("after the wipe")
				time.Sleep(time.Second)
				ms[2].SetClockOffset(-step)
				for time.Since(start) < ttl-time.Second {
					refused(fmt.Sprintf("%s after the keeper's clock stepped back", time.Since(start)))
					time.Sleep(500 * time.Millisecond)
				}
				_ = l.Release(ctx)
			})
		})
	}
}

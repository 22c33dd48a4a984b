package redisnode_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
)

// A marker written before touches were recorded ("since" or "since
// creator") reports its touch unknown, keeps its age and creator, and
// records the touch from the next acquire on.
func TestRedisMarkerWithoutTouchTime(t *testing.T) {
	c := newClient(t, redistest.StartT(t, 1).Addrs()[0])
	ctx := ctxFor(t)
	now, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	since := now.Add(-time.Minute).UnixMicro()
	n := redisnode.New(c)
	for _, old := range []string{fmt.Sprint(since), fmt.Sprintf("%d 42", since)} {
		name := "lock:{" + old + "}"
		if err := c.Set(ctx, wire.MarkerKey(name), old, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		if h, err := n.Inspect(ctx, name); err != nil || !h.DataAgeKnown || h.DataTouchedKnown {
			t.Fatalf("inspect of marker %q = %+v, %v: want its age, the touch unknown", old, h, err)
		}
		r, err := n.Acquire(ctx, node.AcquireArgs{Name: name, Token: "a", TTL: time.Minute, At: time.Now()})
		if err != nil || r.DataTouchedKnown || r.DataAge < time.Minute {
			t.Fatalf("acquire over marker %q = %+v, %v: want its age (a minute or more), the touch unknown", old, r, err)
		}
		r, err = n.Acquire(ctx, node.AcquireArgs{Name: name, Token: "b", TTL: time.Minute})
		if err != nil || !r.DataTouchedKnown || r.DataTouchedAge >= time.Minute || r.DataAge < time.Minute {
			t.Fatalf("the next acquire over marker %q = %+v, %v: want the first acquire's touch, the same age", old, r, err)
		}
	}
}

// Acquires and extensions of a busy key leave its marker as written, when
// the marker's touch is within an eighth of the marker retention: no SET
// per call.
func TestRedisMarkerNotRewrittenPerCall(t *testing.T) {
	c := newClient(t, redistest.StartT(t, 1).Addrs()[0])
	ctx := ctxFor(t)
	n := redisnode.New(c)
	name := "lock:{busy}"
	acquire := func(token string) node.AcquireReply {
		r, err := n.Acquire(ctx, node.AcquireArgs{Name: name, Token: token, TTL: time.Minute, MarkerRetention: time.Hour})
		if err != nil || !r.Acquired {
			t.Fatalf("acquire %s = %+v, %v", token, r, err)
		}
		return r
	}
	acquire("first")
	if _, err := n.Release(ctx, node.ReleaseArgs{Name: name, Token: "first"}); err != nil {
		t.Fatal(err)
	}
	written, err := c.Get(ctx, wire.MarkerKey(name)).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		token := fmt.Sprint("t", i)
		r := acquire(token)
		res, err := n.Extend(ctx, []node.ExtendArgs{{Name: name, Token: token, TTL: time.Minute, Fence: r.Fence, MarkerRetention: time.Hour}})
		if err != nil || res[0] != node.Extended {
			t.Fatalf("extend = %v, %v", res, err)
		}
		if _, err := n.Release(ctx, node.ReleaseArgs{Name: name, Token: token}); err != nil {
			t.Fatal(err)
		}
	}
	if now, err := c.Get(ctx, wire.MarkerKey(name)).Result(); err != nil || now != written {
		t.Fatalf("marker after 5 cycles = %q, %v: want it as the first acquire wrote it, %q", now, err, written)
	}
}

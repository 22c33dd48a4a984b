package rueidisnode_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/nodetest"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/rueidisnode"
)

// The rueidis node passes the node contract on a real redis-server.
func TestConformance(t *testing.T) {
	c := newRueidis(t, redistest.StartT(t, 1).Addrs()[0])
	nodetest.Run(t, func(t *testing.T) node.Node { return rueidisnode.New(c) })
}

func TestName(t *testing.T) {
	cl := redistest.StartT(t, 1)
	c := newRueidis(t, cl.Addrs()[0])
	if got := rueidisnode.New(c).Name(); got != cl.Addrs()[0] {
		t.Fatalf("Name() = %q, want the address %q", got, cl.Addrs()[0])
	}
	if got := rueidisnode.New(c, rueidisnode.WithName("n1")).Name(); got != "n1" {
		t.Fatalf("Name() = %q, want n1", got)
	}
}

// Both nodes of one server report its identity.
func TestIdentifySameAsRedisNode(t *testing.T) {
	cl := redistest.StartT(t, 1)
	ctx := ctxFor(t)
	a, err := rueidisnode.New(newRueidis(t, cl.Addrs()[0])).Identify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := redisnode.New(cl.Clients()[0]).Identify(ctx)
	if err != nil || a != b || a.Eviction != "noeviction" {
		t.Fatalf("rueidis %+v, go-redis %+v, %v", a, b, err)
	}
}

// The node runs redisnode.Node's scripts verbatim: a lock taken through the
// go-redis node is seen, extended and released through the rueidis node,
// and the other way round, and both find each other's scripts cached.
func TestSameScriptsAsRedisNode(t *testing.T) {
	cl := redistest.StartT(t, 1)
	ctx := ctxFor(t)
	gr := redisnode.New(cl.Clients()[0])
	ru := rueidisnode.New(newRueidis(t, cl.Addrs()[0]))
	name := uniqueKey(t)
	a, err := gr.Acquire(ctx, node.AcquireArgs{Name: name, Token: "tok", TTL: time.Second})
	if err != nil || !a.Acquired {
		t.Fatalf("go-redis acquire = %+v, %v", a, err)
	}
	if h, err := ru.Inspect(ctx, name); err != nil || h.Token != "tok" || h.Fence != a.Fence {
		t.Fatalf("rueidis inspect = %+v, %v; want tok with fence %d", h, err, a.Fence)
	}
	res, err := ru.Extend(ctx, []node.ExtendArgs{{Name: name, Token: "tok", TTL: 3 * time.Second, Fence: a.Fence}})
	if err != nil || res[0] != node.Extended {
		t.Fatalf("rueidis extend = %v, %v", res, err)
	}
	if ok, err := ru.Release(ctx, node.ReleaseArgs{Name: name, Token: "tok", Tombstone: time.Minute}); err != nil || !ok {
		t.Fatalf("rueidis release = %v, %v", ok, err)
	}
	if r, err := gr.Acquire(ctx, node.AcquireArgs{Name: name, Token: "tok", TTL: time.Second}); err != nil || r.Acquired {
		t.Fatalf("go-redis acquire of a token released through rueidis = %+v, %v; want refused", r, err)
	}
	b, err := ru.Acquire(ctx, node.AcquireArgs{Name: name, Token: "tok2", TTL: time.Second})
	if err != nil || !b.Acquired || b.Fence != a.Fence+1 {
		t.Fatalf("rueidis acquire = %+v, %v; want fence %d", b, err, a.Fence+1)
	}
	if ok, err := gr.Release(ctx, node.ReleaseArgs{Name: name, Token: "tok2"}); err != nil || !ok {
		t.Fatalf("go-redis release = %v, %v", ok, err)
	}
	s := wire.Scripts()
	var shas []string
	for _, src := range []string{s.Acquire, s.Extend, s.Release, s.Inspect} {
		sum := sha1.Sum([]byte(src))
		shas = append(shas, hex.EncodeToString(sum[:]))
	}
	exists, err := cl.Clients()[0].ScriptExists(ctx, shas...).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range exists {
		if !ok {
			t.Fatalf("script %d (%s) not cached under the SHA-1 of its text", i, shas[i])
		}
	}
}

// A server that lost its script cache still extends a whole batch: the
// batch is sent again with EVAL.
func TestExtendAfterScriptFlush(t *testing.T) {
	cl := redistest.StartT(t, 1)
	ctx := ctxFor(t)
	rc := newRueidis(t, cl.Addrs()[0])
	n := rueidisnode.New(rc)
	mine, missing := uniqueKey(t), uniqueKey(t)
	if _, err := n.Acquire(ctx, node.AcquireArgs{Name: mine, Token: "a", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := rc.Do(ctx, rc.B().ScriptFlush().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	res, err := n.Extend(ctx, []node.ExtendArgs{
		{Name: mine, Token: "a", TTL: time.Minute},
		{Name: missing, Token: "a", TTL: time.Minute},
	})
	if err != nil || len(res) != 2 || res[0] != node.Extended || res[1] != node.Reasserted {
		t.Fatalf("extend after SCRIPT FLUSH = %v, %v", res, err)
	}
}

// The subscription delivers a release with its id, reports down when its
// node dies and up again after the restart, and stop ends it.
func TestSubscriptionBreaksAndRecovers(t *testing.T) {
	cl := redistest.StartT(t, 1)
	n := rueidisnode.New(newRueidis(t, cl.Addrs()[0]))
	ctx := ctxFor(t)
	const channel = "test:released"
	type state struct {
		up  bool
		err error
	}
	states := make(chan state, 16)
	releases := make(chan [2]string, 16)
	stop, err := n.Subscribe(context.Background(), channel,
		func(name, id string) { releases <- [2]string{name, id} },
		func(up bool, err error) { states <- state{up, err} })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	expect := func(up bool) {
		t.Helper()
		select {
		case s := <-states:
			if s.up != up {
				t.Fatalf("state up=%v (%v), want up=%v", s.up, s.err, up)
			}
			if !up && s.err == nil {
				t.Fatal("down without a cause")
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no state change to up=%v", up)
		}
	}
	announce := func() {
		t.Helper()
		name := uniqueKey(t)
		if _, err := n.Acquire(ctx, node.AcquireArgs{Name: name, Token: "tok", TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		// A waiter's attempt changes nothing; the release is announced anyway.
		if r, err := n.Acquire(ctx, node.AcquireArgs{Name: name, Token: "waiter", TTL: time.Minute, Waiter: true}); err != nil || r.Acquired {
			t.Fatalf("waiter's acquire = %+v, %v", r, err)
		}
		if ok, err := n.Release(ctx, node.ReleaseArgs{Name: name, Token: "tok", Channel: channel}); err != nil || !ok {
			t.Fatalf("release = %v, %v", ok, err)
		}
		select {
		case r := <-releases:
			if r[0] != name || r[1] != node.ReleaseID("tok") {
				t.Fatalf("announcement %q, want %q with id %s", r, name, node.ReleaseID("tok"))
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no announcement")
		}
	}
	expect(true)
	announce()
	if err := cl.Nodes()[0].Kill(); err != nil {
		t.Fatal(err)
	}
	expect(false)
	if err := cl.Nodes()[0].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	for up := false; !up; { // down again for each failed resubscription, then up
		select {
		case s := <-states:
			up = s.up
		case <-time.After(30 * time.Second):
			t.Fatal("subscription not restored")
		}
	}
	// rueidis meets its dead connections one call at a time before it has
	// redialled them all: wait for a run of answers, not the first one.
	await(t, "the restarted node to answer", 30*time.Second, func() bool {
		for range 20 {
			if _, err := n.Inspect(ctx, uniqueKey(t)); err != nil {
				return false
			}
		}
		return true
	})
	announce()
	stop()
	stop() // idempotent
}

// A call against a paused server ends at its context's deadline.
func TestDeadlineOnPausedNode(t *testing.T) {
	cl := redistest.StartT(t, 1)
	n := rueidisnode.New(newRueidis(t, cl.Addrs()[0]))
	if _, err := n.Inspect(ctxFor(t), uniqueKey(t)); err != nil {
		t.Fatal(err)
	}
	if err := cl.Nodes()[0].Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cl.Nodes()[0].Resume() }()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := n.Acquire(ctx, node.AcquireArgs{Name: uniqueKey(t), Token: "tok", TTL: time.Second})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire on a paused node: %v, want DeadlineExceeded", err)
	}
}

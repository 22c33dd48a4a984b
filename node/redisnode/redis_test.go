package redisnode_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/nodetest"
	"github.com/quorumlock/quorumlock/node/redisnode"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// The Redis node over a *redis.Client (pipelined extend, INFO, Pub/Sub).
func TestRedisConformance(t *testing.T) {
	c := newClient(t, redistest.StartT(t, 1).Addrs()[0])
	nodetest.Run(t, func(t *testing.T) node.Node { return redisnode.New(c) })
}

// scripterOnly hides everything of a client but redis.Scripter: no
// pipeline (one call per extend op), no INFO (Identify runs a script), no
// Pub/Sub.
type scripterOnly struct{ redis.Scripter }

func TestRedisScripterOnlyConformance(t *testing.T) {
	c := newClient(t, redistest.StartT(t, 1).Addrs()[0])
	nodetest.Run(t, func(t *testing.T) node.Node { return redisnode.NewNamed("bare", scripterOnly{c}) })
}

// On a cluster-enabled server, through a ClusterClient: every script gets
// all its keys, which share the slot of the braces, so none fails with
// CROSSSLOT, and the pipelined extend is split by slot.
func TestRedisClusterConformance(t *testing.T) {
	cl := redistest.StartClusterModeT(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { _ = c.Close() })
	nodetest.Run(t, func(t *testing.T) node.Node { return redisnode.NewNamed("cluster", c) })
}

func TestRedisName(t *testing.T) {
	addr := redistest.StartT(t, 1).Addrs()[0]
	if got := redisnode.New(newClient(t, addr)).Name(); got != addr {
		t.Fatalf("Name() = %q, want %q", got, addr)
	}
	if got := redisnode.NewNamed("n1", newClient(t, addr)).Name(); got != "n1" {
		t.Fatalf("Name() = %q, want n1", got)
	}
}

// One server reached under two names is one identity; another server is
// another.
func TestRedisIdentifySameServer(t *testing.T) {
	cl := redistest.StartT(t, 2)
	ctx := ctxFor(t)
	port := cl.Addrs()[0][strings.LastIndex(cl.Addrs()[0], ":"):]
	var ids []node.Identity
	for _, n := range []node.Node{
		redisnode.New(newClient(t, "127.0.0.1"+port)),
		redisnode.New(newClient(t, "localhost"+port)),
		redisnode.NewNamed("bare", scripterOnly{newClient(t, "localhost"+port)}),
		redisnode.New(newClient(t, cl.Addrs()[1])),
	} {
		id, err := n.Identify(ctx)
		if err != nil {
			t.Fatalf("%s: %v", n.Name(), err)
		}
		ids = append(ids, id)
	}
	if ids[0] != ids[1] || ids[0] != ids[2] || ids[0].Eviction != "noeviction" {
		t.Fatalf("one server identified as %+v, %+v, %+v", ids[0], ids[1], ids[2])
	}
	if ids[3].ID == ids[0].ID {
		t.Fatalf("two servers share the ID %q", ids[0].ID)
	}
}

func TestRedisIdentifyEviction(t *testing.T) {
	cl := redistest.StartTWithOptions(t, 1, redistest.Options{ExtraArgs: []string{"--maxmemory-policy", "allkeys-lru"}})
	c := newClient(t, cl.Addrs()[0])
	for _, n := range []node.Node{redisnode.New(c), redisnode.NewNamed("bare", scripterOnly{c})} {
		id, err := n.Identify(ctxFor(t))
		if err != nil || id.Eviction != "allkeys-lru" {
			t.Fatalf("%s: identify = %+v, %v; want allkeys-lru", n.Name(), id, err)
		}
	}
}

// failLoad is a client whose SCRIPT LOAD fails, so that a batch that met
// NOSCRIPT must fall back to EVAL.
type failLoad struct{ *redis.Client }

func (f failLoad) ScriptLoad(ctx context.Context, _ string) *redis.StringCmd {
	cmd := redis.NewStringCmd(ctx)
	cmd.SetErr(errors.New("load refused by the test"))
	return cmd
}

// A server that lost its script cache (restarted, SCRIPT FLUSH) still
// extends a whole batch in one call: reload and EVALSHA, or EVAL.
func TestRedisExtendAfterScriptFlush(t *testing.T) {
	c := newClient(t, redistest.StartT(t, 1).Addrs()[0])
	ctx := ctxFor(t)
	for _, n := range []*redisnode.Node{redisnode.New(c), redisnode.NewNamed("failload", failLoad{c})} {
		a, err := n.Acquire(ctx, node.AcquireArgs{Name: "k{" + n.Name() + "}", Token: "a", TTL: time.Minute})
		if err != nil || !a.Acquired {
			t.Fatal(a, err)
		}
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		ops := []node.ExtendArgs{
			{Name: "k{" + n.Name() + "}", Token: "a", TTL: time.Minute},
			{Name: "m{" + n.Name() + "}", Token: "a", TTL: time.Minute},
		}
		res, err := n.Extend(ctx, ops)
		if err != nil || len(res) != 2 || res[0] != node.Extended || res[1] != node.Reasserted {
			t.Fatalf("%s: extend after SCRIPT FLUSH = %v, %v", n.Name(), res, err)
		}
	}
}

// An error of the server fails the whole batch.
func TestRedisExtendErrorFailsBatch(t *testing.T) {
	c := newClient(t, redistest.StartT(t, 1).Addrs()[0])
	ctx := ctxFor(t)
	if err := c.HSet(ctx, "wrongtype", "f", "x").Err(); err != nil { // not a string: the script's GET errs
		t.Fatal(err)
	}
	n := redisnode.New(c)
	res, err := n.Extend(ctx, []node.ExtendArgs{
		{Name: "ok", Token: "a", TTL: time.Minute},
		{Name: "wrongtype", Token: "a", TTL: time.Minute, Fence: 5},
	})
	if err == nil || res != nil {
		t.Fatalf("extend with a failing op = %v, %v; want an error", res, err)
	}
}

// The cluster-enabled server does refuse keys of two slots in one script:
// the conformance run above would have caught a script that got a key
// outside the lock's braces.
func TestRedisClusterRefusesCrossSlot(t *testing.T) {
	cl := redistest.StartClusterModeT(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { _ = c.Close() })
	err := c.Eval(ctxFor(t), "return 1", []string{"lock:{a}", "lock:{b}"}).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("script over two slots: %v, want CROSSSLOT", err)
	}
}

func TestRedisSubscribeUnsupported(t *testing.T) {
	c := newClient(t, redistest.StartT(t, 1).Addrs()[0])
	_, err := redisnode.NewNamed("bare", scripterOnly{c}).Subscribe(ctxFor(t), "ch", func(string, string) {}, func(bool, error) {})
	if !errors.Is(err, node.ErrNotificationsUnsupported) {
		t.Fatalf("subscribe over a bare Scripter: %v", err)
	}
}

// The subscription reports down when its server dies, up again after the
// restart, and then delivers releases again.
func TestRedisSubscriptionBreaksAndRecovers(t *testing.T) {
	cl := redistest.StartT(t, 1)
	c := newClient(t, cl.Addrs()[0])
	n := redisnode.New(c)
	ctx := ctxFor(t)
	const channel = "test:released"
	type state struct {
		up  bool
		err error
	}
	states := make(chan state, 64)
	releases := make(chan [2]string, 16)
	stop, err := n.Subscribe(context.Background(), channel,
		func(name, id string) { releases <- [2]string{name, id} },
		func(up bool, err error) { states <- state{up, err} })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	waitState := func(up bool) {
		t.Helper()
		for {
			select {
			case s := <-states:
				if !s.up && s.err == nil {
					t.Fatal("down without a cause")
				}
				if s.up == up {
					return
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("no state change to up=%v", up)
			}
		}
	}
	announce := func() {
		t.Helper()
		name := "k{" + time.Now().String() + "}"
		for { // the command connection may need a redial after the restart
			_, err := n.Acquire(ctx, node.AcquireArgs{Name: name, Token: "tok", TTL: time.Minute})
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
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
	waitState(true)
	announce()
	if err := cl.Nodes()[0].Kill(); err != nil {
		t.Fatal(err)
	}
	waitState(false)
	if err := cl.Nodes()[0].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	waitState(true)
	announce()
	stop()
	stop()
}

// noRunID is a client over a real server whose INFO answers as miniredis
// does: no server section.
type noRunID struct{ *redis.Client }

func (c noRunID) Info(ctx context.Context, section ...string) *redis.StringCmd {
	cmd := redis.NewStringCmd(ctx, "info")
	cmd.SetErr(redisReplyError("section (server) is not supported"))
	return cmd
}

type redisReplyError string

func (e redisReplyError) Error() string { return string(e) }
func (redisReplyError) RedisError()     {}

// A server without run_id is identified by an id stored on it once: the
// same under two names and on every call, another on another server.
func TestRedisIdentifyWithoutRunID(t *testing.T) {
	cl := redistest.StartT(t, 2)
	ctx := ctxFor(t)
	port := cl.Addrs()[0][strings.LastIndex(cl.Addrs()[0], ":"):]
	var ids []node.Identity
	for _, n := range []node.Node{
		redisnode.New(noRunID{newClient(t, "127.0.0.1"+port)}),
		redisnode.New(noRunID{newClient(t, "localhost"+port)}),
		redisnode.New(noRunID{newClient(t, "localhost"+port)}),
		redisnode.New(noRunID{newClient(t, cl.Addrs()[1])}),
	} {
		id, err := n.Identify(ctx)
		if err != nil {
			t.Fatalf("%s: %v", n.Name(), err)
		}
		ids = append(ids, id)
	}
	if ids[0].ID == "" || ids[0] != ids[1] || ids[0] != ids[2] || ids[0].Eviction != "unknown" {
		t.Fatalf("one server identified as %+v, %+v, %+v", ids[0], ids[1], ids[2])
	}
	if ids[3].ID == ids[0].ID {
		t.Fatalf("two servers share the ID %q", ids[0].ID)
	}
}

// The node's record is lost with its data: after FLUSHALL the node learns
// from zero, whatever it was before; a record it cannot read (written by
// someone else) reads as lost, never as voting.
func TestRedisStandingIsLostWithTheData(t *testing.T) {
	c := newClient(t, redistest.StartTWithOptions(t, 1, redistest.Options{Fresh: true}).Addrs()[0])
	ctx, name := ctxFor(t), "lock:{standing}"
	n := redisnode.New(c)
	learn := func(promote string) node.Standing {
		t.Helper()
		s, err := n.Learn(ctx, node.LearnArgs{Name: name, Recovery: time.Hour, Promote: promote})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := learn("")
	if !s.Known || s.Voting || s.Scope != wire.NodeRecordKey {
		t.Fatalf("a new server = %+v, want learning under %q", s, wire.NodeRecordKey)
	}
	if s := learn(s.ID); !s.Voting {
		t.Fatalf("promoted = %+v", s)
	}
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if s := learn(""); s.Voting || s.Learned != 0 {
		t.Fatalf("after FLUSHALL = %+v, want learning from zero", s)
	}
	if err := c.Set(ctx, wire.NodeRecordKey, "V but not quite", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if s := learn(""); s.Voting || s.Learned != 0 {
		t.Fatalf("over an unreadable record = %+v, want learning from zero", s)
	}
}

// The Lua counts a learner's period in steps of at most node.LearnStep, by
// the server's own clock: a last step an hour in the past (the clock
// stepped forward since) adds a second, one in the future (it stepped
// back) adds nothing. The record's last step is moved, as a step of the
// server's clock would move it relative to now.
func TestRedisLearnerStepsAtMostASecond(t *testing.T) {
	c := newClient(t, redistest.StartTWithOptions(t, 1, redistest.Options{Fresh: true}).Addrs()[0])
	ctx, name := ctxFor(t), "lock:{steps}"
	n := redisnode.New(c)
	for _, tc := range []struct {
		what  string
		shift time.Duration // the last step, from the server's now
		max   time.Duration // what the call may add
	}{
		{"the clock stepped forward an hour", -time.Hour, node.LearnStep},
		{"the clock stepped back an hour", time.Hour, 0},
	} {
		now, err := c.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		last := now.Add(tc.shift).UnixMicro()
		if err := c.Set(ctx, wire.NodeRecordKey, fmt.Sprintf("L 7 5000000 %d", last), 0).Err(); err != nil {
			t.Fatal(err)
		}
		s, err := n.Learn(ctx, node.LearnArgs{Name: name, Recovery: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if s.Voting || s.ID != "7" || s.Learned < 5*time.Second || s.Learned > 5*time.Second+tc.max {
			t.Fatalf("%s: %+v, want learning from 5s by at most %s", tc.what, s, tc.max)
		}
	}
}

package statuslock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/election"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/statuslock"
)

// replica is one reconciler process: its own connections, client, and
// election participant.
type replica struct {
	name   string
	conns  []*redis.Client
	client *redlock.Client
	rec    *statuslock.Reconciler
	passes atomic.Int64
}

func newReplica(t *testing.T, cl *redistest.Cluster, name, electionName string, running, overlaps *atomic.Int64) *replica {
	t.Helper()
	r := &replica{name: name}
	var nodes []node.Node
	for _, a := range cl.Addrs() {
		c := redis.NewClient(&redis.Options{Addr: a, ContextTimeoutEnabled: true})
		r.conns = append(r.conns, c)
		nodes = append(nodes, redisnode.New(c))
	}
	var err error
	r.client, err = redlock.New(nodes, redlock.WithNodeTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	e, err := election.New(r.client, electionName, election.WithTTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	reconcile := func(ctx context.Context, id string, fence uint64) error {
		if running.Add(1) > 1 {
			overlaps.Add(1)
		}
		defer running.Add(-1)
		r.passes.Add(1)
		return nil
	}
	services := func(context.Context) ([]string, error) { return []string{electionName}, nil }
	r.rec, err = statuslock.NewReconciler(newLocker(t, r.client), services, reconcile,
		statuslock.WithInterval(50*time.Millisecond), statuslock.WithLeaderElection(e, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.rec.Stop(context.Background())
		_ = r.client.Close()
		for _, c := range r.conns {
			_ = c.Close()
		}
	})
	return r
}

// waitPasses waits (hang guard only) until r has made at least n passes.
func waitPasses(t *testing.T, ctx context.Context, r *replica, n int64) {
	t.Helper()
	for r.passes.Load() < n {
		select {
		case <-ctx.Done():
			t.Fatalf("%s made %d passes, want %d: %v", r.name, r.passes.Load(), n, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// With two replicas only the leader reconciles; when the leader's client is
// closed without resigning (its connections gone, as when its process
// dies), the other replica takes over once the term's lock expires, and the
// two never reconcile at once.
func TestReconcilerOnlyLeaderReconciles(t *testing.T) {
	cl := redistest.StartT(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	name := serviceID(t)
	var running, overlaps atomic.Int64
	a := newReplica(t, cl, "replica-a", name, &running, &overlaps)
	b := newReplica(t, cl, "replica-b", name, &running, &overlaps)
	if err := a.rec.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for a.passes.Load() == 0 { // a leads first, so that the roles are known
		time.Sleep(10 * time.Millisecond)
		if ctx.Err() != nil {
			t.Fatal("replica a never reconciled")
		}
	}
	e, err := election.New(b.client, name)
	if err != nil {
		t.Fatal(err)
	}
	first, err := e.Leader(ctx)
	if err != nil || first.Value != "replica-a" {
		t.Fatalf("Leader = %+v, %v; want replica-a", first, err)
	}
	if err := b.rec.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitPasses(t, ctx, a, 20)
	still, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The same term throughout (a starved machine could let a's term lapse
	// and hand it to b, legitimately): then b must not have reconciled.
	if still.ID == first.ID {
		if n := b.passes.Load(); n != 0 {
			t.Fatalf("the follower reconciled %d times while the leader led", n)
		}
	} else {
		t.Logf("a's term ended on its own (a starved machine?): %+v, then %+v", first, still)
	}
	// The leader's process "dies": its connections close, nothing resigns.
	for _, c := range a.conns {
		_ = c.Close()
	}
	waitPasses(t, ctx, b, 20)
	if l, err := e.Leader(ctx); err != nil || l.Value != "replica-b" {
		t.Fatalf("Leader = %+v, %v; want replica-b", l, err)
	}
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("the replicas reconciled at once %d times", n)
	}
	before := a.passes.Load()
	waitPasses(t, ctx, b, b.passes.Load()+10)
	if after := a.passes.Load(); after != before {
		t.Fatalf("the closed replica reconciled %d times after losing its term", after-before)
	}
}

// A reconciler with leader election checks its value.
func TestReconcilerLeaderElectionBadValue(t *testing.T) {
	c := memoryClient(t)
	e, err := election.New(c, "x")
	if err != nil {
		t.Fatal(err)
	}
	services := func(context.Context) ([]string, error) { return nil, nil }
	reconcile := func(context.Context, string, uint64) error { return nil }
	for _, v := range []string{"", "a\nb"} {
		_, err := statuslock.NewReconciler(newLocker(t, c), services, reconcile, statuslock.WithLeaderElection(e, v))
		if !errors.Is(err, statuslock.ErrInvalidArgument) {
			t.Errorf("value %q: %v, want ErrInvalidArgument", v, err)
		}
	}
	_, err = statuslock.NewReconciler(newLocker(t, c), services, reconcile, statuslock.WithLeaderElection(nil, "v"))
	if !errors.Is(err, statuslock.ErrInvalidArgument) {
		t.Errorf("nil election: %v, want ErrInvalidArgument", err)
	}
}

package lockdesc_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/lockdesc"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

func redisClient(t *testing.T, c *redistest.Cluster) *redlock.Client {
	t.Helper()
	var nodes []node.Node
	for _, rc := range c.Clients() {
		nodes = append(nodes, redisnode.New(rc))
	}
	client, err := redlock.New(nodes, redlock.WithRetry(retry.Never()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

var consolidation = lockdesc.Descriptor{Subject: "consolidation-job", Predicate: "triggering", Resources: []string{"fs-abc123", "VA-IRRL-LIN"}}

// Policies are checked before anything is locked: a TTL above the maximum
// and a kind the subject may not use are ErrPolicy, a shared lock without
// an RWLocker is ErrKindUnsupported, and none of them leaves a key.
func TestPolicies(t *testing.T) {
	cluster := redistest.StartT(t, 3)
	client := redisClient(t, cluster)
	m, err := lockdesc.NewManager(client, lockdesc.WithPolicy(
		lockdesc.Policy{Subject: "consolidation-job", Predicate: "triggering", MaxTTL: time.Minute},
		lockdesc.Policy{Subject: "consolidation-job", Kinds: []lockdesc.Kind{lockdesc.Exclusive}},
		lockdesc.Policy{Subject: "schema", Kinds: []lockdesc.Kind{lockdesc.Shared}},
	))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	shared := consolidation
	shared.Kind = lockdesc.Shared
	schemaWrite := lockdesc.Descriptor{Subject: "schema", Predicate: "writing", Resources: []string{"tenant-1"}}
	schemaRead := lockdesc.Descriptor{Kind: lockdesc.Shared, Subject: "schema", Predicate: "reading", Resources: []string{"tenant-1"}}
	for name, c := range map[string]struct {
		d    lockdesc.Descriptor
		ttl  time.Duration
		want error
	}{
		"ttl above max":         {consolidation, 2 * time.Minute, lockdesc.ErrPolicy},
		"kind not allowed":      {shared, time.Second, lockdesc.ErrPolicy},
		"only shared allowed":   {schemaWrite, time.Second, lockdesc.ErrPolicy},
		"shared without rwlock": {schemaRead, time.Second, lockdesc.ErrKindUnsupported},
		"zero ttl":              {consolidation, 0, lockdesc.ErrInvalidArgument},
		"bad descriptor":        {lockdesc.Descriptor{Subject: "x"}, time.Second, lockdesc.ErrInvalidArgument},
	} {
		if _, err := m.Acquire(ctx, c.d, c.ttl); !errors.Is(err, c.want) {
			t.Errorf("%s: Acquire = %v, want %v", name, err, c.want)
		}
		if key, err := c.d.Key(); err == nil {
			if info, err := client.Inspect(ctx, key); err != nil || info.Held {
				t.Errorf("%s: refused request left %q held (%v)", name, key, err)
			}
		}
	}
	// Within the policy: acquired, on the descriptor's key, exclusive.
	h, err := m.Acquire(ctx, consolidation, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if key, _ := consolidation.Key(); h.Key() != key || h.Fence() == 0 {
		t.Fatalf("held %q fence %d", h.Key(), h.Fence())
	}
	if _, err := m.Acquire(ctx, consolidation, time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("second holder: %v, want ErrNotAcquired", err)
	}
	if _, err := m.TryAcquire(ctx, consolidation, time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("second holder, one attempt: %v, want ErrNotAcquired", err)
	}
	if _, err := m.TryAcquire(ctx, consolidation, 2*time.Minute); !errors.Is(err, lockdesc.ErrPolicy) {
		t.Fatalf("TryAcquire above the policy's TTL: %v, want ErrPolicy", err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Bad policies and options.
	for name, o := range map[string]lockdesc.Option{
		"no subject":   lockdesc.WithPolicy(lockdesc.Policy{MaxTTL: time.Second}),
		"negative ttl": lockdesc.WithPolicy(lockdesc.Policy{Subject: "s", MaxTTL: -1}),
		"bad kind":     lockdesc.WithPolicy(lockdesc.Policy{Subject: "s", Kinds: []lockdesc.Kind{"intent"}}),
		"nil rwlocker": lockdesc.WithRWLocker(nil),
		"nil option":   nil,
	} {
		if _, err := lockdesc.NewManager(client, o); !errors.Is(err, lockdesc.ErrInvalidArgument) {
			t.Errorf("%s: NewManager = %v", name, err)
		}
	}
	if _, err := lockdesc.NewManager(nil); !errors.Is(err, lockdesc.ErrInvalidArgument) {
		t.Errorf("nil client: %v", err)
	}
	if err := m.Do(ctx, consolidation, time.Second, nil); !errors.Is(err, lockdesc.ErrInvalidArgument) {
		t.Errorf("Do nil fn: %v", err)
	}
	var nilCtx context.Context
	var nilManager *lockdesc.Manager
	for name, call := range map[string]func() error{
		"Acquire nil ctx":    func() error { _, err := m.Acquire(nilCtx, consolidation, time.Second); return err },
		"TryAcquire nil ctx": func() error { _, err := m.TryAcquire(nilCtx, consolidation, time.Second); return err },
		"Find nil ctx":       func() error { _, err := m.Find(nilCtx, lockdesc.Pattern{}); return err },
		"Metrics nil ctx":    func() error { _, err := m.Metrics(nilCtx, lockdesc.Pattern{}); return err },
		"Find bad kind":      func() error { _, err := m.Find(ctx, lockdesc.Pattern{Kind: "intent"}); return err },
		"nil Manager":        func() error { _, err := nilManager.Acquire(ctx, consolidation, time.Second); return err },
		"nil Manager Try":    func() error { _, err := nilManager.TryAcquire(ctx, consolidation, time.Second); return err },
		"nil Manager Find":   func() error { _, err := nilManager.Find(ctx, lockdesc.Pattern{}); return err },
		"nil Manager Check":  func() error { return nilManager.Check(consolidation, time.Second) },
	} {
		if err := call(); !errors.Is(err, lockdesc.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
}

// fakeRW records which side was asked for which key and hands out locks
// of an in-process client (a unit test of the routing, not a read-write lock).
type fakeRW struct {
	c     *redlock.Client
	calls []string
}

func (f *fakeRW) record(side, key string, ttl time.Duration) (*redlock.Lock, error) {
	f.calls = append(f.calls, side+" "+key)
	return f.c.Acquire(context.Background(), side+":"+key, ttl)
}

func (f *fakeRW) Lock(_ context.Context, key string, ttl time.Duration) (*redlock.Lock, error) {
	return f.record("Lock", key, ttl)
}

func (f *fakeRW) TryLock(_ context.Context, key string, ttl time.Duration) (*redlock.Lock, error) {
	return f.record("TryLock", key, ttl)
}

func (f *fakeRW) RLock(_ context.Context, key string, ttl time.Duration) (*redlock.Lock, error) {
	return f.record("RLock", key, ttl)
}

func (f *fakeRW) TryRLock(_ context.Context, key string, ttl time.Duration) (*redlock.Lock, error) {
	return f.record("TryRLock", key, ttl)
}

// With an RWLocker both kinds of a resource go to it, on the same key
// (without the kind), so that they can exclude each other.
func TestRWLockerRouting(t *testing.T) {
	client, err := redlock.New([]node.Node{memnode.New("a")})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	rw := &fakeRW{c: client}
	m, err := lockdesc.NewManager(client, lockdesc.WithRWLocker(rw))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	read := lockdesc.Descriptor{Kind: lockdesc.Shared, Subject: "schema", Predicate: "access", Resources: []string{"t:1"}}
	write := read
	write.Kind = lockdesc.Exclusive
	l, err := m.Acquire(ctx, read, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Release(ctx)
	if err := m.Do(ctx, write, time.Second, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	for _, d := range []lockdesc.Descriptor{read, write} {
		l, err := m.TryAcquire(ctx, d, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Release(ctx)
	}
	want := fmt.Sprint([]string{"RLock schema:access:t%3A1", "Lock schema:access:t%3A1", "TryRLock schema:access:t%3A1", "TryLock schema:access:t%3A1"})
	if got := fmt.Sprint(rw.calls); got != want {
		t.Fatalf("calls %s, want %s", got, want)
	}
}

// Find lists exactly the held locks a pattern selects, among released ones,
// keys that are not descriptors and look-alike resources; Metrics counts
// them by subject.
func TestFindByPattern(t *testing.T) {
	cluster := redistest.StartT(t, 3)
	client := redisClient(t, cluster)
	m, err := lockdesc.NewManager(client)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	held := []lockdesc.Descriptor{
		consolidation,
		{Subject: "consolidation-job", Predicate: "triggering", Resources: []string{"fs-def456", "VA-IRRL-LIN"}},
		{Subject: "page", Predicate: "extracting", Resources: []string{"fs-abc123", "doc-456", "3"}},
		{Subject: "page", Predicate: "extracting", Resources: []string{"fs-abc1234", "doc:7"}},
		{Subject: "audit", Predicate: "reconciling", Resources: []string{"status*"}},
	}
	for _, d := range held {
		if _, err := m.Acquire(ctx, d, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	released := lockdesc.Descriptor{Subject: "page", Predicate: "extracting", Resources: []string{"fs-abc123", "doc-9", "1"}}
	h, err := m.Acquire(ctx, released, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Acquire(ctx, "exclusive:not-a-descriptor", time.Minute); err != nil {
		t.Fatal(err)
	}
	keys := func(p lockdesc.Pattern) map[string]bool {
		found, err := m.Find(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, f := range found {
			k, _ := f.Descriptor.Key()
			if k != f.Info.Key || !f.Info.Held {
				t.Fatalf("found %+v", f)
			}
			out[k] = true
		}
		return out
	}
	for _, c := range []struct {
		p    lockdesc.Pattern
		want []int
	}{
		{lockdesc.Pattern{Subject: "consolidation-job"}, []int{0, 1}},
		{lockdesc.Pattern{Resource: "fs-abc123"}, []int{0, 2}},
		{lockdesc.Pattern{Resources: []string{"fs-abc1234"}}, []int{3}},
		{lockdesc.Pattern{Resource: "doc:7"}, []int{3}},
		{lockdesc.Pattern{Resource: "status*"}, []int{4}},
		{lockdesc.Pattern{Kind: lockdesc.Shared}, nil},
		{lockdesc.Pattern{}, []int{0, 1, 2, 3, 4}},
	} {
		got := keys(c.p)
		want := map[string]bool{}
		for _, i := range c.want {
			k, _ := held[i].Key()
			want[k] = true
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Find(%+v) = %v, want %v", c.p, got, want)
		}
	}
	metrics, err := m.Metrics(ctx, lockdesc.Pattern{})
	if err != nil {
		t.Fatal(err)
	}
	if len(metrics) != 3 || metrics["consolidation-job"].Count != 2 || metrics["page"].Count != 2 || metrics["audit"].Count != 1 {
		t.Fatalf("metrics %+v", metrics)
	}
	if r := metrics["page"].AvgRemaining; r <= 0 || r > time.Minute {
		t.Fatalf("average remaining %v", r)
	}
}

package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
	"github.com/redis/go-redis/v9"
)

// rawValues reads a key's value on every node as stored ("" when absent).
func rawValues(t *testing.T, cl *redistest.Cluster, name string) []string {
	t.Helper()
	var out []string
	for _, n := range cl.Nodes() {
		v, err := n.Client().Get(context.Background(), name).Result()
		if err != nil {
			t.Fatalf("get %s: %v", name, err)
		}
		out = append(out, v)
	}
	return out
}

// contend makes waiting attempts on key that must all lose: blocking
// Acquires that retry (and so wait for a release), and attempts of a
// client with a Released watcher on the key.
func contend(t *testing.T, c *redlock.Client, key string) {
	t.Helper()
	ctx := ctxFor(t)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, err := c.Released(wctx, key); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.Acquire(ctx, key, 5*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("acquire of a held key: %v, want ErrNotAcquired", err)
		}
		if _, err := c.TryAcquire(ctx, key, 5*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("try-acquire of a held key: %v, want ErrNotAcquired", err)
		}
	}
}

// Contended attempts, waiting ones included, write nothing to the value
// they find: a value that is not a lock of ours stays as it is, byte for
// byte, and so does the holder's; the holder's release still wakes a
// watcher of the key.
func TestContendedAttemptsLeaveHeldValue(t *testing.T) {
	t.Parallel()
	cl := redistest.StartT(t, 3)
	opts := []redlock.Option{redlock.WithNodeTimeout(testNodeTimeout),
		redlock.WithRetry(retry.Constant(3, 20*time.Millisecond, 0))}
	holder := newClient(t, nodesOf(cl), opts...)
	waiter := newClient(t, nodesOf(cl), opts...)

	t.Run("foreign value", func(t *testing.T) {
		key := uniqueKey(t)
		name := waiter.KeyName(key)
		for _, n := range cl.Nodes() {
			if err := n.Client().Set(context.Background(), name, "other", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}
		contend(t, waiter, key)
		for i, v := range rawValues(t, cl, name) {
			if v != "other" {
				t.Errorf("node %d: foreign value %q became %q", i, "other", v)
			}
		}
	})

	t.Run("holder's value", func(t *testing.T) {
		ctx := ctxFor(t)
		key := uniqueKey(t)
		name := waiter.KeyName(key)
		l, err := holder.TryAcquire(ctx, key, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		before := rawValues(t, cl, name)
		contend(t, waiter, key)
		after := rawValues(t, cl, name)
		for i := range before {
			if before[i] != after[i] {
				t.Errorf("node %d: the holder's value %q became %q", i, before[i], after[i])
			}
		}
		released, err := waiter.Released(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-released:
		case <-time.After(10 * time.Second): // a hang guard: the announcement comes in milliseconds
			t.Fatal("the holder's release was not announced to a watcher")
		}
	})
	// A value an older client's waiter marked ("!" before it) is still the
	// holder's: it is extended and released, and its release announced.
	t.Run("older client's mark", func(t *testing.T) {
		ctx := ctxFor(t)
		key := uniqueKey(t)
		name := waiter.KeyName(key)
		l, err := holder.TryAcquire(ctx, key, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		values := rawValues(t, cl, name)
		for i, n := range cl.Nodes() {
			if err := n.Client().Set(ctx, name, "!"+values[i], redis.KeepTTL).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Extend(ctx, 30*time.Second); err != nil {
			t.Fatalf("extend of a marked value: %v", err)
		}
		released, err := waiter.Released(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("release of a marked value: %v", err)
		}
		select {
		case <-released:
		case <-time.After(10 * time.Second): // a hang guard
			t.Fatal("the release of a marked value was not announced")
		}
		if n := countEqual(holders(t, cl, name), l.Token()); n != 0 {
			t.Fatalf("the marked value is left on %d nodes", n)
		}
	})
}

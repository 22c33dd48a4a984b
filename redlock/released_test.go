package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

// ContextWithOwner records its owner instead of the client's, for that
// acquisition only; Inspect and the Lock report it.
func TestContextWithOwner(t *testing.T) {
	t.Parallel()
	_, c := start(t, 3, redlock.WithOwner("client-owner"))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	l, err := c.TryAcquire(redlock.ContextWithOwner(ctx, "candidate-7"), key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Inspect(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if l.Owner() != "candidate-7" || info.Owner != "candidate-7" {
		t.Fatalf("Owner = %q, Inspect's %q; want candidate-7", l.Owner(), info.Owner)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l, err = c.TryAcquire(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if l.Owner() != "client-owner" {
		t.Fatalf("Owner = %q without ContextWithOwner, want client-owner", l.Owner())
	}
	if _, err := c.TryAcquire(redlock.ContextWithOwner(ctx, ""), key+"x", time.Second); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("empty owner: %v, want ErrInvalidArgument", err)
	}
}

// Released receives when another client releases the key, and not for other
// keys.
func TestReleasedAnnouncesRelease(t *testing.T) {
	t.Parallel()
	cl, watcher := start(t, 3)
	holder := newClient(t, nodesOf(cl))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	// The first watcher starts the subscriptions, and hears their coming up
	// (a release may have gone unheard before): a second watcher, joining
	// once they are up, hears announcements only.
	first, err := watcher.Released(wctx, key)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-first:
	case <-ctx.Done():
		t.Fatal("the subscriptions never came up")
	}
	ch, err := watcher.Released(wctx, key)
	if err != nil {
		t.Fatal(err)
	}
	other, err := holder.TryAcquire(ctx, key+"-other", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := holder.TryAcquire(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The watcher's attempt marks the held key, so that its release is announced.
	if _, err := watcher.TryAcquire(ctx, key, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("watcher's attempt on a held key: %v, want ErrNotAcquired", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatal("the release was never announced to Released's channel")
	}
	// The other key's release did not count: after the one receive, the
	// channel holds at most the merged announcements of key's release by
	// the other nodes. Nothing more arrives for the other key.
	time.Sleep(200 * time.Millisecond)
	select {
	case <-ch:
	default:
	}
	o2, err := holder.TryAcquire(ctx, key+"-other", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := o2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	_ = holder.Close() // every node's release has landed and been announced
	time.Sleep(200 * time.Millisecond)
	select {
	case <-ch:
		t.Fatal("another key's release was announced on Released's channel")
	default:
	}
	if _, err := watcher.Released(ctx, ""); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("Released with an empty key: %v, want ErrInvalidArgument", err)
	}
}

// A held key is marked for announcement by the attempt of a client that
// waits for it (here: watches it with Released), and only then: the
// attempt of a client that neither waits nor watches leaves it unmarked,
// so that its release publishes nothing.
func TestReleasedHearsOnlyMarkedReleases(t *testing.T) {
	t.Parallel()
	cl, watcher := start(t, 3)
	holder := newClient(t, nodesOf(cl))
	bystander := newClient(t, nodesOf(cl))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	marked := func() int {
		n := 0
		for _, rc := range cl.Clients() {
			gctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			v, err := rc.Get(gctx, holder.KeyName(key)).Result()
			cancel()
			if err != nil {
				t.Fatalf("GET the lock key: %v", err)
			}
			if strings.HasPrefix(v, "!") {
				n++
			}
		}
		return n
	}
	l, err := holder.TryAcquire(ctx, key, 5*time.Minute) // outlives the hang guard
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	// The acquire decided on a majority; an attempt that reached the third
	// node first would take it there and mark nothing.
	await(t, "the holder's key on every node", 2*time.Minute, func() bool {
		return countEqual(holders(t, cl, holder.KeyName(key)), l.Token()) == 3
	})
	if _, err := bystander.TryAcquire(ctx, key, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("bystander's attempt: %v, want ErrNotAcquired", err)
	}
	_ = bystander.Close() // its requests have all landed
	if n := marked(); n != 0 {
		t.Fatalf("%d nodes marked after an attempt of a client that neither waits nor watches, want 0", n)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	if _, err := watcher.Released(wctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := watcher.TryAcquire(ctx, key, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("watcher's attempt: %v, want ErrNotAcquired", err)
	}
	// The attempt was refused by a majority, and each refusal marked its
	// node before answering; the third node's request may still be in
	// flight, or may never be sent once the attempt is decided.
	if n := marked(); n < 2 {
		t.Fatalf("%d of 3 nodes marked after the watcher's refused attempt, want at least 2", n)
	}
}

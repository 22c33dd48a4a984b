package redlock_test

import (
	"context"
	"errors"
	"slices"
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

// Every release is announced, whether or not anyone tried the key: a
// watcher that made no attempt hears it, and the attempts of other
// clients leave the holder's value as it was.
func TestReleasedHearsEveryRelease(t *testing.T) {
	t.Parallel()
	cl, watcher := start(t, 3)
	holder := newClient(t, nodesOf(cl))
	bystander := newClient(t, nodesOf(cl))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	l, err := holder.TryAcquire(ctx, key, 5*time.Minute) // outlives the hang guard
	if err != nil {
		t.Fatal(err)
	}
	await(t, "the holder's key on every node", 2*time.Minute, func() bool {
		return countEqual(holders(t, cl, holder.KeyName(key)), l.Token()) == 3
	})
	before := rawValues(t, cl, holder.KeyName(key))
	if _, err := bystander.TryAcquire(ctx, key, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("bystander's attempt: %v, want ErrNotAcquired", err)
	}
	_ = bystander.Close() // its requests have all landed
	if after := rawValues(t, cl, holder.KeyName(key)); !slices.Equal(before, after) {
		t.Fatalf("the holder's values %q became %q after another client's attempt", before, after)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	ch, err := watcher.Released(wctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatal("a release nobody waited for was not announced to a watcher")
	}
}

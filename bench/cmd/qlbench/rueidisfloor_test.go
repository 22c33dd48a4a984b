package main

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// The rueidis floor is a Redlock: a held key is refused to a second
// floor, and free again after the release.
func TestRueidisFloorExcludesAndReleases(t *testing.T) {
	cl := redistest.StartT(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // hang guard
	defer cancel()
	a, err := newRueidisFloor(cl.Addrs(), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	b, err := newRueidisFloor(cl.Addrs(), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	h, err := a.acquire(ctx, "k")
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if _, err := b.acquire(ctx, "k"); err == nil {
		t.Fatal("a second floor acquired a held key")
	}
	if err := b.release(ctx, h); err != nil {
		t.Fatalf("release by the holder's token: %v", err)
	}
	h2, err := b.acquire(ctx, "k")
	if err != nil {
		t.Fatalf("acquire after the release: %v", err)
	}
	if err := a.release(ctx, h2); err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := a.release(ctx, h2); err == nil {
		t.Fatal("a second release of the same token succeeded")
	}
}

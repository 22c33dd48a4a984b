package redlocktest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

// RunNodeConformance runs the Node contract as subtests. newNode must return
// an empty node (or one where no key of the suite exists) for each subtest.
func RunNodeConformance(t *testing.T, newNode func(t *testing.T) redlock.Node) {
	t.Helper()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, f fixture)
	}{
		{"AcquireFreeKeyCountsFence", acquireFreeKeyCountsFence},
		{"AcquireHeldKeyReportsHolderTTL", acquireHeldKeyReportsHolderTTL},
		{"AcquireIsIdempotentForSameToken", acquireIsIdempotentForSameToken},
		{"ReleaseOnlyOwnToken", releaseOnlyOwnToken},
		{"KeyExpiresAfterTTL", keyExpiresAfterTTL},
		{"ExtendOwnOtherAndMissing", extendOwnOtherAndMissing},
		{"RaiseFenceNeverLowers", raiseFenceNeverLowers},
		{"FenceStartsFromClock", fenceStartsFromClock},
		{"InspectFreeKey", inspectFreeKey},
		{"CancelledContextFails", cancelledContextFails},
		{"ConcurrentAcquireHasOneWinner", concurrentAcquireHasOneWinner},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, fixture{t, newNode(t)}) })
	}
}

var keySeq atomic.Int64

// freshKey keeps subtests apart even on a shared node.
func freshKey(t *testing.T) string {
	return fmt.Sprintf("conformance:%s:%d:%d", t.Name(), time.Now().UnixNano(), keySeq.Add(1))
}

// fixture fails the test on any node error, so each check reads as one line.
type fixture struct {
	t *testing.T
	n redlock.Node
}

func (f fixture) fatal(op string, err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatalf("%s: %v", op, err)
	}
}

func (f fixture) acquire(key, token string, ttl time.Duration) redlock.AcquireReply {
	f.t.Helper()
	r, err := f.n.Acquire(context.Background(), key, token, ttl)
	f.fatal("acquire", err)
	return r
}

func (f fixture) extend(key, token string, ttl time.Duration, fence uint64) redlock.ExtendResult {
	f.t.Helper()
	r, err := f.n.Extend(context.Background(), key, token, ttl, fence)
	f.fatal("extend", err)
	return r
}

func (f fixture) release(key, token string) bool {
	f.t.Helper()
	ok, err := f.n.Release(context.Background(), key, token)
	f.fatal("release", err)
	return ok
}

func (f fixture) raise(key, token string, fence uint64) bool {
	f.t.Helper()
	ok, err := f.n.RaiseFence(context.Background(), key, token, fence)
	f.fatal("raise fence", err)
	return ok
}

func (f fixture) inspect(key string) redlock.Holding {
	f.t.Helper()
	h, err := f.n.Inspect(context.Background(), key)
	f.fatal("inspect", err)
	return h
}

func acquireFreeKeyCountsFence(t *testing.T, f fixture) {
	key := freshKey(t)
	var last uint64
	for i := 0; i < 3; i++ {
		r := f.acquire(key, "tok", time.Second)
		if !r.Acquired {
			t.Fatalf("round %d: free key not acquired", i)
		}
		if r.Fence <= last {
			t.Fatalf("round %d: fence %d not above %d", i, r.Fence, last)
		}
		last = r.Fence
		if !f.release(key, "tok") {
			t.Fatalf("round %d: release of own token failed", i)
		}
	}
	if h := f.inspect(key); h.Fence != last || h.Token != "" {
		t.Fatalf("after release: %+v, want free with fence %d", h, last)
	}
}

func acquireHeldKeyReportsHolderTTL(t *testing.T, f fixture) {
	key := freshKey(t)
	f.acquire(key, "a", 2*time.Second)
	r := f.acquire(key, "b", time.Second)
	if r.Acquired {
		t.Fatal("second token acquired a held key")
	}
	if r.HolderTTL <= time.Second || r.HolderTTL > 2*time.Second {
		t.Fatalf("HolderTTL = %s, want in (1s, 2s]", r.HolderTTL)
	}
	if h := f.inspect(key); h.Token != "a" {
		t.Fatalf("holder changed to %q", h.Token)
	}
}

func acquireIsIdempotentForSameToken(t *testing.T, f fixture) {
	key := freshKey(t)
	first := f.acquire(key, "a", time.Second)
	again := f.acquire(key, "a", 3*time.Second)
	if !again.Acquired || again.Fence != first.Fence {
		t.Fatalf("resent acquire = %+v, want acquired with the same fence %d", again, first.Fence)
	}
	if h := f.inspect(key); h.TTL <= 2*time.Second {
		t.Fatalf("resent acquire did not refresh the ttl: %s", h.TTL)
	}
}

func releaseOnlyOwnToken(t *testing.T, f fixture) {
	key := freshKey(t)
	f.acquire(key, "owner", time.Second)
	if f.release(key, "intruder") {
		t.Fatal("release with another token reported success")
	}
	if h := f.inspect(key); h.Token != "owner" {
		t.Fatalf("release with another token deleted the key: %+v", h)
	}
	if !f.release(key, "owner") {
		t.Fatal("owner's release failed")
	}
	if f.release(key, "owner") {
		t.Fatal("second release reported success")
	}
}

func keyExpiresAfterTTL(t *testing.T, f fixture) {
	key := freshKey(t)
	f.acquire(key, "a", 50*time.Millisecond)
	time.Sleep(120 * time.Millisecond)
	if r := f.acquire(key, "b", time.Second); !r.Acquired {
		t.Fatal("key did not expire after its ttl")
	}
}

func extendOwnOtherAndMissing(t *testing.T, f fixture) {
	key := freshKey(t)
	r := f.acquire(key, "a", 200*time.Millisecond)
	if res := f.extend(key, "a", 3*time.Second, r.Fence); res != redlock.Extended {
		t.Fatalf("extend own = %v, want Extended", res)
	}
	if h := f.inspect(key); h.TTL <= 2*time.Second {
		t.Fatalf("extend did not reset the ttl: %s", h.TTL)
	}
	if res := f.extend(key, "b", 3*time.Second, 0); res != redlock.NotHeld {
		t.Fatalf("extend of another's key = %v, want NotHeld", res)
	}
	if h := f.inspect(key); h.Token != "a" {
		t.Fatalf("extend by another token changed the holder: %+v", h)
	}
	missing := freshKey(t)
	if res := f.extend(missing, "c", time.Second, 42); res != redlock.Reasserted {
		t.Fatalf("extend of a missing key = %v, want Reasserted", res)
	}
	if h := f.inspect(missing); h.Token != "c" || h.Fence < 42 {
		t.Fatalf("re-asserted key = %+v, want token c and fence >= 42", h)
	}
	if r := f.acquire(missing, "d", time.Second); r.Acquired {
		t.Fatal("re-asserted key was free for another token")
	}
}

func raiseFenceNeverLowers(t *testing.T, f fixture) {
	key := freshKey(t)
	start := f.acquire(key, "a", time.Second).Fence
	if !f.raise(key, "a", start+10) {
		t.Fatal("RaiseFence did not see our token")
	}
	if f.raise(key, "b", start+5) {
		t.Fatal("RaiseFence reported another token as held")
	}
	if h := f.inspect(key); h.Fence != start+10 {
		t.Fatalf("fence = %d, want %d (raised, never lowered)", h.Fence, start+10)
	}
	f.release(key, "a")
	if r := f.acquire(key, "c", time.Second); r.Fence != start+11 {
		t.Fatalf("next acquisition fence = %d, want %d", r.Fence, start+11)
	}
}

// A fresh counter starts from a clock in microseconds, so that a node that
// lost its data still counts above the fences it handed out before; a node
// that takes a seed (redlock.SeededAcquirer) starts from the seed, and only
// for a counter that does not exist yet.
func fenceStartsFromClock(t *testing.T, f fixture) {
	before := uint64(time.Now().Add(-5 * time.Second).UnixMicro()) // the node's clock may trail ours a little
	if r := f.acquire(freshKey(t), "a", time.Second); r.Fence <= before {
		t.Fatalf("first fence of a new key = %d, want above %d (seeded from the clock)", r.Fence, before)
	}
	sa, ok := f.n.(redlock.SeededAcquirer)
	if !ok {
		return
	}
	key := freshKey(t)
	seed := uint64(time.Now().UnixMicro()) + 12345
	r, err := sa.AcquireSeeded(context.Background(), key, "a", time.Second, seed)
	f.fatal("acquire seeded", err)
	if !r.Acquired || r.Fence != seed+1 {
		t.Fatalf("seeded acquire = %+v, want fence %d", r, seed+1)
	}
	f.release(key, "a")
	r, err = sa.AcquireSeeded(context.Background(), key, "b", time.Second, seed+1000)
	f.fatal("acquire seeded", err)
	if r.Fence != seed+2 {
		t.Fatalf("an existing counter took a new seed: fence %d, want %d", r.Fence, seed+2)
	}
}

func inspectFreeKey(t *testing.T, f fixture) {
	if h := f.inspect(freshKey(t)); h != (redlock.Holding{}) {
		t.Fatalf("free key inspected as %+v", h)
	}
}

func cancelledContextFails(t *testing.T, f fixture) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	key := freshKey(t)
	if _, err := f.n.Acquire(ctx, key, "a", time.Second); err == nil {
		t.Fatal("acquire with a cancelled context succeeded")
	}
	if h := f.inspect(key); h.Token != "" {
		t.Fatalf("acquire with a cancelled context left %+v", h)
	}
}

func concurrentAcquireHasOneWinner(t *testing.T, f fixture) {
	key := freshKey(t)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := f.n.Acquire(context.Background(), key, fmt.Sprintf("tok-%d", i), 5*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			if r.Acquired {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	if w := wins.Load(); w != 1 {
		t.Fatalf("%d of 32 concurrent acquirers won, want exactly 1", w)
	}
}

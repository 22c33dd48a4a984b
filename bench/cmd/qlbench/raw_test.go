package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// TestRawFloorOnRedis runs raw cycles against real redis-server nodes.
func TestRawFloorOnRedis(t *testing.T) {
	cl := redistest.StartT(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // hang guard
	defer cancel()
	nodes := cl.Clients()
	// holders counts the nodes on which key holds token.
	holders := func(key string, token []byte) int {
		t.Helper()
		n := 0
		for _, c := range nodes {
			v, err := c.Get(ctx, rawKeyPrefix+key).Result()
			if err == nil && v == string(token) {
				n++
			}
		}
		return n
	}
	exists := func(key string) int64 {
		t.Helper()
		var n int64
		for _, c := range nodes {
			n += c.Exists(ctx, rawKeyPrefix+key).Val()
		}
		return n
	}

	a, err := newRawFloor(ctx, cl.Addrs(), 30*time.Second, false)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	b, err := newRawFloor(ctx, cl.Addrs(), 30*time.Second, false)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()

	t.Run("acquire a free key", func(t *testing.T) {
		l, err := a.acquire(ctx, "free")
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		if n := holders("free", l.token[:]); n != 3 {
			t.Errorf("token on %d of 3 nodes", n)
		}
		if ttl := nodes[0].PTTL(ctx, rawKeyPrefix+"free").Val(); ttl <= 0 || ttl > 30*time.Second {
			t.Errorf("PTTL = %v, want in (0, 30s]", ttl)
		}
		if err := a.release(ctx, l); err != nil {
			t.Fatalf("release: %v", err)
		}
		if n := exists("free"); n != 0 {
			t.Errorf("key left on %d nodes after release", n)
		}
		if err := a.release(ctx, l); !errors.Is(err, errRawNotHeld) {
			t.Errorf("second release = %v, want errRawNotHeld", err)
		}
	})

	t.Run("acquire a held key fails", func(t *testing.T) {
		l, err := a.acquire(ctx, "held")
		if err != nil {
			t.Fatal(err)
		}
		tok := l.token
		if _, err := b.acquire(ctx, "held"); !errors.Is(err, errRawNotAcquired) {
			t.Errorf("acquire of a held key = %v, want errRawNotAcquired", err)
		}
		// A majority is enough: with the key on 2 of 3 nodes, still not ours.
		if err := nodes[2].Del(ctx, rawKeyPrefix+"held").Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := b.acquire(ctx, "held"); !errors.Is(err, errRawNotAcquired) {
			t.Errorf("acquire of a key held on 2 of 3 nodes = %v, want errRawNotAcquired", err)
		}
		if n := holders("held", tok[:]); n != 2 {
			t.Errorf("holder's token on %d nodes, want the 2 it kept", n)
		}
		// b's attempt took node 2, where the key was free, and left it there
		// (the raw floor does not undo a failed attempt).
		if n := exists("held"); n != 3 {
			t.Errorf("key on %d nodes, want 3", n)
		}
		if err := a.release(ctx, l); err != nil {
			t.Fatalf("release: %v", err)
		}
	})

	t.Run("release deletes only its own token", func(t *testing.T) {
		l, err := a.acquire(ctx, "own")
		if err != nil {
			t.Fatal(err)
		}
		s, err := b.get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		forged := &rawLock{set: s, key: "own", token: l.token, held: true}
		forged.token[0] ^= 1 // same key, another token
		if err := b.release(ctx, forged); !errors.Is(err, errRawNotReleased) {
			t.Errorf("release with another token = %v, want errRawNotReleased", err)
		}
		if n := holders("own", l.token[:]); n != 3 {
			t.Errorf("after a foreign release the token is on %d of 3 nodes", n)
		}
		if err := a.release(ctx, l); err != nil {
			t.Fatalf("release: %v", err)
		}
		if n := exists("own"); n != 0 {
			t.Errorf("key left on %d nodes", n)
		}
	})

	t.Run("tokens differ", func(t *testing.T) {
		seen := map[[32]byte]bool{}
		for range 100 {
			l, err := a.acquire(ctx, "tok")
			if err != nil {
				t.Fatal(err)
			}
			if seen[l.token] {
				t.Fatalf("token %s repeated", l.token)
			}
			seen[l.token] = true
			if err := a.release(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
	})

	// Four commands per node per cycle: SET, EVALSHA and, inside the
	// script, GET and DEL; this checks serverCalls's counting as well.
	t.Run("four server commands per node per cycle", func(t *testing.T) {
		const cycles = 50
		c0, err := serverCalls(ctx, nodes)
		if err != nil {
			t.Fatal(err)
		}
		for i := range cycles {
			l, err := a.acquire(ctx, "count"+string(rune('a'+i%26)))
			if err != nil {
				t.Fatal(err)
			}
			if err := a.release(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
		c1, err := serverCalls(ctx, nodes)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := c1-c0, int64(cycles*4*len(nodes)); got != want {
			t.Errorf("server commands = %d, want %d", got, want)
		}
	})

	t.Run("steady state allocates nothing", func(t *testing.T) {
		if raceEnabled {
			t.Skip("the race detector allocates")
		}
		var cycleErr error
		allocs := testing.AllocsPerRun(200, func() {
			l, err := a.acquire(ctx, "alloc")
			if err == nil {
				err = a.release(ctx, l)
			}
			if err != nil && cycleErr == nil {
				cycleErr = err
			}
		})
		if cycleErr != nil {
			t.Fatal(cycleErr)
		}
		if allocs != 0 {
			t.Errorf("%v allocations per cycle, want 0", allocs)
		}
	})

	t.Run("concurrent cycles use their own connections", func(t *testing.T) {
		l1, err := a.acquire(ctx, "c1")
		if err != nil {
			t.Fatal(err)
		}
		l2, err := a.acquire(ctx, "c2") // while l1's set is out: a second set
		if err != nil {
			t.Fatal(err)
		}
		if l1.set == l2.set {
			t.Fatal("two held locks share a connection set")
		}
		for _, l := range []*rawLock{l2, l1} {
			if err := a.release(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("concurrent cycles from many goroutines", func(t *testing.T) {
		const g, cycles = 8, 50
		errs := make(chan error, g)
		for gi := range g {
			go func() {
				for i := range cycles {
					l, err := a.acquire(ctx, fmt.Sprintf("par:%d:%d", gi, i))
					if err == nil {
						err = a.release(ctx, l)
					}
					if err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range g {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		if sets := len(a.free); sets > g+1 {
			t.Errorf("%d idle connection sets after %d goroutines, want at most %d", sets, g, g+1)
		}
	})

	t.Run("error replies are reported", func(t *testing.T) {
		l, err := a.acquire(ctx, "noscript")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range nodes {
			if err := c.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		err = a.release(ctx, l)
		if !errors.Is(err, errRawNotReleased) || !strings.Contains(err.Error(), "NOSCRIPT") {
			t.Errorf("release after SCRIPT FLUSH = %v, want errRawNotReleased naming NOSCRIPT", err)
		}
		if n := holders("noscript", l.token[:]); n != 3 {
			t.Errorf("token on %d of 3 nodes after a failed release", n)
		}
	})

	t.Run("bad configuration", func(t *testing.T) {
		if _, err := newRawFloor(ctx, nil, time.Second, false); !errors.Is(err, errRawConfig) {
			t.Errorf("no nodes: %v, want errRawConfig", err)
		}
		if _, err := newRawFloor(ctx, cl.Addrs(), time.Microsecond, false); !errors.Is(err, errRawConfig) {
			t.Errorf("ttl 1µs: %v, want errRawConfig", err)
		}
	})
}

// TestRawRecordFloorRunsQuorumlocksScripts: the raw-record floor excludes
// (quorumlock's record on a majority refuses a second token) and its
// release frees the key for the next, as quorumlock's client would see.
func TestRawRecordFloorRunsQuorumlocksScripts(t *testing.T) {
	cl := redistest.StartT(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // hang guard
	defer cancel()
	a, err := newRawFloor(ctx, cl.Addrs(), 30*time.Second, true)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	b, err := newRawFloor(ctx, cl.Addrs(), 30*time.Second, true)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	l, err := a.acquire(ctx, "k")
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if _, err := b.acquire(ctx, "k"); !errors.Is(err, errRawNotAcquired) {
		t.Fatalf("second token's acquire = %v, want errRawNotAcquired", err)
	}
	if err := a.release(ctx, l); err != nil {
		t.Fatalf("release: %v", err)
	}
	l2, err := b.acquire(ctx, "k")
	if err != nil {
		t.Fatalf("acquire after the release: %v", err)
	}
	if err := b.release(ctx, l2); err != nil {
		t.Fatalf("release: %v", err)
	}
}

package multilock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/multilock"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// The keys are sorted and deduplicated, each has its own fence, and the
// set excludes each of its keys until Release.
func TestCanonicalKeysAndFences(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			cs := clientsOn(t, b, 2)
			ctx := ctxFor(t, 2*time.Minute)
			k := prefixed(t, "a", "b", "c")
			m, err := multilock.Acquire(ctx, cs[0], []string{k[2], k[0], k[2], k[1], k[0]}, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Keys(); !slices.Equal(got, k) {
				t.Fatalf("keys %v, want %v", got, k)
			}
			for _, key := range k {
				if m.Fence(key) == 0 {
					t.Fatalf("no fence for %q", key)
				}
				if _, err := cs[1].TryAcquire(ctx, key, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
					t.Fatalf("%q taken by another client while the set holds it: %v", key, err)
				}
			}
			if m.Fence("not-in-set") != 0 {
				t.Fatal("fence of a key outside the set")
			}
			before := m.Fence(k[1])
			if err := m.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if !errors.Is(m.Err(), redlock.ErrReleased) {
				t.Fatalf("Err after Release: %v", m.Err())
			}
			if err := m.Release(ctx); !errors.Is(err, redlock.ErrLockLost) {
				t.Fatalf("second Release: %v, want ErrLockLost", err)
			}
			l, err := cs[1].TryAcquire(ctx, k[1], 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if l.Fence() <= before {
				t.Fatalf("fence %d after the set's %d", l.Fence(), before)
			}
			_ = l.Release(ctx)
		})
	}
}

// All or nothing: when one key is held elsewhere, the set is not taken and
// the keys it took before are free again.
func TestAllOrNothing(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			cs := clientsOn(t, b, 2, redlock.WithRetry(retry.Constant(2, 10*time.Millisecond, 0)))
			ctx := ctxFor(t, 2*time.Minute)
			k := prefixed(t, "a", "b", "c")
			other, err := cs[1].Acquire(ctx, k[2], 30*time.Second) // the last in order: a and b are taken first
			if err != nil {
				t.Fatal(err)
			}
			for name, acquire := range map[string]func(context.Context, *redlock.Client, []string, time.Duration) (*multilock.Lock, error){
				"TryAcquire": multilock.TryAcquire, "Acquire": multilock.Acquire,
			} {
				if _, err := acquire(ctx, cs[0], k, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
					t.Fatalf("%s with %q held: %v, want ErrNotAcquired", name, k[2], err)
				}
				for _, key := range k[:2] {
					l, err := cs[1].TryAcquire(ctx, key, 10*time.Second)
					if err != nil {
						t.Fatalf("after %s failed, %q is not free: %v", name, key, err)
					}
					_ = l.Release(ctx)
				}
			}
			ran, err := multilock.TryDo(ctx, cs[0], k, 10*time.Second, func(context.Context) error { return nil })
			if ran || err != nil {
				t.Fatalf("TryDo with a key held: ran %v, %v", ran, err)
			}
			_ = other.Release(ctx)
			ran, err = multilock.TryDo(ctx, cs[0], k, 10*time.Second, func(ctx context.Context) error {
				if set, ok := multilock.FromContext(ctx); !ok || len(set.Keys()) != 3 {
					return errors.New("no set in fn's context")
				}
				return nil
			})
			if !ran || err != nil {
				t.Fatalf("TryDo with the keys free: ran %v, %v", ran, err)
			}
		})
	}
}

// Losing one key ends the set: Done closes, the cause wraps ErrLockLost
// and names the key, Do's fn sees its context cancelled with that cause,
// and the set's other keys are released at once.
func TestLossOfOneKeyEndsTheSet(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			cs := clientsOn(t, b, 2)
			ctx := ctxFor(t, 2*time.Minute)
			k := prefixed(t, "a", "b", "c")
			var fnCause error
			err := multilock.Do(ctx, cs[0], k, 2*time.Second, func(ctx context.Context) error {
				// An operator evicts the holder of b; the watchdog's next
				// extension finds it gone.
				if _, err := cs[1].ForceRelease(ctx, k[1], ""); err != nil {
					return err
				}
				<-ctx.Done()
				fnCause = context.Cause(ctx)
				set, _ := multilock.FromContext(ctx)
				<-set.Done()
				return nil
			})
			if !errors.Is(err, redlock.ErrLockLost) {
				t.Fatalf("Do: %v, want ErrLockLost", err)
			}
			if !errors.Is(fnCause, redlock.ErrLockLost) {
				t.Fatalf("fn's context cause: %v, want ErrLockLost", fnCause)
			}
			for _, key := range []string{k[0], k[2]} {
				l, err := cs[1].TryAcquire(ctx, key, 10*time.Second)
				if err != nil {
					t.Fatalf("%q not released after the loss of %q: %v", key, k[1], err)
				}
				_ = l.Release(ctx)
			}
		})
	}
}

// Bad input gets ErrInvalidArgument, never a panic or a hang, and takes no
// key.
func TestBadInput(t *testing.T) {
	cs := clientsOn(t, "memory", 1)
	ctx := context.Background()
	many := make([]string, multilock.MaxKeys+1)
	for i := range many {
		many[i] = string(rune('a'+i%26)) + string(rune(i))
	}
	cases := map[string]error{
		"no keys":                second(multilock.Acquire(ctx, cs[0], nil, 10*time.Second)),
		"empty key":              second(multilock.TryAcquire(ctx, cs[0], []string{"a", ""}, 10*time.Second)),
		"brace key":              second(multilock.Acquire(ctx, cs[0], []string{"a", "}b"}, 10*time.Second)),
		"too many keys":          second(multilock.Acquire(ctx, cs[0], many, 10*time.Second)),
		"nil client":             second(multilock.Acquire(ctx, nil, []string{"a"}, 10*time.Second)),
		"nil context":            second(multilock.Acquire(nilCtx, cs[0], []string{"a"}, 10*time.Second)),
		"zero ttl":               second(multilock.Acquire(ctx, cs[0], []string{"a"}, 0)),
		"ttl under node timeout": second(multilock.Acquire(ctx, cs[0], []string{"a"}, time.Second)),
		"nil fn":                 multilock.Do(ctx, cs[0], []string{"a"}, 10*time.Second, nil),
		"nil fn (TryDo)":         second(multilock.TryDo(ctx, cs[0], []string{"a"}, 10*time.Second, nil)),
	}
	for name, err := range cases {
		if !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	l, err := cs[0].TryAcquire(ctx, "a", 10*time.Second)
	if err != nil {
		t.Fatalf("a bad call left key a taken: %v", err)
	}
	_ = l.Release(ctx)
}

func second[T any](_ T, err error) error { return err }

// nilCtx is a nil context passed on purpose (bad input).
var nilCtx context.Context

// keyWindows records, per key, the validity windows of its holders.
type keyWindows struct {
	mu sync.Mutex
	w  map[string][][2]time.Time
}

func (kw *keyWindows) add(key string, from, to time.Time) {
	kw.mu.Lock()
	defer kw.mu.Unlock()
	kw.w[key] = append(kw.w[key], [2]time.Time{from, to})
}

// overlaps counts pairs of windows of one key that overlap.
func (kw *keyWindows) overlaps() int {
	kw.mu.Lock()
	defer kw.mu.Unlock()
	n := 0
	for _, ws := range kw.w {
		slices.SortFunc(ws, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
		end := time.Time{}
		for _, w := range ws {
			if w[0].Before(end) {
				n++
			}
			if w[1].After(end) {
				end = w[1]
			}
		}
	}
	return n
}

// Overlapping sets given in a cyclic order ({a,b}, {b,c}, {c,a}) all
// complete, and no key has two holders at once. The retry policy never
// runs out in practice, so a deadlock would hang until the guard.
func TestOverlappingSetsMakeProgress(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			cs := clientsOn(t, b, 3, redlock.WithRetry(retry.Constant(1_000_000, 20*time.Millisecond, 20*time.Millisecond)))
			ctx := ctxFor(t, 3*time.Minute)
			k := prefixed(t, "a", "b", "c")
			sets := [][]string{{k[0], k[1]}, {k[1], k[2]}, {k[2], k[0]}}
			const rounds = 30
			kw := &keyWindows{w: map[string][][2]time.Time{}}
			var wg sync.WaitGroup
			done := make([]int, 9)
			for g := range 9 {
				wg.Go(func() {
					for range rounds {
						err := multilock.Do(ctx, cs[g%3], sets[g%3], 5*time.Second, func(ctx context.Context) error {
							set, _ := multilock.FromContext(ctx)
							from := time.Now()
							time.Sleep(2 * time.Millisecond)
							to := time.Now()
							if vu := set.ValidUntil(); vu.Before(to) {
								to = vu
							}
							for _, key := range set.Keys() {
								kw.add(key, from, to)
							}
							return nil
						})
						if err != nil {
							t.Errorf("goroutine %d: %v", g, err)
							return
						}
						done[g]++
					}
				})
			}
			wg.Wait()
			for g, n := range done {
				if n != rounds {
					t.Fatalf("goroutine %d completed %d of %d rounds", g, n, rounds)
				}
			}
			if n := kw.overlaps(); n > 0 {
				t.Fatalf("%d overlapping holders of one key", n)
			}
		})
	}
}

// A key taken first is kept alive while a later key is awaited for longer
// than the TTL: another client probing it is refused the whole time, and
// the set completes once the later key is released.
func TestEarlierKeyKeptWhileWaiting(t *testing.T) {
	cs := clientsOn(t, "redis", 3, redlock.WithNodeTimeout(300*time.Millisecond),
		redlock.WithRetry(retry.Constant(1000, 100*time.Millisecond, 0)))
	ctx := ctxFor(t, 2*time.Minute)
	k := prefixed(t, "a", "b")
	const ttl = 3 * time.Second
	blocker, err := cs[1].Acquire(ctx, k[1], time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		m   *multilock.Lock
		err error
	}
	got := make(chan res, 1)
	go func() {
		m, err := multilock.Acquire(ctx, cs[0], k, ttl)
		got <- res{m, err}
	}()
	// Probe key a until more than two TTLs have passed since it was taken.
	taken := time.Time{}
	probes := 0
	for taken.IsZero() || time.Since(taken) < 2*ttl+time.Second {
		time.Sleep(200 * time.Millisecond)
		_, err := cs[2].TryAcquire(ctx, k[0], ttl)
		switch {
		case errors.Is(err, redlock.ErrNotAcquired):
			if taken.IsZero() {
				taken = time.Now()
			}
			probes++
		case err == nil && taken.IsZero():
			t.Fatal("the probe took key a before the set did") // it would then hold it: no set
		case err == nil:
			t.Fatalf("key a expired while the set waited for b (after %d refused probes)", probes)
		default:
			t.Fatal(err)
		}
	}
	if err := blocker.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("set: %v", r.err)
	}
	if err := r.m.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A key taken first and lost while a later key is awaited (an operator
// force-released it) ends the acquisition with ErrLockLost, and the set
// holds nothing afterwards.
func TestEarlierKeyLostWhileWaiting(t *testing.T) {
	cs := clientsOn(t, "redis", 2, redlock.WithRetry(retry.Constant(1000, 100*time.Millisecond, 0)))
	ctx := ctxFor(t, 2*time.Minute)
	k := prefixed(t, "a", "b")
	blocker, err := cs[1].Acquire(ctx, k[1], time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Release(ctx)
	got := make(chan error, 1)
	go func() {
		_, err := multilock.Acquire(ctx, cs[0], k, 3*time.Second)
		got <- err
	}()
	for {
		info, err := cs[1].Inspect(ctx, k[0])
		if err != nil {
			t.Fatal(err)
		}
		if info.Held {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := cs[1].ForceRelease(ctx, k[0], ""); err != nil {
		t.Fatal(err)
	}
	if err := <-got; !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("set: %v, want ErrLockLost", err)
	}
	l, err := cs[1].TryAcquire(ctx, k[0], 10*time.Second)
	if err != nil {
		t.Fatalf("key a not free after the failed set: %v", err)
	}
	_ = l.Release(ctx)
}

package semaphore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
	"github.com/quorumlock/quorumlock/semaphore"
)

// N permits go to N holders on distinct slots; the N+1st attempt is
// refused; a release frees a permit for the next.
func TestAtMostNPermits(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			cs := clientsOn(t, b, 2)
			ctx := ctxFor(t, 2*time.Minute)
			name := uniqueName(t)
			const n = 3
			var permits []*semaphore.Permit
			slots := map[int]bool{}
			for i := range n {
				sem, err := semaphore.New(cs[i%2], name, n)
				if err != nil {
					t.Fatal(err)
				}
				p, err := sem.TryAcquire(ctx, 30*time.Second)
				if err != nil {
					t.Fatalf("permit %d: %v", i, err)
				}
				if slots[p.Slot()] || p.Slot() < 0 || p.Slot() >= n {
					t.Fatalf("permit %d on slot %d, taken: %v", i, p.Slot(), slots)
				}
				if p.Key() != semaphore.SlotKey(name, p.Slot()) {
					t.Fatalf("key %q, want %q", p.Key(), semaphore.SlotKey(name, p.Slot()))
				}
				slots[p.Slot()] = true
				permits = append(permits, p)
			}
			sem, _ := semaphore.New(cs[1], name, n)
			if _, err := sem.TryAcquire(ctx, 30*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("permit %d: %v, want ErrNotAcquired", n+1, err)
			}
			ran, err := sem.TryDo(ctx, 30*time.Second, func(context.Context) error { return nil })
			if ran || err != nil {
				t.Fatalf("TryDo with all permits held: ran %v, %v", ran, err)
			}
			freed := permits[1].Slot()
			if err := permits[1].Release(ctx); err != nil {
				t.Fatal(err)
			}
			p, err := sem.TryAcquire(ctx, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if p.Slot() != freed {
				t.Fatalf("got slot %d, the free one is %d", p.Slot(), freed)
			}
			for _, q := range append(permits[:1], permits[2], p) {
				if err := q.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// A blocked Acquire is woken by the release of any slot: the retry delay
// (10 minutes) and the holders' TTL (10 minutes) are both far beyond the
// test's 2-minute guard, so only a release notification can end the wait
// with a permit.
func TestAcquireWakesOnReleaseOfAnySlot(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			cs := clientsOn(t, b, 2, redlock.WithRetry(retry.Constant(2, 10*time.Minute, 0)))
			ctx := ctxFor(t, 2*time.Minute)
			name := uniqueName(t)
			holderSem, _ := semaphore.New(cs[0], name, 3)
			var held []*semaphore.Permit
			for range 3 {
				p, err := holderSem.TryAcquire(ctx, 10*time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, p)
			}
			waiterSem, _ := semaphore.New(cs[1], name, 3)
			got := make(chan *semaphore.Permit, 1)
			errc := make(chan error, 1)
			go func() {
				p, err := waiterSem.Acquire(ctx, 10*time.Second)
				got <- p
				errc <- err
			}()
			// Release one slot (not the first: any slot must wake the waiter)
			// once the waiter has had its attempts refused.
			time.Sleep(500 * time.Millisecond)
			freed := held[2].Slot()
			if err := held[2].Release(ctx); err != nil {
				t.Fatal(err)
			}
			p := <-got
			if err := <-errc; err != nil {
				t.Fatalf("waiter: %v", err)
			}
			if p.Slot() != freed {
				t.Fatalf("waiter got slot %d, freed %d", p.Slot(), freed)
			}
			for _, q := range []*semaphore.Permit{held[0], held[1], p} {
				if err := q.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// Do holds a permit while fn runs (its lock is in fn's context, with the
// slot's fence) and releases it afterwards.
func TestDoHoldsAndReleases(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			cs := clientsOn(t, b, 1)
			ctx := ctxFor(t, 2*time.Minute)
			sem, _ := semaphore.New(cs[0], uniqueName(t), 1)
			var fence uint64
			err := sem.Do(ctx, 10*time.Second, func(ctx context.Context) error {
				l, ok := redlock.LockFromContext(ctx)
				if !ok {
					return errors.New("no lock in fn's context")
				}
				fence = l.Fence()
				if _, err := sem.TryAcquire(ctx, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
					return errors.New("second permit of 1 while Do holds it")
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			ran, err := sem.TryDo(ctx, 10*time.Second, func(ctx context.Context) error {
				l, _ := redlock.LockFromContext(ctx)
				if l.Fence() <= fence {
					return errors.New("fence did not grow")
				}
				return nil
			})
			if !ran || err != nil {
				t.Fatalf("TryDo after Do: ran %v, %v", ran, err)
			}
		})
	}
}

// Bad input gets ErrInvalidArgument, never a panic or a hang.
func TestBadInput(t *testing.T) {
	cs := clientsOn(t, "memory", 1)
	for _, c := range []struct {
		name   string
		client *redlock.Client
		sem    string
		n      int
	}{
		{"nil client", nil, "s", 1},
		{"empty name", cs[0], "", 1},
		{"brace in name", cs[0], "a{b", 1},
		{"closing brace in name", cs[0], "a}b", 1},
		{"zero permits", cs[0], "s", 0},
		{"negative permits", cs[0], "s", -3},
		{"too many permits", cs[0], "s", semaphore.MaxPermits + 1},
		{"huge", cs[0], "s", 1 << 40},
		{"name too long for a key", cs[0], strings.Repeat("n", redlock.MaxKeyLength), 1},
	} {
		if _, err := semaphore.New(c.client, c.sem, c.n); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", c.name, err)
		}
	}
	sem, err := semaphore.New(cs[0], "s", semaphore.MaxPermits)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, err := range map[string]error{
		"zero ttl":           second(sem.TryAcquire(ctx, 0)),
		"negative ttl":       second(sem.Acquire(ctx, -time.Second)),
		"nil context":        second(sem.TryAcquire(nilCtx, 10*time.Second)),
		"nil fn":             sem.Do(ctx, time.Second, nil),
		"nil fn of TryDo":    second(sem.TryDo(ctx, time.Second, nil)),
		"ttl under node RTT": second(sem.TryAcquire(ctx, time.Millisecond)),
	} {
		if !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// nilCtx is a nil context passed on purpose (bad input).
var nilCtx context.Context

// A waiter woken by the release of every slot at once keeps one permit and
// releases any other slot it won meanwhile, before Acquire returns: the
// other N-1 slots are free for others right after.
func TestWaiterKeepsOnePermit(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			cs := clientsOn(t, b, 3, redlock.WithRetry(retry.Constant(2, 10*time.Minute, 0)))
			ctx := ctxFor(t, 2*time.Minute)
			name := uniqueName(t)
			const n = 3
			holder, _ := semaphore.New(cs[0], name, n)
			var held []*semaphore.Permit
			for range n {
				p, err := holder.TryAcquire(ctx, 10*time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, p)
			}
			waiter, _ := semaphore.New(cs[1], name, n)
			type res struct {
				p   *semaphore.Permit
				err error
			}
			got := make(chan res, 1)
			go func() {
				p, err := waiter.Acquire(ctx, 30*time.Second)
				got <- res{p, err}
			}()
			time.Sleep(500 * time.Millisecond) // let it wait on every slot
			var released sync.WaitGroup
			for _, p := range held {
				released.Go(func() { _ = p.Release(ctx) })
			}
			r := <-got
			released.Wait()
			if r.err != nil {
				t.Fatal(r.err)
			}
			other, _ := semaphore.New(cs[2], name, n)
			for i := range n - 1 {
				p, err := other.TryAcquire(ctx, 30*time.Second)
				if err != nil {
					t.Fatalf("permit %d of the %d the waiter did not keep: %v", i+1, n-1, err)
				}
				defer p.Release(ctx)
			}
			_ = r.p.Release(ctx)
		})
	}
}

// A permit is a lock: losing it (its slot force-released by an operator)
// cancels Do's work with a cause wrapping ErrLockLost, and Do reports it.
func TestPermitLossCancelsDo(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			cs := clientsOn(t, b, 2)
			ctx := ctxFor(t, 2*time.Minute)
			name := uniqueName(t)
			sem, _ := semaphore.New(cs[0], name, 2)
			var cause error
			err := sem.Do(ctx, 2*time.Second, func(ctx context.Context) error {
				l, _ := redlock.LockFromContext(ctx)
				if _, err := cs[1].ForceRelease(ctx, l.Key(), ""); err != nil {
					return err
				}
				<-ctx.Done() // the watchdog's next extension finds the slot gone
				cause = context.Cause(ctx)
				return nil
			})
			if !errors.Is(err, redlock.ErrLockLost) || !errors.Is(cause, redlock.ErrLockLost) {
				t.Fatalf("Do: %v; work's cause: %v; want both ErrLockLost", err, cause)
			}
		})
	}
}

// The holders of a semaphore's permits are listed by the client's Locks
// with the glob SlotKey(name, "*") would give: name}:slot:*.
func TestPermitsListed(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			cs := clientsOn(t, b, 1, redlock.WithOwner("exporter-1"))
			ctx := ctxFor(t, 2*time.Minute)
			name := "listed-" + b
			sem, _ := semaphore.New(cs[0], name, 3)
			for range 2 {
				p, err := sem.TryAcquire(ctx, 30*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				defer p.Release(ctx)
			}
			n := 0
			for info, err := range cs[0].Locks(ctx, name+"}:slot:*") {
				if err != nil {
					t.Fatal(err)
				}
				if info.Owner != "exporter-1" {
					t.Fatalf("permit %q owner %q", info.Key, info.Owner)
				}
				n++
			}
			if n != 2 {
				t.Fatalf("listed %d permits, 2 are held", n)
			}
		})
	}
}

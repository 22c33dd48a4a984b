package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/semaphore"
)

// slotsFlag is exec's --slots N: hold one of N permits of the semaphore
// KEY (package semaphore) instead of the mutex KEY.
func slotsFlag(fs *flag.FlagSet, a *execArgs) {
	fs.IntVar(&a.slots, "slots", 0, "hold one of N permits of the semaphore KEY")
}

// checkSlots validates --slots: 0 (a mutex) or 1 to semaphore.MaxPermits.
func checkSlots(a *execArgs) error {
	switch {
	case a.slots < 0 || a.slots > semaphore.MaxPermits:
		return usageErr("exec", "--slots %d: want 1 to %d (or no --slots for a lock)", a.slots, semaphore.MaxPermits)
	case a.slots > 0 && strings.ContainsAny(a.key, "{}"):
		return usageErr("exec", "--slots: KEY %q may not contain '{' or '}'", a.key)
	}
	return nil
}

// slotLocker takes a permit of the semaphore KEY of N (--slots N) with
// client; its slot lock is what CMD runs under: REDLOCK_KEY is the slot's
// key, REDLOCK_FENCE the slot's fence.
func slotLocker(client *redlock.Client, a *execArgs) (locker, error) {
	sem, err := semaphore.New(client, a.key, a.slots)
	if err != nil { // a key with braces, say: the library's message
		_ = client.Close()
		return locker{}, err
	}
	permit := func(acquire func(context.Context, time.Duration) (*semaphore.Permit, error)) func(context.Context, string, time.Duration) (*redlock.Lock, error) {
		return func(ctx context.Context, _ string, ttl time.Duration) (*redlock.Lock, error) {
			p, err := acquire(ctx, ttl)
			if err != nil {
				return nil, err
			}
			return p.Lock, nil
		}
	}
	return locker{try: permit(sem.TryAcquire), wait: permit(sem.Acquire), close: client.Close}, nil
}

// heldElsewhere says why -n gave up: a semaphore has N holders, a lock one.
func heldElsewhere(a *execArgs) string {
	if a.slots > 0 {
		return fmt.Sprintf("all %d permits of %q are held", a.slots, a.key)
	}
	return fmt.Sprintf("%q is held by another holder", a.key)
}

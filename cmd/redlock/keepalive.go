package main

import (
	"context"
	"errors"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

// keepAlive extends lock every third of ttl until ctx ends. A failed
// extension is retried every tenth of the TTL while the lock is still valid.
// The returned channel (buffered, written at most once) reports the loss:
// the nodes say the lock is no longer ours, or it could not be extended
// before a safety margin of a tenth of the TTL before its validity ends.
func keepAlive(ctx context.Context, lock *redlock.Lock, ttl time.Duration) <-chan error {
	lost := make(chan error, 1)
	margin := max(ttl/10, 10*time.Millisecond)
	go func() {
		next := ttl / 3
		var lastErr error
		for {
			t := time.NewTimer(next)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			err := lock.Extend(ctx, ttl)
			switch {
			case err == nil:
				next, lastErr = ttl/3, nil
				continue
			case ctx.Err() != nil:
				return
			case errors.Is(err, redlock.ErrLockLost):
				lost <- err
				return
			}
			lastErr = err
			rem := lock.Remaining()
			if rem <= margin {
				lost <- lastErr
				return
			}
			next = min(max(ttl/10, 10*time.Millisecond), rem-margin)
		}
	}()
	return lost
}

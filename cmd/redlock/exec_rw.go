package main

import (
	"context"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/rwlock"
)

// locker is how exec takes its lock: one attempt (-n) or a wait.
type locker struct {
	try, wait func(ctx context.Context, key string, ttl time.Duration) (*redlock.Lock, error)
	close     func() error
}

// newLocker is exec's lock: the mutex of KEY by default; with --shared or
// --exclusive the read-write lock of KEY (package rwlock), as a reader or
// the writer; with --slots N a permit of the semaphore KEY (slots.go). The read-write lock and the mutex of one key are two
// different locks: a plain exec does not exclude a --shared one.
func newLocker(nodes []node.Node, a *execArgs) (locker, error) {
	opts := []redlock.Option{redlock.WithKeyPrefix(a.prefix), redlock.WithOwner(a.owner), redlock.WithRecoveryPeriod(a.recovery)}
	if a.shared || a.exclusive {
		c, err := rwlock.New(nodes, opts...)
		if err != nil {
			return locker{}, err
		}
		if a.shared {
			return locker{try: c.TryRLock, wait: c.RLock, close: c.Close}, nil
		}
		return locker{try: c.TryLock, wait: c.Lock, close: c.Close}, nil
	}
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		return locker{}, err
	}
	if a.slots > 0 {
		return slotLocker(c, a)
	}
	return locker{try: c.TryAcquire, wait: c.Acquire, close: c.Close}, nil
}

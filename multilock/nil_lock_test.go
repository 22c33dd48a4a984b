package multilock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/quorumlock/quorumlock/multilock"
	"github.com/quorumlock/quorumlock/redlock"
)

// The methods of a nil *Lock (what a failed Acquire returns) do not panic:
// Release and Err return ErrLockLost, Done is closed, the rest are zero.
func TestNilLockDoesNotPanic(t *testing.T) {
	var m *multilock.Lock
	if err := m.Release(context.Background()); !errors.Is(err, redlock.ErrLockLost) {
		t.Errorf("Release = %v; want ErrLockLost", err)
	}
	if err := m.Err(); !errors.Is(err, redlock.ErrLockLost) {
		t.Errorf("Err = %v; want ErrLockLost", err)
	}
	<-m.Done()
	ctx, cancel := m.Context(context.Background())
	defer cancel()
	if !errors.Is(context.Cause(ctx), redlock.ErrLockLost) {
		t.Errorf("Context's cause = %v; want ErrLockLost", context.Cause(ctx))
	}
	if m.Keys() != nil || m.Fence("a") != 0 || !m.ValidUntil().IsZero() {
		t.Error("Keys, Fence or ValidUntil not zero")
	}
}

package semaphore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/semaphore"
)

// Release and Extend of a nil *Permit (what a failed Acquire returns)
// return ErrLockLost instead of panicking.
func TestNilPermitReleaseAndExtend(t *testing.T) {
	var p *semaphore.Permit
	if err := p.Release(context.Background()); !errors.Is(err, redlock.ErrLockLost) {
		t.Errorf("Release = %v; want ErrLockLost", err)
	}
	if err := p.Extend(context.Background(), time.Second); !errors.Is(err, redlock.ErrLockLost) {
		t.Errorf("Extend = %v; want ErrLockLost", err)
	}
}

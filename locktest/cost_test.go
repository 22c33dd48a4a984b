//go:build unix

package locktest_test

import (
	"errors"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/locktest"
	"github.com/quorumlock/quorumlock/redlock"
)

// A 30 s TTL kept, lost (no majority left) and taken again 100 times: an
// hour and more of the bubble's time. It logs the CPU time it took (a
// measure, not a verdict: the verdict counts losses and acquisitions).
func TestThirtySecondTTLLostAndReacquired100Times(t *testing.T) {
	before := cpuTime()
	var span time.Duration
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		q := locktest.NewQuorum(t, 3)
		c := once(q)
		lost := 0
		for range 100 {
			l, err := c.TryAcquire(t.Context(), "k", ttl)
			if err != nil {
				t.Fatalf("after %d losses: %v", lost, err)
			}
			stop := l.KeepAlive()
			time.Sleep(ttl) // kept past its TTL
			q.LoseMajority()
			<-l.Done()
			stop()
			if errors.Is(l.Err(), redlock.ErrLockLost) {
				lost++
			}
			q.Restore()
			time.Sleep(ttl) // the keys left on the stopped nodes expire
		}
		if lost != 100 {
			t.Fatalf("%d losses of 100", lost)
		}
		span = time.Since(start)
	})
	t.Logf("100 losses of a 30s TTL: %v of the bubble's time in %v of CPU time", span, cpuTime()-before)
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

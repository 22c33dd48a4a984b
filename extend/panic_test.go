package extend_test

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A renew function that panics (a store's client that could not decode a
// reply) fails that round's renewals, which are retried, instead of ending
// the process: the lease is renewed by the next round and never lost.
func TestWatchdogSurvivesPanickingRenew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rounds atomic.Int32
		r := &renewer{fail: func(n int) error {
			rounds.Add(1)
			if n == 0 {
				panic("makeslice: len out of range")
			}
			return nil
		}}
		w := newWatchdog(t, r.Renew)
		l := newLease(3 * time.Second)
		var lost atomic.Bool
		stop := w.Keep(l, func(error) { lost.Store(true) })
		time.Sleep(3 * time.Second)
		stop()
		if n := rounds.Load(); n < 2 {
			t.Fatalf("%d renew rounds, want the panicking one and a retry", n)
		}
		if lost.Load() {
			t.Fatal("declared lost although the retry renewed it")
		}
	})
}

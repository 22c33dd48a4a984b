package main

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// TestCycleKeysCountComesBack runs the scale scenario's key-count check on
// real nodes with a short fence retention (the count must come back to 0),
// and with the default retention of 24h as the broken variant: the counters
// stay, and the check must say so.
func TestCycleKeysCountComesBack(t *testing.T) {
	cl := redistest.StartT(t, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // hang guard
	defer cancel()
	const n, ttl = 300, time.Second

	c, cs, err := scaleClient(cl.Addrs(), scaleDB, redlock.WithFenceRetention(time.Second),
		redlock.WithRecoveryPeriod(0)) // as the scenario: a retention shorter than the recovery period
	if err != nil {
		t.Fatal(err)
	}
	k, err := cycleKeys(ctx, c, cs, n, ttl, time.Second, time.Minute)
	closeScale(c, cs)
	if err != nil {
		t.Fatal(err)
	}
	if k.before != 0 || k.afterRelease == 0 || !k.back() || k.final != 0 {
		t.Errorf("short retention: %+v, want 0 keys before, some right after, 0 at the end", k)
	}

	c, cs, err = scaleClient(cl.Addrs(), scaleHeldDB, // default retention: 24h
		redlock.WithRecoveryPeriod(0)) // the key count is the subject, not recovery
	if err != nil {
		t.Fatal(err)
	}
	defer closeScale(c, cs)
	k, err = cycleKeys(ctx, c, cs, n, ttl, time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Each key's fence counter stays on the majority (at least) that took it.
	if k.back() || k.final < n*3 {
		t.Errorf("default retention: %+v, want the check to fail with at least %d counters left", k, n*3)
	}
}

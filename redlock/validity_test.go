package redlock_test

import (
	"testing"
	"time"
)

// TestValidityIsTTLLessDriftFromTheAttemptStart: an acquired lock is valid
// until its attempt's start + ttl - (ttl*0.01 + 2ms) with the default drift
// factor, the README's formula: never later than that counted from when the
// call returned, never earlier than that counted from when it was made.
func TestValidityIsTTLLessDriftFromTheAttemptStart(t *testing.T) {
	t.Parallel()
	_, c := start(t, 3)
	ctx := ctxFor(t)
	const ttl = 10 * time.Second
	drift := time.Duration(float64(ttl)*0.01) + 2*time.Millisecond
	for range 5 {
		began := time.Now()
		l, err := c.TryAcquire(ctx, uniqueKey(t), ttl)
		ended := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		vu := l.ValidUntil()
		if vu.Before(began.Add(ttl-drift)) || vu.After(ended.Add(ttl-drift)) {
			t.Fatalf("ValidUntil %v, want within [%v, %v]: the attempt's start + ttl - drift",
				vu, began.Add(ttl-drift), ended.Add(ttl-drift))
		}
		if rem := l.Remaining(); rem > ttl-drift {
			t.Fatalf("Remaining %s, want at most ttl - drift = %s", rem, ttl-drift)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

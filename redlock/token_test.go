package redlock_test

import (
	"encoding/base64"
	"testing"
	"time"
)

// Rule 1: every acquisition gets its own token of at least 128 random bits,
// and that token is what the nodes hold.
func TestRuleTokenIs128RandomBits(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3)
	ctx := ctxFor(t)
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		key := uniqueKey(t)
		l, err := c.TryAcquire(ctx, key, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := base64.RawURLEncoding.DecodeString(l.Token())
		if err != nil || len(raw) < 16 {
			t.Fatalf("token %q is not >= 16 random bytes (%v)", l.Token(), err)
		}
		if seen[l.Token()] {
			t.Fatalf("token %q handed out twice", l.Token())
		}
		seen[l.Token()] = true
		if h := holders(t, cl, c.KeyName(key)); countEqual(h, l.Token()) < c.Quorum() {
			t.Fatalf("nodes hold %v, want the token on a majority", h)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

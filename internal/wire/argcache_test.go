package wire

import (
	"sync"
	"sync/atomic"
	"testing"
)

// One call sent to several nodes at once is built once; another call is
// built again, and each caller gets what its own arguments build.
func TestCacheSharesOneCallsBuild(t *testing.T) {
	c := NewCache[string, string]()
	var builds atomic.Int64
	build := func(k string) string { builds.Add(1); return "built " + k }
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if got := c.Get("a", "token-a", build); got != "built a" {
				t.Errorf("Get(a) = %q", got)
			}
		})
	}
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Errorf("5 concurrent Gets of one call built %d times, want 1", n)
	}
	for _, k := range []string{"b", "a", "b"} {
		if got := c.Get(k, "same-token", build); got != "built "+k {
			t.Errorf("Get(%s) = %q, want what %s builds", k, got, k)
		}
	}
}

func TestKeysOfMatchesTheKeyNames(t *testing.T) {
	for _, tc := range []struct{ name, token string }{{"lock:{k}", "tok"}, {"p{}", ""}, {"", "t"}} {
		k := KeysOf(tc.name, tc.token)
		want := LockKeys{tc.name, TombstoneKey(tc.name, tc.token)}
		if k != want {
			t.Errorf("KeysOf(%q, %q) = %+v, want %+v", tc.name, tc.token, k, want)
		}
	}
}

package redlock

import (
	"math/rand/v2"
	"slices"
	"testing"
	"testing/cryptotest"
	"time"
)

// The split-vote jitter follows crypto/rand, so a test that fixes
// crypto/rand's source (as locktest's schedules do) fixes it too: two runs
// from one seed draw the same delays, within [0, n).
func TestSplitJitterIsFixedByCryptotestSeed(t *testing.T) {
	const n = 3 * time.Millisecond
	draw := func(seed uint64) []time.Duration {
		var ds []time.Duration
		t.Run("", func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, seed)
			for range 16 {
				ds = append(ds, splitJitter(n))
			}
		})
		return ds
	}
	a, b := draw(7), draw(7)
	if !slices.Equal(a, b) {
		t.Fatalf("two runs from one seed drew %v and %v", a, b)
	}
	for _, d := range a {
		if d < 0 || d >= n {
			t.Fatalf("drew %v, want within [0, %v)", d, n)
		}
	}
	if slices.Equal(a, draw(8)) {
		t.Fatalf("seeds 7 and 8 drew the same %v", a)
	}
	if splitJitter(0) != 0 || splitJitter(-time.Second) != 0 {
		t.Fatal("a jitter of nothing is not 0")
	}
}

// The split-vote jitter's cost against math/rand/v2's, which it replaced:
// a split is resolved after a round trip, so a draw under a microsecond
// does not count.
func BenchmarkSplitJitter(b *testing.B) {
	const n = 1500 * time.Microsecond
	b.Run("crypto-rand", func(b *testing.B) {
		for b.Loop() {
			_ = splitJitter(n)
		}
	})
	b.Run("math-rand-v2", func(b *testing.B) {
		for b.Loop() {
			_ = rand.N(n)
		}
	})
}

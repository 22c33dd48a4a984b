package redlock

import (
	"crypto/rand"
	"encoding/binary"
	"time"
)

// splitJitter is uniform in [0, n) for n > 0, drawn from crypto/rand
// rather than math/rand: a test that fixes crypto/rand (as
// testing/cryptotest does, and locktest's schedules with it) then fixes
// who wins a split vote, so a schedule that splits replays. The draw costs
// well under a microsecond, on a path that already waits a round trip.
func splitJitter(n time.Duration) time.Duration {
	if n <= 0 {
		return 0
	}
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+ it panics instead of erring)
	// The modulo's bias is under n/2^64: nothing for delays of seconds.
	return time.Duration(binary.LittleEndian.Uint64(b[:]) % uint64(n))
}

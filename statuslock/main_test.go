package statuslock_test

import (
	"testing"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	redistest.CaptureRedisLogs() // tests kill nodes on purpose: go-redis logs each failed dial, shown for failing tests only
	goleak.VerifyTestMain(m,
		// After a failed dial to a killed node, go-redis probes it again
		// from a goroutine that sleeps a second first; it is go-redis's,
		// not ours, and ends on its own.
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

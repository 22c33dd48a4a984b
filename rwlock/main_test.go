package rwlock_test

import (
	"testing"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	redistest.CaptureRedisLogs() // tests kill nodes on purpose
	goleak.VerifyTestMain(m,
		// go-redis re-dials a killed node from a goroutine of its own.
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

package tick_test

import (
	"testing"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	redistest.CaptureRedisLogs() // the crash tests kill processes on purpose
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

package lockdesc_test

import (
	"testing"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	redistest.CaptureRedisLogs()
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

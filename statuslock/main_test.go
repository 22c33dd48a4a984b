package statuslock_test

import (
	"testing"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	redistest.DiscardRedisLogs() // tests kill nodes on purpose
	goleak.VerifyTestMain(m)
}

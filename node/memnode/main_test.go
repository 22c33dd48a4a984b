package memnode_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// After a failed dial to a killed node, go-redis probes it again
		// from a goroutine that sleeps a second first; it is go-redis's,
		// not ours, and ends on its own.
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

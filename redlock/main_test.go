package redlock_test

import (
	"flag"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Most tests wait on their own redis-server nodes and timers, not on
	// the CPU: without the race detector, run 8 at once unless -parallel
	// says otherwise. Under -race (make test) each step costs several
	// times more CPU, and tests whose nodes must answer within a node
	// timeout run one at a time, as on a quiet machine. Under -short
	// (make check) only the quick tests run: the default suits them.
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		switch {
		case raceEnabled:
			_ = flag.Set("test.parallel", "1")
		case !testing.Short():
			_ = flag.Set("test.parallel", "8")
		}
	}
	goleak.VerifyTestMain(m,
		// After a failed dial to a killed node, go-redis probes it again
		// from a goroutine that sleeps a second first; it is go-redis's,
		// not ours, and ends on its own.
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

package wake

import (
	"testing"

	"go.uber.org/goleak"
)

// A Hub starts goroutines through its nodes' subscriptions and watchers:
// none may outlive Close or the watcher's context.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

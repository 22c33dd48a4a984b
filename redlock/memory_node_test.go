package redlock_test

import (
	"testing"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/redlock/redlocktest"
)

func TestMemoryNodeConformance(t *testing.T) {
	redlocktest.RunNodeConformance(t, func(t *testing.T) redlock.Node { return redlock.NewMemoryNode("mem") })
}

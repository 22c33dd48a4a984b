package redlock_test

import (
	"testing"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/redlock/redlocktest"
)

// The Redis node passes the same contract as the memory node, on a real
// redis-server.
func TestRedisNodeConformance(t *testing.T) {
	cl := redistest.StartT(t, 1)
	redlocktest.RunNodeConformance(t, func(t *testing.T) redlock.Node {
		return redlock.NewRedisNode(cl.Clients()[0])
	})
}

package miniredistest

import (
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/nodetest"
	"github.com/quorumlock/quorumlock/node/redisnode"
)

// startMiniredis starts a miniredis server whose clock follows real time:
// miniredis expires keys only when its clock is moved (FastForward), so a
// goroutine moves it by the real time passed, every millisecond.
func startMiniredis(t *testing.T) (*miniredis.Miniredis, *redis.Client) {
	t.Helper()
	m := miniredis.RunT(t)
	followRealTime(t, m)
	return clientOf(t, m)
}

func clientOf(t *testing.T, m *miniredis.Miniredis) (*miniredis.Miniredis, *redis.Client) {
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return m, c
}

func followRealTime(t *testing.T, m *miniredis.Miniredis) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		last := time.Now()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-tick.C:
				m.FastForward(now.Sub(last))
				last = now
			}
		}
	})
	t.Cleanup(func() { close(stop); wg.Wait() })
}

// The conformance suite on miniredis, one server per case, its clock
// following real time.
func TestConformanceOnMiniredis(t *testing.T) {
	nodetest.Run(t, func(t *testing.T) node.Node {
		_, c := startMiniredis(t)
		return redisnode.New(c)
	})
}

package locktest_test

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/defaults"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/locktest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// faultyNodes is three nodes with the faults both kinds of node have.
type faultyNodes struct {
	client       *redlock.Client
	servers      []server // the servers themselves, for reading their state
	pause        func(i int)
	resume       func(i int)
	restartEmpty func(i int)
}

func memoryNodes(t *testing.T) faultyNodes {
	q := locktest.NewQuorum(t, 3)
	f := faultyNodes{
		client:       once(q),
		pause:        func(i int) { q.Node(i).Pause() },
		resume:       func(i int) { q.Node(i).Resume() },
		restartEmpty: func(i int) { q.Node(i).RestartEmpty() },
	}
	for _, nd := range q.Nodes() {
		f.servers = append(f.servers, nd.Memory())
	}
	return f
}

func redisNodes(t *testing.T) faultyNodes {
	cl := redistest.StartT(t, 3)
	ns := cl.Nodes()
	f := faultyNodes{
		pause:  func(i int) { must(t, ns[i].Pause()) },
		resume: func(i int) { must(t, ns[i].Resume()) },
		restartEmpty: func(i int) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			must(t, ns[i].Restart(ctx))
		},
	}
	for _, c := range cl.Clients() {
		f.servers = append(f.servers, redisnode.New(c))
	}
	f.client = newRealTimeClient(t, nodesOf(f.servers))
	return f
}

func nodesOf(servers []server) []node.Node {
	out := make([]node.Node, len(servers))
	for i, s := range servers {
		out[i] = s
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// The same scenarios on memory nodes and on real redis-server nodes
// (SIGSTOP and SIGCONT, a restart without persistence): the memory
// node's faults behave as the real ones.
func TestFaultsMatchRealNodes(t *testing.T) {
	for name, start := range map[string]func(*testing.T) faultyNodes{"memory": memoryNodes, "redis": redisNodes} {
		t.Run(name+"/pause", func(t *testing.T) {
			f := start(t)
			c := f.client
			f.pause(0)
			if _, err := c.TryAcquire(t.Context(), "k", ttl); err != nil {
				t.Fatalf("two of three nodes answer: %v", err)
			}
			if !serverHolds(t, f.servers[1], "k") {
				t.Fatal("the acquisition is not on a running node")
			}
			f.resume(0)
			waitFor(t, "the held-back acquire to land", func() bool { return serverHolds(t, f.servers[0], "k") })
		})
		t.Run(name+"/restart-empty", func(t *testing.T) {
			f := start(t)
			c := f.client
			if _, err := c.TryAcquire(t.Context(), "k", ttl); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the key on every node", func() bool {
				return serverHolds(t, f.servers[0], "k") && serverHolds(t, f.servers[1], "k") && serverHolds(t, f.servers[2], "k")
			})
			f.restartEmpty(0)
			waitFor(t, "the restarted node to answer", func() bool {
				_, err := f.servers[0].Inspect(t.Context(), "x")
				return err == nil
			})
			if serverHolds(t, f.servers[0], "k") || !serverHolds(t, f.servers[1], "k") {
				t.Fatal("the restart did not lose the key on its node only")
			}
		})
	}
}

func newRealTimeClient(t *testing.T, nodes []node.Node) *redlock.Client {
	c, err := redlock.New(nodes, redlock.WithRetry(retry.Never()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func serverHolds(t *testing.T, n server, key string) bool {
	t.Helper()
	h, err := n.Inspect(context.Background(), defaults.KeyPrefix+"{"+key+"}")
	return err == nil && h.Token != ""
}

// waitFor polls cond; only a hang (minutes) fails it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// server is a lock server the tests read the state of.
type server interface {
	node.Node
	node.Inspector
}

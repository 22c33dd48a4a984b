package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// commandCalls reads INFO commandstats of every node: calls per command
// (commands run inside scripts included), summed over the nodes, without
// the commands of the harness and of connection setup.
func commandCalls(t *testing.T, cl *redistest.Cluster) map[string]int {
	t.Helper()
	calls := map[string]int{}
	for _, n := range cl.Nodes() {
		info, err := n.Client().Info(context.Background(), "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(info) {
			name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
			name, isCmd := strings.CutPrefix(name, "cmdstat_")
			if !ok || !isCmd {
				continue
			}
			switch name {
			case "info", "config|resetstat", "hello", "client|setinfo", "ping":
				continue
			}
			for kv := range strings.SplitSeq(stats, ",") {
				if v, ok := strings.CutPrefix(kv, "calls="); ok {
					k, err := strconv.Atoi(v)
					if err != nil {
						t.Fatal(err)
					}
					calls[name] += k
				}
			}
		}
	}
	return calls
}

func resetStats(t *testing.T, cl *redistest.Cluster) {
	t.Helper()
	for _, n := range cl.Nodes() {
		if err := n.Client().ConfigResetStat(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// releasedNode reports each Release it returned from.
type releasedNode struct {
	Node
	released chan<- struct{}
}

func (r releasedNode) Release(ctx context.Context, a node.ReleaseArgs) (bool, error) {
	ok, err := r.Node.Release(ctx, a)
	r.released <- struct{}{}
	return ok, err
}

// The server commands of one uncontended TryAcquire + Release, counted as
// INFO commandstats counts them (each EVALSHA and each command its script
// runs): at most 7 per node (35 on 5 nodes) for a key used before: the
// acquire's EVALSHA, MGET (the key's record, the token's tombstone, the
// node's standing record), TIME and SET of the record; the release's
// EVALSHA, GET and SET (a PUBLISH only for a holding a waiter found held).
// A new key costs one EXISTS more (8). A plain Redlock (SET NX PX, then a compare-and-delete script:
// GET, DEL) runs 4 per node. The breakdown is logged (go test -v).
func TestCommandsPerCycle(t *testing.T) {
	t.Parallel()
	const cycles = 20
	for _, tc := range []struct {
		name  string
		nodes int
		key   func(i int) string
		max   int // per cycle
	}{
		{"same key", 5, func(int) string { return "cmds" }, 35},
		// On one node: on several, the new counters may start apart (see
		// "Fences": a seed that arrives late starts from the node's
		// clock), and the fence settle's round then adds its commands.
		{"new keys", 1, func(i int) string { return fmt.Sprintf("cmds-%d", i) }, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := redistest.StartT(t, tc.nodes)
			ctx := ctxFor(t)
			released := make(chan struct{}, tc.nodes)
			nodes := nodesOf(cl)
			for i := range nodes {
				nodes[i] = releasedNode{Node: nodes[i].(Node), released: released}
			}
			counted, err := redlock.New(nodes) // identifies the nodes with INFO, which is not counted
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = counted.Close() })
			run := func(keys ...string) {
				for _, key := range keys {
					l, err := counted.TryAcquire(ctx, key, 10*time.Second)
					if err != nil {
						t.Fatal(err)
					}
					if err := l.Release(ctx); err != nil {
						t.Fatal(err)
					}
					for range nodes { // the cycle's last request landed
						<-released
					}
				}
			}
			// The warm-up loads the scripts and uses "cmds" before; its
			// client closes to wait for its requests, even a background
			// undo's (a yes counts only from a node identified).
			c, err := redlock.New(nodesOf(cl))
			if err != nil {
				t.Fatal(err)
			}
			for !c.Identified() {
				warm, err := c.TryAcquire(ctx, "cmds", 10*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				_ = warm.Release(ctx)
			}
			_ = c.Close()
			// The counters of "cmds" may have started apart (see above):
			// make them agree, as a fence settle would, so that no
			// settle round runs in the count.
			name := c.KeyName("cmds")
			var top uint64
			for _, n := range cl.Nodes() {
				top = max(top, countOf(ctx, n.Client(), name))
			}
			for _, n := range cl.Nodes() {
				setCount(t, ctx, n.Client(), name, top)
			}
			for !counted.Identified() { // before its first attempt, so that every yes counts
				if _, err := counted.Inspect(ctx, "cmds"); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Millisecond)
			}
			resetStats(t, cl)
			keys := make([]string, cycles)
			for i := range keys {
				keys[i] = tc.key(i)
			}
			run(keys...)
			calls := commandCalls(t, cl)
			total := 0
			var parts []string
			for _, name := range slices.Sorted(maps.Keys(calls)) {
				total += calls[name]
				parts = append(parts, fmt.Sprintf("%s %.1f", name, float64(calls[name])/cycles))
			}
			perCycle := float64(total) / cycles
			t.Logf("%s: %.1f commands per cycle on %d nodes: %s", tc.name, perCycle, tc.nodes, strings.Join(parts, ", "))
			if perCycle > float64(tc.max) {
				t.Fatalf("%s: %.1f commands per cycle, want at most %d (%s)", tc.name, perCycle, tc.max, strings.Join(parts, ", "))
			}
		})
	}
}

// acquiredNode reports each Acquire it returned from.
type acquiredNode struct {
	Node
	acquired chan<- struct{}
}

func (a acquiredNode) Acquire(ctx context.Context, args node.AcquireArgs) (node.AcquireReply, error) {
	r, err := a.Node.Acquire(ctx, args)
	a.acquired <- struct{}{}
	return r, err
}

// The server commands of attempts that find the key held by another
// client, counted as TestCommandsPerCycle counts them, three per holding:
// one that does not wait (TryAcquire), then two that do (Acquire with one
// attempt). The acquire script reads (MGET, TIME); the first waiting
// attempt marks the holding (one SET per node and holding), the others
// write nothing. The breakdown is logged (go test -v).
func TestCommandsPerContendedAttempt(t *testing.T) {
	t.Parallel()
	const attempts, nodeCount = 20, 3
	cl := redistest.StartT(t, nodeCount)
	ctx := ctxFor(t)
	holder := newClient(t, nodesOf(cl))
	acquired := make(chan struct{}, 3*nodeCount) // the three attempts of a holding
	nodes := nodesOf(cl)
	for i := range nodes {
		nodes[i] = acquiredNode{Node: nodes[i].(Node), acquired: acquired}
	}
	waiter := newClient(t, nodes)
	const key = "contended-cmds"
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, err := waiter.Released(wctx, key); err != nil {
		t.Fatal(err)
	}
	calls := map[string]int{}
	for i := range attempts + 1 { // the first loads the scripts and writes the marker
		l, err := holder.TryAcquire(ctx, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		_ = holder.Close() // its last request has landed: not counted below
		before := commandCalls(t, cl)
		if _, err := waiter.TryAcquire(ctx, key, time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("attempt on a held key: %v, want ErrNotAcquired", err)
		}
		for range 2 {
			if _, err := waiter.Acquire(redlock.ContextWithRetry(ctx, retry.Never()), key, time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("waiting attempt on a held key: %v, want ErrNotAcquired", err)
			}
		}
		for range 3 * len(nodes) { // the attempts' last requests landed
			<-acquired
		}
		after := commandCalls(t, cl)
		if i > 0 {
			for name, n := range after {
				calls[name] += n - before[name]
			}
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(calls)) {
		if calls[name] == 0 {
			continue
		}
		total += calls[name]
		parts = append(parts, fmt.Sprintf("%s %.2f", name, float64(calls[name])/attempts/nodeCount))
	}
	t.Logf("%.2f commands per holding (3 attempts) per node: %s", float64(total)/attempts/nodeCount, strings.Join(parts, ", "))
	// The holder's previous release may land in the window (a straggler: its
	// GET and SET); the acquire script reads with MGET, so GETs count them.
	if w := float64(calls["set"]-calls["get"]) / attempts / nodeCount; w < 0.9 || w >= 1.5 {
		t.Errorf("%.2f SETs per holding per node over 3 contended attempts, want 1: the first waiting attempt's mark", w)
	}
}

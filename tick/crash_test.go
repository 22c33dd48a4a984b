package tick_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/tick"
)

// runnerEnv tells the test binary to be the runner process of the crash
// tests: "addr,addr,...|job|tick|mode|claim ttl".
const runnerEnv = "TICK_TEST_RUNNER"

const crashClaimTTL = 4 * time.Second

// TestHelperRunner is the runner process: it claims the tick, prints its
// fence, and runs until it is killed.
func TestHelperRunner(t *testing.T) {
	spec := os.Getenv(runnerEnv)
	if spec == "" {
		t.Skip("only as the runner process of the crash tests")
	}
	f := strings.Split(spec, "|")
	var nodes []node.Node
	for _, addr := range strings.Split(f[0], ",") {
		nodes = append(nodes, redisnode.New(redis.NewClient(&redis.Options{Addr: addr})))
	}
	c, err := redlock.New(nodes, redlock.WithOwner("killed-runner"), redlock.WithNodeTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	mode, _ := strconv.Atoi(f[3])
	ttl, _ := time.ParseDuration(f[4])
	_, err = tick.Run(context.Background(), c, f[1], tick.Named(f[2]), func(ctx context.Context) error {
		l, _ := redlock.LockFromContext(ctx)
		fmt.Printf("RUNNING %d\n", l.Fence())
		select {} // until killed
	}, tick.WithMode(tick.Mode(mode)), tick.WithClaimTTL(ttl))
	t.Fatalf("the runner returned: %v", err)
}

// killedRunner runs the tick in a process of its own and kills it
// (SIGKILL) while the job runs; it returns the runner's fence.
func killedRunner(t *testing.T, cl *redistest.Cluster, job, tickName string, mode tick.Mode) uint64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRunner$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%s|%d|%s", runnerEnv, strings.Join(cl.Addrs(), ","), job, tickName, mode, crashClaimTTL))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f, ok := strings.CutPrefix(sc.Text(), "RUNNING "); ok {
			fence, _ := strconv.ParseUint(f, 10, 64)
			_ = cmd.Process.Kill() // SIGKILL: no release, no finish
			_ = cmd.Wait()
			return fence
		}
	}
	t.Fatal("the runner process never ran the job")
	return 0
}

// afterClaimExpires calls Run until the killed runner's claim has expired
// (the result is no longer Running); hang guard: ctx.
func afterClaimExpires(t *testing.T, ctx context.Context, c *redlock.Client, job, tickName string, fn func(context.Context) error, mode tick.Mode) tick.Result {
	t.Helper()
	for {
		res, err := tick.Run(ctx, c, job, tick.Named(tickName), fn, tick.WithMode(mode), tick.WithClaimTTL(crashClaimTTL))
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != tick.Running {
			return res
		}
		select {
		case <-ctx.Done():
			t.Fatal("the killed runner's claim never expired")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// fencedStore refuses writes whose fence is below one it has seen.
type fencedStore struct {
	mu  sync.Mutex
	max uint64
}

func (s *fencedStore) write(fence uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fence < s.max {
		return false
	}
	s.max = fence
	return true
}

// TestAtLeastOnceRerunsAKilledRunnersTickOnce: the runner is killed mid-job;
// the tick runs once more, on another replica, with a larger fence, and the
// killed runner's late write with its fence is refused. Later replicas find
// it done.
func TestAtLeastOnceRerunsAKilledRunnersTickOnce(t *testing.T) {
	cl := redistest.StartT(t, 3)
	cs := clientsOn(t, nodesOf(cl), 2)
	ctx, job, tickName := ctxFor(t, 5*time.Minute), jobName(t), "2026-01-02T03:04"
	killed := killedRunner(t, cl, job, tickName, tick.AtLeastOnce)
	store, runs := &fencedStore{}, 0
	fn := func(ctx context.Context) error {
		runs++
		l, _ := redlock.LockFromContext(ctx)
		store.write(l.Fence())
		return nil
	}
	res := afterClaimExpires(t, ctx, cs[0], job, tickName, fn, tick.AtLeastOnce)
	if res.Status != tick.Rerun || !res.Ran || res.Fence <= killed || res.Record.Fence != killed || res.Record.Runner != "killed-runner" {
		t.Fatalf("after the kill (fence %d): %s", killed, res)
	}
	if store.write(killed) {
		t.Fatal("the killed runner's late write was accepted")
	}
	again := afterClaimExpires(t, ctx, cs[1], job, tickName, fn, tick.AtLeastOnce)
	if again.Status != tick.Done || again.Record.Fence != res.Fence || runs != 1 {
		t.Fatalf("after the rerun: %s; the job ran %d times here", again, runs)
	}
}

// TestAtMostOnceNeverRerunsAKilledRunnersTick: the same kill; no replica
// runs the tick again, and they report it "claimed, not finished".
func TestAtMostOnceNeverRerunsAKilledRunnersTick(t *testing.T) {
	cl := redistest.StartT(t, 3)
	cs := clientsOn(t, nodesOf(cl), 2)
	ctx, job, tickName := ctxFor(t, 5*time.Minute), jobName(t), "2026-01-02T03:04"
	killed := killedRunner(t, cl, job, tickName, tick.AtMostOnce)
	runs := 0
	fn := func(context.Context) error { runs++; return nil }
	for _, c := range cs {
		res := afterClaimExpires(t, ctx, c, job, tickName, fn, tick.AtMostOnce)
		if res.Status != tick.Unfinished || res.Ran || res.Record.Fence != killed || res.Record.Runner != "killed-runner" || !res.Record.Finished.IsZero() {
			t.Fatalf("after the kill (fence %d): %s", killed, res)
		}
	}
	if runs != 0 {
		t.Fatalf("the tick ran %d more times", runs)
	}
}

func nodesOf(cl *redistest.Cluster) []node.Node {
	var nodes []node.Node
	for _, rc := range cl.Clients() {
		nodes = append(nodes, redisnode.New(rc))
	}
	return nodes
}

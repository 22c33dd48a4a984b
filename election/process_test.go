package election_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/election"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/statuslock"
)

// leaderEnv tells the test binary to be the leader process of the tests
// below: "addr,addr,...|election|value|ttl".
const leaderEnv = "ELECTION_TEST_LEADER"

// leaderProcess is a candidate in a process of its own: a real crash
// (SIGKILL) or pause (SIGSTOP) of a leader, which no goroutine can fake.
type leaderProcess struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Scanner
	fence uint64
}

// startLeader starts the leader process and waits until it leads.
func startLeader(t *testing.T, ctx context.Context, cl *redistest.Cluster, name, value string, ttl time.Duration) *leaderProcess {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperLeader$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%s|%s", leaderEnv, strings.Join(cl.Addrs(), ","), name, value, ttl))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &leaderProcess{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if f, ok := strings.CutPrefix(p.line(), "LEADING "); ok {
		p.fence, _ = strconv.ParseUint(f, 10, 64)
	}
	if p.fence == 0 {
		t.Fatal("the leader process never reported its term")
	}
	return p
}

func (p *leaderProcess) line() string {
	if p.out.Scan() {
		return p.out.Text()
	}
	return ""
}

// TestHelperLeader is the leader process: it campaigns, reports its fence,
// and on "WRITE" writes its fence to a fenced store on the first node,
// whether or not it still leads (a write already on its way when the
// process was paused).
func TestHelperLeader(t *testing.T) {
	spec := os.Getenv(leaderEnv)
	if spec == "" {
		t.Skip("only as the leader process of the takeover and pause tests")
	}
	parts := strings.Split(spec, "|")
	addrs := strings.Split(parts[0], ",")
	ttl, _ := time.ParseDuration(parts[3])
	var nodes []node.Node
	for _, a := range addrs {
		nodes = append(nodes, redisnode.New(redis.NewClient(&redis.Options{Addr: a, ContextTimeoutEnabled: true})))
	}
	c, err := redlock.New(nodes, redlock.WithNodeTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	e, err := election.New(c, parts[1], election.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	term, err := e.Campaign(ctx, parts[2])
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("LEADING %d\n", term.Fence())
	store, err := statuslock.NewRedisStore(redis.NewClient(&redis.Options{Addr: addrs[0]}), "fenced:")
	if err != nil {
		t.Fatal(err)
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "WRITE" {
			err := store.Set(ctx, parts[1], statuslock.StatusRunning, term.Fence())
			fmt.Printf("WROTE %v\n", err)
		}
	}
	select {} // until killed
}

// A leader whose process dies without Resign (SIGKILL) is replaced once its
// term's lock expires: the next candidate leads with a larger fence and
// learns that it took over from the dead leader.
func TestTakeoverAfterKilledLeader(t *testing.T) {
	cl := redistest.StartT(t, 3)
	ctx := ctxFor(t)
	name := uniqueName(t)
	dead := startLeader(t, ctx, cl, name, "victim", 2*time.Second)
	e := newElection(t, newClient(t, nodesOf(cl)), name)
	if l, err := e.Leader(ctx); err != nil || l.Value != "victim" {
		t.Fatalf("Leader = %+v, %v; want victim", l, err)
	}
	// An observer of another client sees the change although nobody
	// announces it: the dead leader's lock just expires.
	watcher := newElection(t, newClient(t, nodesOf(cl)), name, election.WithPollInterval(200*time.Millisecond))
	octx, stop := context.WithCancel(ctx)
	defer stop()
	changes, err := watcher.Observe(octx)
	if err != nil {
		t.Fatal(err)
	}
	if l := nextLeader(t, changes); l.Value != "victim" {
		t.Fatalf("Observe reported %+v, want victim", l)
	}
	if err := dead.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = dead.cmd.Wait()
	term, err := e.Campaign(ctx, "rescuer")
	if err != nil {
		t.Fatal(err)
	}
	defer term.Resign(ctx)
	if term.Fence() <= dead.fence {
		t.Fatalf("rescuer's fence %d not above the dead leader's %d", term.Fence(), dead.fence)
	}
	prev, ok := term.Lock().TookOver()
	if !ok || prev.Owner != "victim" {
		t.Fatalf("TookOver = %+v, %v; want the dead leader victim", prev, ok)
	}
	if l, err := e.Leader(ctx); err != nil || l.Value != "rescuer" {
		t.Fatalf("Leader = %+v, %v; want rescuer", l, err)
	}
	if l := nextLeader(t, changes); l.Value != "rescuer" || l.Fence < term.Fence() {
		t.Fatalf("Observe reported %+v after the dead leader, want rescuer with fence >= %d", l, term.Fence())
	}
	stop()
	for range changes {
	}
}

// A leader paused (SIGSTOP) past its term is replaced; when it resumes and
// writes with its old fence, the fenced store refuses the write because the
// new leader wrote with its larger fence.
func TestPausedLeaderLateWriteRefused(t *testing.T) {
	cl := redistest.StartT(t, 3)
	ctx := ctxFor(t)
	name := uniqueName(t)
	paused := startLeader(t, ctx, cl, name, "paused", time.Second)
	if err := paused.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	e := newElection(t, newClient(t, nodesOf(cl)), name)
	term, err := e.Campaign(ctx, "successor")
	if err != nil {
		t.Fatal(err)
	}
	defer term.Resign(ctx)
	store, err := statuslock.NewRedisStore(cl.Clients()[0], "fenced:")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Set(ctx, name, statuslock.StatusDeploying, term.Fence()); err != nil {
		t.Fatalf("the new leader's write: %v", err)
	}
	if err := paused.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(paused.in, "WRITE\n"); err != nil {
		t.Fatal(err)
	}
	got := paused.line()
	if !strings.HasPrefix(got, "WROTE ") || !strings.Contains(got, statuslock.ErrStaleFence.Error()) {
		t.Fatalf("the paused leader's late write: %q, want refused (%v)", got, statuslock.ErrStaleFence)
	}
	rec, err := store.Get(ctx, name)
	if err != nil || rec.Status != statuslock.StatusDeploying || rec.Fence != term.Fence() {
		t.Fatalf("store holds %+v, %v; want the new leader's write", rec, err)
	}
}

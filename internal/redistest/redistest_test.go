package redistest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	CaptureRedisLogs() // shown for failing tests only (StartT)
	goleak.VerifyTestMain(m)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // hang guard, not a time budget
	t.Cleanup(cancel)
	return ctx
}

func TestStartSetGet(t *testing.T) {
	c := StartT(t, 3)
	ctx := ctxT(t)

	addrs := c.Addrs()
	if len(addrs) != 3 || len(c.Nodes()) != 3 || len(c.Clients()) != 3 {
		t.Fatalf("want 3 nodes/addrs/clients, got %d/%d/%d", len(c.Nodes()), len(addrs), len(c.Clients()))
	}
	seen := map[string]bool{}
	for i, n := range c.Nodes() {
		if n.Index() != i {
			t.Errorf("node %d: Index() = %d", i, n.Index())
		}
		if !strings.HasPrefix(n.Addr(), "127.0.0.1:") || n.Addr() != addrs[i] {
			t.Errorf("node %d: Addr() = %q, Addrs()[%d] = %q", i, n.Addr(), i, addrs[i])
		}
		if seen[n.Addr()] {
			t.Errorf("duplicate addr %s", n.Addr())
		}
		seen[n.Addr()] = true
		if !n.Running() {
			t.Errorf("node %d not running", i)
		}
		if n.Client() != c.Clients()[i] {
			t.Errorf("node %d: Client() is not the cached client", i)
		}
	}
	for i, cl := range c.Clients() {
		if err := cl.Set(ctx, "k", fmt.Sprint("v", i), 0).Err(); err != nil {
			t.Fatalf("node %d SET: %v", i, err)
		}
	}
	// Independent servers: each keeps its own value.
	for i, cl := range c.Clients() {
		got, err := cl.Get(ctx, "k").Result()
		if err != nil || got != fmt.Sprint("v", i) {
			t.Fatalf("node %d GET = %q, %v; want v%d", i, got, err, i)
		}
	}
	if err := c.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	for i, cl := range c.Clients() {
		if n, err := cl.DBSize(ctx).Result(); err != nil || n != 0 {
			t.Fatalf("node %d after FlushAll: DBSIZE = %d, %v", i, n, err)
		}
	}
}

func TestKillRestart(t *testing.T) {
	c := StartT(t, 3)
	ctx := ctxT(t)
	n := c.Nodes()[1]
	cl := n.Client()
	addr := n.Addr()

	if err := cl.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if n.Running() {
		t.Fatal("Running() = true after Kill")
	}
	if err := n.Kill(); err != nil {
		t.Fatalf("second Kill: %v", err)
	}
	start := time.Now()
	if err := cl.Get(ctx, "k").Err(); err == nil || errors.Is(err, redis.Nil) {
		t.Fatalf("GET on killed node: err = %v, want a connection error", err)
	}
	t.Logf("GET on killed node failed after %v", time.Since(start))
	if err := n.Pause(); err == nil {
		t.Error("Pause on killed node: want error")
	}
	// Other nodes are unaffected.
	if err := c.Nodes()[0].Client().Ping(ctx).Err(); err != nil {
		t.Fatalf("node 0: %v", err)
	}

	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if n.Addr() != addr {
		t.Fatalf("Addr changed across restart: %s -> %s", addr, n.Addr())
	}
	if !n.Running() {
		t.Fatal("Running() = false after Restart")
	}
	// Same long-lived client reconnects; the restarted node is empty.
	if err := cl.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after restart: %v", err)
	}
	if err := cl.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after restart: err = %v, want redis.Nil (empty node)", err)
	}
}

func TestRestartRunningNode(t *testing.T) {
	c := StartT(t, 1)
	ctx := ctxT(t)
	n := c.Nodes()[0]
	if err := n.Client().Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	pid := n.drv.(*procDriver).proc.Pid
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if newPid := n.drv.(*procDriver).proc.Pid; newPid == pid {
		t.Fatalf("pid unchanged (%d): not restarted", pid)
	}
	if size, err := n.Client().DBSize(ctx).Result(); err != nil || size != 0 {
		t.Fatalf("DBSIZE after restart = %d, %v; want 0", size, err)
	}
}

func TestPauseResume(t *testing.T) {
	c := StartT(t, 1)
	ctx := ctxT(t)
	n := c.Nodes()[0]
	cl := n.Client()
	if err := cl.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	if !n.Running() {
		t.Error("paused node should count as running")
	}
	pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	start := time.Now()
	err := cl.Ping(pctx).Err()
	cancel()
	if err == nil {
		t.Fatal("PING on paused node succeeded")
	}
	if d := time.Since(start); d >= clientIOTimeout {
		t.Errorf("PING with 200ms ctx on paused node took %v, the client's I/O timeout: ctx deadline not honoured", d)
	}
	if err := n.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := cl.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}
}

func TestRestartAfter(t *testing.T) {
	c := StartT(t, 2)
	ctx := ctxT(t)
	n := c.Nodes()[0]
	if err := n.Client().Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Running must not block behind the sleeping RestartAfter: polled
	// meanwhile, it reports the node down at some point before RestartAfter
	// returns (however late this goroutine gets to run).
	downSeen := make(chan bool, 1)
	returned := make(chan struct{})
	go func() {
		for {
			if !n.Running() {
				downSeen <- true
				return
			}
			select {
			case <-returned:
				downSeen <- false
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	const delay = 500 * time.Millisecond
	start := time.Now()
	err := n.RestartAfter(ctx, delay)
	close(returned)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < delay {
		t.Fatalf("RestartAfter(%s) returned after %v", delay, d)
	}
	if !<-downSeen {
		t.Error("node was never seen down during RestartAfter's delay")
	}
	if err := n.Client().Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after RestartAfter: %v, want redis.Nil", err)
	}
}

func TestRestartAfterCanceled(t *testing.T) {
	c := StartT(t, 1)
	n := c.Nodes()[0]
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if err := n.RestartAfter(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	if n.Running() {
		t.Fatal("node should stay down after a canceled RestartAfter")
	}
}

func procPIDs(c *Cluster) []int {
	var pids []int
	for _, n := range c.nodes {
		n.mu.Lock()
		if p := n.drv.(*procDriver); p.proc != nil {
			pids = append(pids, p.proc.Pid)
		}
		n.mu.Unlock()
	}
	return pids
}

func TestCloseStopsProcesses(t *testing.T) {
	c, err := Start(ctxT(t), 3, Options{})
	if errors.Is(err, ErrRedisServerNotFound) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := c.be.(*processBackend).dir
	pids := procPIDs(c)
	if len(pids) != 3 {
		t.Fatalf("got %d pids", len(pids))
	}
	_ = c.Clients()
	// Close must not hang on a paused node, and must handle a killed one.
	if err := c.Nodes()[0].Pause(); err != nil {
		t.Fatal(err)
	}
	if err := c.Nodes()[2].Kill(); err != nil {
		t.Fatal(err)
	}

	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(2 * time.Minute): // hang guard
		t.Fatal("Close hung for 2 minutes")
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("pid %d still exists after Close (kill 0: %v)", pid, err)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temp dir %s not removed: %v", dir, err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	n := c.Nodes()[1]
	if n.Running() {
		t.Error("Running() after Close")
	}
	if err := n.Restart(t.Context()); !errors.Is(err, ErrClosed) {
		t.Errorf("Restart after Close: %v, want ErrClosed", err)
	}
	if err := n.Client().Ping(t.Context()).Err(); err == nil {
		t.Error("client still works after Close")
	}
}

func TestOptionsDirAndExtraArgs(t *testing.T) {
	dir := t.TempDir()
	c := StartTWithOptions(t, 2, Options{Dir: dir, ExtraArgs: []string{"--maxmemory", "64mb"}})
	ctx := ctxT(t)
	got, err := c.Nodes()[1].Client().ConfigGet(ctx, "maxmemory").Result()
	if err != nil || got["maxmemory"] != "67108864" {
		t.Fatalf("CONFIG GET maxmemory = %v, %v; want 67108864", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node-1", "redis.log")); err != nil {
		t.Fatalf("log file: %v", err)
	}
	if !strings.Contains(c.Nodes()[1].LogTail(), "Ready to accept connections") {
		t.Errorf("LogTail lacks the ready line:\n%s", c.Nodes()[1].LogTail())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("caller's Dir must survive Close: %v", err)
	}
}

func TestBadArgsReportLog(t *testing.T) {
	if _, err := findRedisServer(""); err != nil {
		t.Skip(err)
	}
	_, err := Start(ctxT(t), 1, Options{ExtraArgs: []string{"--no-such-option", "1"}})
	if err == nil {
		t.Fatal("Start with a bad option succeeded")
	}
	if !strings.Contains(err.Error(), "no-such-option") {
		t.Fatalf("error should carry the server's complaint, got: %v", err)
	}
}

// TestPortRace makes the first port pick lose the race (something else is
// listening there) and checks that Start moves on to a new port.
func TestPortRace(t *testing.T) {
	if _, err := findRedisServer(""); err != nil {
		t.Skip(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port

	var mu sync.Mutex
	calls := 0
	pickPort = func() (int, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			return taken, nil
		}
		return freePort()
	}
	defer func() { pickPort = freePort }()

	c, err := Start(ctxT(t), 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Addrs()[0] == l.Addr().String() {
		t.Fatal("node claims the taken port")
	}
	if calls < 2 {
		t.Fatalf("pickPort called %d times, want a retry", calls)
	}
	if err := c.Clients()[0].Ping(ctxT(t)).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestProbeRejectsForeignServer(t *testing.T) {
	c := StartT(t, 1)
	err := probe(ctxT(t), c.Addrs()[0], 1) // pid 1 is never redis-server
	if !errors.Is(err, errWrongServer) {
		t.Fatalf("probe with wrong pid: %v, want errWrongServer", err)
	}
}

func TestMissingBinary(t *testing.T) {
	_, err := Start(t.Context(), 1, Options{RedisServer: "/nonexistent/redis-server"})
	if !errors.Is(err, ErrRedisServerNotFound) {
		t.Fatalf("err = %v, want ErrRedisServerNotFound", err)
	}
	t.Setenv("REDIS_SERVER", "/nonexistent/redis-server")
	_, err = Start(t.Context(), 1, Options{Backend: BackendProcess})
	if !errors.Is(err, ErrRedisServerNotFound) {
		t.Fatalf("via $REDIS_SERVER: err = %v, want ErrRedisServerNotFound", err)
	}
}

// fakeTB records Skip/Fatal instead of acting on the real test.
type fakeTB struct {
	testing.TB
	skipped, failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skipf(format string, a ...any) {
	f.skipped = fmt.Sprintf(format, a...)
	runtime.Goexit()
}
func (f *fakeTB) Fatalf(format string, a ...any) {
	f.failed = fmt.Sprintf(format, a...)
	runtime.Goexit()
}

func TestStartTMissingBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("-short skips every server start before it looks for the binary")
	}
	t.Setenv("REDIS_SERVER", "/nonexistent/redis-server")
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		f := &fakeTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			StartT(f, 1)
		}()
		<-done
		msg := "install it with apt-get install -y redis-server"
		if ci == "true" {
			if !strings.Contains(f.failed, msg) || f.skipped != "" {
				t.Errorf("CI=true: failed=%q skipped=%q; want a failure mentioning %q", f.failed, f.skipped, msg)
			}
		} else if !strings.Contains(f.skipped, msg) || f.failed != "" {
			t.Errorf("CI unset: skipped=%q failed=%q; want a skip mentioning %q", f.skipped, f.failed, msg)
		}
	}
}

// The container backend is a module of its own (DockerModule): without it
// linked in, selecting it fails at once and says where it is.
func TestDockerNotLinked(t *testing.T) {
	t.Setenv("REDLOCK_TEST_BACKEND", "docker") // exercises the env default too
	c, err := Start(t.Context(), 1, Options{})
	if err == nil {
		_ = c.Close()
		t.Fatal("docker backend started although its module is not linked in")
	}
	if !errors.Is(err, ErrDockerUnavailable) || !strings.Contains(err.Error(), DockerModule) {
		t.Fatalf("err = %v, want ErrDockerUnavailable naming %s", err, DockerModule)
	}
}

func TestUnknownBackend(t *testing.T) {
	if _, err := Start(t.Context(), 1, Options{Backend: "vm"}); err == nil {
		t.Fatal("unknown backend accepted")
	}
	if _, err := Start(t.Context(), 0, Options{}); err == nil {
		t.Fatal("0 nodes accepted")
	}
}

// TestConcurrentChaos hammers node lifecycle methods from several goroutines
// while clients keep writing; run with -race.
func TestConcurrentChaos(t *testing.T) {
	c := StartT(t, 3)
	ctx := ctxT(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				for _, cl := range c.Clients() {
					cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
					_ = cl.Set(cctx, fmt.Sprint("w", w), i, 0).Err() // errors expected
					cancel()
				}
			}
		})
	}
	for _, n := range c.Nodes() {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(n.Index()), 1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				switch r.IntN(5) {
				case 0:
					_ = n.Kill()
				case 1:
					_ = n.Restart(ctx)
				case 2:
					_ = n.Pause()
					time.Sleep(20 * time.Millisecond)
					_ = n.Resume()
				case 3:
					_ = n.RestartAfter(ctx, 10*time.Millisecond)
				case 4:
					_ = n.Running()
					_ = n.Addr()
				}
			}
		})
	}
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()
	for _, n := range c.Nodes() {
		if err := n.Restart(ctx); err != nil {
			t.Fatalf("%v: final restart: %v", n, err)
		}
		if err := n.Client().Ping(ctx).Err(); err != nil {
			t.Fatalf("%v: PING after chaos: %v", n, err)
		}
	}
}

// logTB records what RedisLogsOnFailure does at cleanup.
type logTB struct {
	testing.TB
	failed   bool
	cleanups []func()
	logged   []string
}

func (l *logTB) Helper()                      {}
func (l *logTB) Failed() bool                 { return l.failed }
func (l *logTB) Cleanup(f func())             { l.cleanups = append(l.cleanups, f) }
func (l *logTB) Logf(format string, a ...any) { l.logged = append(l.logged, fmt.Sprintf(format, a...)) }
func (l *logTB) runCleanups() {
	slices.Reverse(l.cleanups)
	for _, f := range l.cleanups {
		f()
	}
}

// go-redis's log reaches a test's output only when that test failed, and
// only the lines logged while it ran (the last captureLines of them).
func TestRedisLogsOnFailure(t *testing.T) {
	before := &logTB{TB: t}
	RedisLogsOnFailure(before)
	redisLog.Printf(t.Context(), "dial tcp 127.0.0.1:1: connection refused")

	passing, failing := &logTB{TB: t}, &logTB{TB: t, failed: true}
	RedisLogsOnFailure(passing)
	RedisLogsOnFailure(failing)
	for i := range captureLines + 5 {
		redisLog.Printf(t.Context(), "failed to dial %d\n", i)
	}
	passing.runCleanups()
	failing.runCleanups()
	if len(passing.logged) != 0 {
		t.Errorf("a passing test logged %q", passing.logged)
	}
	if len(failing.logged) != 1 {
		t.Fatalf("a failing test logged %d messages, want 1", len(failing.logged))
	}
	out := failing.logged[0]
	if strings.Contains(out, "connection refused") || !strings.Contains(out, "5 earlier lines dropped") ||
		!strings.Contains(out, fmt.Sprintf("failed to dial %d", captureLines+4)) || strings.Contains(out, "failed to dial 4\n") ||
		strings.Count(out, "failed to dial") != captureLines {
		t.Errorf("failing test's log:\n%s", out)
	}
}

package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Backends accepted in Options.Backend and REDLOCK_TEST_BACKEND.
const (
	BackendProcess = "process"
	BackendDocker  = "docker"
)

var (
	// ErrRedisServerNotFound is returned (wrapped) by Start when the
	// redis-server binary cannot be found or is not executable.
	ErrRedisServerNotFound = errors.New("redis-server not found; install it with apt-get install -y redis-server")

	// ErrDockerUnavailable is returned (wrapped) by Start when the docker
	// backend is selected but no Docker daemon answers, or the backend's
	// module (DockerModule) is not linked into the binary.
	ErrDockerUnavailable = errors.New("docker daemon unavailable")

	// ErrClosed is returned by Node methods after Cluster.Close.
	ErrClosed = errors.New("redistest: cluster is closed")
)

// Client settings. A killed node refuses a dial at once; the dial timeout
// only matters on a machine too busy to answer quickly. Per-call bounds come
// from the caller's context (clients have ContextTimeoutEnabled, and a call
// ends at the earlier of its deadline and the I/O timeout), so the I/O
// timeout is a backstop for calls without a deadline and must not cut short
// the node timeouts a test chose: 10,000 extensions in one pipeline under
// -race on a loaded machine can take more than a second.
const (
	clientDialTimeout = 2 * time.Second
	clientIOTimeout   = 10 * time.Second
)

// Options for Start. The zero value is valid.
type Options struct {
	// Backend is "process" (default), "docker" (when DockerModule is linked
	// in) or another registered backend; when empty it is taken from
	// REDLOCK_TEST_BACKEND.
	Backend string
	// RedisServer is the path to redis-server (process backend); when empty
	// $REDIS_SERVER is used, then a PATH lookup.
	RedisServer string
	// Dir is the working dir for node dirs and logs (process backend). When
	// empty a temp dir is created and removed by Close; a given Dir is kept.
	Dir string
	// ExtraArgs are appended to every redis-server command line, e.g.
	// "--maxmemory", "64mb". Later args override earlier ones.
	ExtraArgs []string
	// Fresh leaves the servers a new deployment. Without it each starts as
	// a server that has voted before (its standing record, see
	// node.Standing, says so), as in a deployment that ran before the
	// test: a test may stop nodes before its first lock. A restart empties
	// a server either way, and it then learns, as a real one would.
	Fresh bool

	// clusterNodeTimeout > 0 makes every node a Redis Cluster node with
	// this cluster-node-timeout (StartSharded; process backend only).
	clusterNodeTimeout time.Duration
}

// backend creates the per-node drivers of one cluster.
type backend interface {
	newDriver(index int) driver
	close() error // release cluster-wide resources (temp dir, docker pool)
}

// driver runs one node. Node serializes calls with its mutex.
type driver interface {
	// start launches an empty server and waits until it answers. first
	// allows picking another port when the chosen one turns out taken; later
	// starts reuse the previous address when possible.
	start(ctx context.Context, first bool) (addr string, err error)
	kill() error // stop immediately; nil if already down
	pause() error
	resume() error
	running() bool
	stop() error // final stop for Close; must not hang on a paused node
	logTail() string
}

// Cluster is a set of independent redis servers.
type Cluster struct {
	backendName string
	be          backend
	nodes       []*Node

	closeOnce sync.Once
	closeErr  error
}

// Start starts n independent nodes and waits until each answers PING.
// The caller must Close the cluster. ctx bounds startup only.
func Start(ctx context.Context, n int, opts Options) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("redistest: need at least 1 node, got %d", n)
	}
	name := opts.Backend
	if name == "" {
		name = os.Getenv("REDLOCK_TEST_BACKEND")
	}
	if name == "" {
		name = BackendProcess
	}
	if opts.clusterNodeTimeout > 0 && name != BackendProcess {
		return nil, fmt.Errorf("redistest: sharded clusters run on the %q backend only, not %q", BackendProcess, name)
	}
	be, err := newBackend(ctx, name, opts)
	if err != nil {
		return nil, err
	}

	c := &Cluster{backendName: name, be: be, nodes: make([]*Node, n)}
	for i := range c.nodes {
		c.nodes[i] = &Node{index: i, drv: be.newDriver(i)}
	}
	// Start nodes in parallel: startup is mostly waiting for the server.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, node := range c.nodes {
		wg.Go(func() { errs[i] = node.start(ctx, true) })
	}
	wg.Wait()
	if !opts.Fresh && opts.clusterNodeTimeout == 0 && !slices.Contains(opts.ExtraArgs, "--cluster-enabled") { // a cluster's records are per slot, and its slots are not served yet
		for i, node := range c.nodes {
			if errs[i] == nil {
				errs[i] = node.MarkVoting(ctx)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// SkipShort is the reason a test that needs redis-server gives for skipping
// under -short (make check): the fast loop runs only what needs no server.
const SkipShort = "needs redis-server: skipped by -short (make check); make test runs it"

// StartT starts n nodes for a test and closes them in t.Cleanup. If
// redis-server is missing the test is skipped, or failed when CI=true.
// Under -short it is skipped (see SkipShort).
// go-redis' log and the servers' log tails are shown only if the test fails.
func StartT(t testing.TB, n int) *Cluster {
	t.Helper()
	return StartTWithOptions(t, n, Options{})
}

// StartTWithOptions is StartT with explicit Options.
func StartTWithOptions(t testing.TB, n int, opts Options) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip(SkipShort)
	}
	RedisLogsOnFailure(t) // go-redis logs each failed dial: shown only if t fails
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := Start(ctx, n, opts)
	if errors.Is(err, ErrRedisServerNotFound) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redistest: %v", err)
		}
		t.Skipf("redistest: %v", err)
	}
	if err != nil {
		t.Fatalf("redistest: start %d nodes: %v", n, err)
	}
	t.Cleanup(func() {
		if t.Failed() { // server logs usually explain a failed chaos test
			for _, node := range c.nodes {
				if tail := node.LogTail(); tail != "" {
					t.Logf("redistest: node %d (%s) log tail:\n%s", node.index, node.Addr(), tail)
				}
			}
		}
		if err := c.Close(); err != nil {
			t.Errorf("redistest: close: %v", err)
		}
	})
	return c
}

// Backend reports the backend in use ("process" or "docker").
func (c *Cluster) Backend() string { return c.backendName }

// Nodes returns the nodes in index order. The slice is a copy.
func (c *Cluster) Nodes() []*Node { return append([]*Node(nil), c.nodes...) }

// Addrs returns the current "127.0.0.1:PORT" address of every node.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Addr()
	}
	return out
}

// Clients returns one go-redis client per node (see Node.Client).
func (c *Cluster) Clients() []*redis.Client {
	out := make([]*redis.Client, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Client()
	}
	return out
}

// FlushAll empties every running node.
func (c *Cluster) FlushAll(ctx context.Context) error {
	var errs []error
	for _, n := range c.nodes {
		if err := n.FlushAll(ctx); err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", n.index, err))
		}
	}
	return errors.Join(errs...)
}

// Close closes the clients, stops this cluster's servers (and only those)
// and removes the temp dir it created. It is idempotent and safe to call
// while nodes are paused or down.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		errs := make([]error, len(c.nodes)+1)
		var wg sync.WaitGroup
		for i, n := range c.nodes {
			wg.Go(func() { errs[i] = n.shutdown() })
		}
		wg.Wait()
		errs[len(c.nodes)] = c.be.close()
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// DiscardRedisLogs silences go-redis' global logger, which prints a line for
// every failed dial — thousands in a chaos run. It affects the whole program.
// Tests use CaptureRedisLogs instead, so a failing test can still show them.
func DiscardRedisLogs() { redis.SetLogger(discardLogger{}) }

type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}

// CaptureRedisLogs routes go-redis' global logger into a bounded in-memory
// buffer instead of stderr: a passing test prints nothing, and
// RedisLogsOnFailure (which StartT calls) shows a failing test the lines
// logged while it ran. Call it once before the package's tests run; it affects
// the whole program.
func CaptureRedisLogs() { redis.SetLogger(redisLog) }

// RedisLogsOnFailure captures go-redis' log (CaptureRedisLogs) and, if t has
// failed by its cleanup, logs the lines written since this call. Tests that
// run in parallel share the logger, so the lines may include theirs.
func RedisLogsOnFailure(t testing.TB) {
	t.Helper()
	CaptureRedisLogs()
	mark := redisLog.mark()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		lines, dropped := redisLog.since(mark)
		if len(lines) == 0 {
			return
		}
		more := ""
		if dropped > 0 {
			more = fmt.Sprintf(" (the last %d; %d earlier lines dropped)", len(lines), dropped)
		}
		t.Logf("redistest: go-redis log while the test ran%s:\n%s", more, strings.Join(lines, "\n"))
	})
}

// captureLogger keeps the last captureLines lines go-redis logged.
type captureLogger struct {
	mu    sync.Mutex
	total uint64   // lines ever logged
	ring  []string // line i of total is at ring[i%captureLines]
}

const captureLines = 200

var redisLog = &captureLogger{}

func (l *captureLogger) Printf(_ context.Context, format string, v ...any) {
	line := time.Now().Format("15:04:05.000") + " " + strings.TrimRight(fmt.Sprintf(format, v...), "\n")
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ring) < captureLines {
		l.ring = append(l.ring, line)
	} else {
		l.ring[l.total%captureLines] = line
	}
	l.total++
}

func (l *captureLogger) mark() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// since returns the lines logged after mark that are still kept, and how
// many of them were not.
func (l *captureLogger) since(mark uint64) (lines []string, dropped uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := mark
	if l.total-first > uint64(len(l.ring)) {
		first = l.total - uint64(len(l.ring))
	}
	for i := first; i < l.total; i++ {
		lines = append(lines, l.ring[i%captureLines])
	}
	return lines, first - mark
}

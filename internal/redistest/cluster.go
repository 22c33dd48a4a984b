package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
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

// Client settings: short timeouts so a dead or paused node fails fast
// instead of stalling a test, as Redlock expects of its per-node calls.
const (
	clientDialTimeout = 500 * time.Millisecond
	clientIOTimeout   = time.Second
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
	if err := errors.Join(errs...); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// StartT starts n nodes for a test and closes them in t.Cleanup. If
// redis-server is missing the test is skipped, or failed when CI=true.
func StartT(t testing.TB, n int) *Cluster {
	t.Helper()
	return StartTWithOptions(t, n, Options{})
}

// StartTWithOptions is StartT with explicit Options.
func StartTWithOptions(t testing.TB, n int, opts Options) *Cluster {
	t.Helper()
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
func DiscardRedisLogs() { redis.SetLogger(discardLogger{}) }

type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}

package statuslock_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/statuslock"
)

// startNodes starts n real redis-server nodes and a redlock client on them.
func startNodes(t *testing.T, n int, opts ...redlock.Option) (*redistest.Cluster, *redlock.Client) {
	t.Helper()
	cl := redistest.StartT(t, n)
	var nodes []node.Node
	for _, rc := range cl.Clients() {
		nodes = append(nodes, redisnode.New(rc))
	}
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() }) // stops its release subscriptions
	return cl, c
}

// memoryClient is a redlock client on three in-process nodes.
func memoryClient(t *testing.T, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	nodes := []node.Node{memnode.New("a"), memnode.New("b"), memnode.New("c")}
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func newLocker(t *testing.T, c *redlock.Client, opts ...statuslock.Option) *statuslock.Locker {
	t.Helper()
	l, err := statuslock.New(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

var idSeq atomic.Int64

func serviceID(t *testing.T) string {
	return fmt.Sprintf("%s-%d", t.Name(), idSeq.Add(1))
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // hang guard, not a time budget
	t.Cleanup(cancel)
	return ctx
}

// stores returns a fresh MemoryStore and a RedisStore on a real
// redis-server, by name.
func stores(t *testing.T) map[string]statuslock.Store {
	t.Helper()
	cl := redistest.StartT(t, 1)
	rs, err := statuslock.NewRedisStore(cl.Clients()[0], "")
	if err != nil {
		t.Fatal(err)
	}
	return map[string]statuslock.Store{"memory": statuslock.NewMemoryStore(), "redis": rs}
}

// logBuffer is a concurrency-safe sink for a text slog.Logger.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLogger() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

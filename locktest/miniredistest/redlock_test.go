package miniredistest

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// A redlock client over three miniredis servers takes, refuses and
// releases locks; the servers' clocks are moved by the test (FastForward)
// to expire a holder's keys, and its extension then reports the loss. The
// unknown eviction policy is logged once per server as a warning.
func TestRedlockOverMiniredis(t *testing.T) {
	var servers []*miniredis.Miniredis
	var nodes []node.Node
	for range 3 {
		m := miniredis.RunT(t)
		servers = append(servers, m)
		_, c := clientOf(t, m)
		nodes = append(nodes, redisnode.New(c))
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	a, err := redlock.New(nodes, redlock.WithRetry(retry.Never()), redlock.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	b, err := redlock.New(nodes, redlock.WithRetry(retry.Never()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })

	la, err := a.TryAcquire(t.Context(), "job", 30*time.Second)
	if err != nil {
		t.Fatalf("acquire over miniredis: %v", err)
	}
	if _, err := b.TryAcquire(t.Context(), "job", 30*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("second client: %v, want ErrNotAcquired", err)
	}
	later := time.Now().Add(31 * time.Second) // the holder stalled past its TTL:
	for _, m := range servers {
		m.SetTime(later)                // the server's clock, which ends the hold a record names,
		m.FastForward(31 * time.Second) // and the keys' expiry
	}
	lb, err := b.TryAcquire(t.Context(), "job", 30*time.Second)
	if err != nil || lb.Fence() <= la.Fence() {
		t.Fatalf("after expiry: %v (fence %d after %d)", err, lb.Fence(), la.Fence())
	}
	if err := la.Extend(t.Context(), 30*time.Second); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("expired holder's extend: %v, want ErrLockLost", err)
	}
	if err := lb.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "maxmemory-policy=unknown"); n != 3 {
		t.Fatalf("%d warnings of an unknown eviction policy, want 3:\n%s", n, logs.String())
	}
}

package docker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ory/dockertest/v3"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

func daemonAnswers() bool {
	pool, err := dockertest.NewPool("")
	return err == nil && pool.Client.Ping() == nil
}

// Without a daemon, selecting the backend fails at once with a clear error.
func TestDockerUnavailable(t *testing.T) {
	if daemonAnswers() {
		t.Skip("a Docker daemon answers; the unavailable path cannot be tested here")
	}
	t.Setenv("REDLOCK_TEST_BACKEND", "docker") // exercises the env default too
	c, err := redistest.Start(t.Context(), 1, redistest.Options{})
	if err == nil {
		_ = c.Close()
		t.Fatal("docker backend started without a daemon")
	}
	if !errors.Is(err, redistest.ErrDockerUnavailable) {
		t.Fatalf("err = %v, want ErrDockerUnavailable", err)
	}
	if !strings.Contains(err.Error(), "REDLOCK_TEST_BACKEND=docker but no Docker daemon answers") {
		t.Errorf("unclear message: %v", err)
	}
}

// With a daemon: nodes start, answer, and come back empty after a restart.
func TestDockerCluster(t *testing.T) {
	if !daemonAnswers() {
		t.Skip("no Docker daemon answers")
	}
	c := redistest.StartTWithOptions(t, 2, redistest.Options{Backend: redistest.BackendDocker})
	if c.Backend() != redistest.BackendDocker {
		t.Fatalf("backend %q", c.Backend())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // hang guard
	defer cancel()
	n := c.Nodes()[0]
	if err := n.Client().Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := n.Client().Exists(ctx, "k").Result(); err != nil || v != 0 {
		t.Fatalf("after restart: exists = %d, %v; want an empty node", v, err)
	}
}

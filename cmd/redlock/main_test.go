package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
)

// bin is the redlock binary, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	redistest.CaptureRedisLogs() // go-redis logs each failed dial: shown for failing tests only
	dir, err := os.MkdirTemp("", "redlock-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "redlock")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// result is how one run of the binary ended.
type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// runBin runs the binary with REDLOCK_NODES set to nodes (unset when empty).
func runBin(t *testing.T, nodes []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute) // hang guard: kills a stuck binary
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = time.Minute // after the guard: do not wait for pipes a stray child holds open
	cmd.Env = append(withoutNodesEnv(), nodesEnv+"="+strings.Join(nodes, ","))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("run %v: %v", args, err)
	}
	t.Logf("redlock %s -> %d in %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.took.Round(time.Millisecond), r.stdout, r.stderr)
	return r
}

func withoutNodesEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, nodesEnv+"=") {
			env = append(env, e)
		}
	}
	return env
}

// lockClient is a redlock client on the cluster's nodes, closed with t.
func lockClient(t *testing.T, c *redistest.Cluster) *redlock.Client {
	t.Helper()
	var nodes []node.Node
	for _, rc := range c.Clients() {
		nodes = append(nodes, redisnode.New(rc))
	}
	client, err := redlock.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// hold acquires key through a client of the test, released with t.
func hold(t *testing.T, client *redlock.Client, key string, ttl time.Duration) *redlock.Lock {
	t.Helper()
	l, err := client.Acquire(t.Context(), key, ttl)
	if err != nil {
		t.Fatalf("acquire %q: %v", key, err)
	}
	t.Cleanup(func() { _ = l.Release(context.Background()) })
	return l
}

// freeAddr is a loopback address with nothing listening.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// oneLine checks that stderr is exactly one line containing want.
func oneLine(t *testing.T, stderr, want string) {
	t.Helper()
	if n := strings.Count(stderr, "\n"); n != 1 || !strings.Contains(stderr, want) {
		t.Errorf("stderr = %q, want one line containing %q", stderr, want)
	}
}

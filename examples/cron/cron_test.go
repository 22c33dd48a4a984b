package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/examples/internal/seed"
)

// Three replicas fire at the same moment on every tick, on 5 real nodes: the
// job runs exactly once per tick (the split votes of simultaneous attempts
// are resolved, not reported as "held"). 30 ticks here; the program runs 100.
func TestExactlyOneRunPerTick(t *testing.T) {
	env := seed.StartT(t, 5, false)
	var rs []replica
	for i := range 3 {
		name := fmt.Sprintf("replica-%d", i+1)
		c, single, err := newLockClient(env.Nodes(), name, slog.New(slog.DiscardHandler))
		if err != nil || single {
			t.Fatalf("newLockClient: %v (single %v)", err, single)
		}
		t.Cleanup(func() { _ = c.Close() })
		rs = append(rs, replica{name: name, client: c})
	}
	res := runSchedulers(context.Background(), rs, 30, "cron:penalties")
	t.Log(res)
	if res.exactlyOnce() != 30 || len(res.Errors) != 0 {
		t.Fatalf("not exactly once per tick: %v (errors %v)", res, res.Errors)
	}
}

// Without nodes the scheduler says so in its log and every replica runs
// (each has its own in-process lock): the single-instance mode is explicit.
func TestSingleInstanceModeIsLogged(t *testing.T) {
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	var rs []replica
	for i := range 2 {
		c, single, err := newLockClient(nil, fmt.Sprintf("replica-%d", i+1), logger)
		if err != nil || !single {
			t.Fatalf("newLockClient(nil) = single %v, %v", single, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		rs = append(rs, replica{name: fmt.Sprintf("replica-%d", i+1), client: c})
	}
	if !strings.Contains(log.String(), "single-instance mode") {
		t.Fatalf("no warning logged: %q", log.String())
	}
	res := runSchedulers(context.Background(), rs, 3, "cron:penalties")
	for tick, runs := range res.RunsOf {
		if runs != 2 {
			t.Fatalf("tick %d: %d runs, want 2 (one per process)", tick, runs)
		}
	}
}

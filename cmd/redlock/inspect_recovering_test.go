package main

import (
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// inspect shows which node sits out after losing its data, and until
// when: the one flushed under a held lock, and none of the others.
func TestInspectShowsRecoveringNode(t *testing.T) {
	c := redistest.StartT(t, 3)
	key := "deploy:svc-r"
	name := "lock:{" + key + "}"
	hold(t, lockClient(t, c), key, 30*time.Second)
	waitKeyEverywhere(t, c, name)
	if err := c.Clients()[0].FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, c.Addrs(), "inspect", key)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stdout)
	}
	if !strings.Contains(r.stdout, "RECOVERING") {
		t.Fatalf("no recovering column:\n%s", r.stdout)
	}
	recovering := 0
	for i, addr := range c.Addrs() {
		line := nodeRow(r.stdout, addr)
		switch {
		case strings.Contains(line, " until ") && strings.Contains(line, "(10m0s more)"):
			recovering++
			if i != 0 {
				t.Errorf("node %s that kept its data shown recovering: %q", addr, line)
			}
		case strings.HasSuffix(strings.TrimSpace(line), " no"):
		default:
			t.Errorf("node %s row %q: want its recovering state", addr, line)
		}
	}
	if recovering != 1 {
		t.Errorf("%d nodes shown recovering, want 1 (the flushed one):\n%s", recovering, r.stdout)
	}
}

// nodeRow is the per-node row of inspect's output for addr.
func nodeRow(out, addr string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, addr+" ") {
			return line
		}
	}
	return ""
}

package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/wire"
)

// inspect shows each node's data age for the key, and which node sits out
// of it after losing its data, and until when: the one flushed under a held
// lock, and none of the others.
func TestInspectShowsRecoveringNode(t *testing.T) {
	c := redistest.StartT(t, 3)
	key := "deploy:svc-r"
	name := "lock:{" + key + "}"
	hold(t, lockClient(t, c), key, 30*time.Second)
	waitKeyEverywhere(t, c, name)
	// Markers of one first use may differ by a node timeout (1s for
	// inspect's client): wait until the kept ones are older than that.
	waitMarkersOlder(t, c, name, 2*time.Second)
	if err := c.Clients()[0].FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, c.Addrs(), "inspect", key)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stdout)
	}
	if !strings.Contains(r.stdout, "DATA AGE") || !strings.Contains(r.stdout, "RECOVERING") {
		t.Fatalf("no data age or recovering column:\n%s", r.stdout)
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

// waitMarkersOlder waits until name's marker is older than d on every node,
// by each node's clock: a wait for a state, bounded by a hang guard.
func waitMarkersOlder(t *testing.T, c *redistest.Cluster, name string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // hang guard
	for _, rc := range c.Clients() {
		for {
			v, _ := rc.Get(t.Context(), wire.MarkerKey(name)).Result()
			first, _, _ := strings.Cut(v, " ") // "since creator"
			since, _ := strconv.ParseInt(first, 10, 64)
			now, err := rc.Time(t.Context()).Result()
			if err != nil {
				t.Fatal(err)
			}
			if since > 0 && now.Sub(time.UnixMicro(since)) > d {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("marker of %s on %s not older than %s within the hang guard", name, rc.Options().Addr, d)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

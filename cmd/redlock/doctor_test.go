package main

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

func TestDoctorHealthy(t *testing.T) {
	c := redistest.StartT(t, 3)
	r := runBin(t, c.Addrs(), "doctor")
	if r.code != exitOK {
		t.Errorf("exit %d, want 0", r.code)
	}
	for i, addr := range c.Addrs() {
		line := doctorLine(r.stdout, i)
		for _, want := range []string{"ok   ", addr, "redis 7", "rtt ", "clock offset ", "maxmemory-policy noeviction", "EVAL ok", "PUBLISH ok", "persistence: none: a restart forgets every lock"} {
			if !strings.Contains(line, want) {
				t.Errorf("n%d line %q lacks %q", i+1, line, want)
			}
		}
	}
	for _, want := range []string{"3 of 3 nodes usable (all usable), quorum 2", "fault tolerance: the quorum survives 1 more node failure", "restart: safe: 3 of 3 usable nodes (n1, n2, n3) forget locks on restart, and the clients sit such a node out until it has kept its data for the recovery period 10m0s", "verdict: OK"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
}

// Each check trips on a node set up for it; the set cannot be trusted.
func TestDoctorMisconfigured(t *testing.T) {
	c := redistest.StartT(t, 5)
	renamed := redistest.StartTWithOptions(t, 1, redistest.Options{ExtraArgs: []string{"--rename-command", "EVAL", ""}})
	cl := c.Clients()
	configSet(t, cl[1], "maxmemory-policy", "allkeys-lru")
	aclDefault(t, cl[2], "-eval", "-evalsha")
	aclDefault(t, cl[3], "-publish")
	if err := c.Nodes()[4].Kill(); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(c.Addrs()[0])
	nodes := append(c.Addrs(), "localhost:"+port, renamed.Addrs()[0])
	r := runBin(t, nodes, "doctor")
	if r.code != doctorUntrusted {
		t.Errorf("exit %d, want %d", r.code, doctorUntrusted)
	}
	for i, want := range []string{
		"ok   n1 ",
		"WARN n2 .*maxmemory-policy allkeys-lru",
		"FAIL n3 .*EVAL refused.*NOPERM",
		"WARN n4 .*PUBLISH refused",
		"FAIL n5 .*: unreachable: .*connection refused",
		"FAIL n6 localhost:.*same server as n1",
		"FAIL n7 .*EVAL refused.*unknown command",
	} {
		if !matchLine(doctorLine(r.stdout, i), want) {
			t.Errorf("n%d line %q, want it to match %q", i+1, doctorLine(r.stdout, i), want)
		}
	}
	for _, want := range []string{"3 of 7 nodes usable (n3, n5, n6, n7 not usable), quorum 4", "verdict: NOT TRUSTED"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
}

// Warnings only: a lock can be taken (exit 1), and what a restart forgets
// follows appendonly/appendfsync/save.
func TestDoctorWarningsAndPersistence(t *testing.T) {
	c := redistest.StartT(t, 3)
	cl := c.Clients()
	configSet(t, cl[0], "appendonly", "yes")
	configSet(t, cl[0], "appendfsync", "always")
	configSet(t, cl[1], "save", "900 1")
	configSet(t, cl[2], "maxmemory-policy", "volatile-ttl")
	r := runBin(t, c.Addrs(), "doctor")
	if r.code != doctorWarnings {
		t.Errorf("exit %d, want %d", r.code, doctorWarnings)
	}
	for i, want := range []string{
		"ok   n1 .*persistence: appendfsync always.*appendonly yes, appendfsync always",
		"ok   n2 .*RDB snapshots only.*save \"900 1\"",
		"WARN n3 .*maxmemory-policy volatile-ttl",
	} {
		if !matchLine(doctorLine(r.stdout, i), want) {
			t.Errorf("n%d line %q, want it to match %q", i+1, doctorLine(r.stdout, i), want)
		}
	}
	if !strings.Contains(r.stdout, "restart: safe: 2 of 3 usable nodes (n2, n3) forget locks") || !strings.Contains(r.stdout, "verdict: WARNINGS") {
		t.Errorf("output:\n%s", r.stdout)
	}
}

// Whether a restart is safe follows each node's persistence and the
// clients' recovery period: with recovery on (the default) any persistence
// is safe; with it off, each node that forgets locks on restart is a
// warning, and a node whose CONFIG is refused counts as forgetting.
func TestDoctorRestartSafety(t *testing.T) {
	c := redistest.StartT(t, 3)
	cl := c.Clients()
	for _, n := range cl {
		configSet(t, n, "appendonly", "yes")
		configSet(t, n, "appendfsync", "always")
	}
	durable := runBin(t, c.Addrs(), "doctor", "--recovery-period", "0")
	if durable.code != exitOK || !strings.Contains(durable.stdout, "restart: safe: every usable node fsyncs each write") {
		t.Errorf("all appendfsync always, recovery off: exit %d, want 0:\n%s", durable.code, durable.stdout)
	}

	configSet(t, cl[1], "appendfsync", "everysec")
	aclDefault(t, cl[2], "-config")
	on := runBin(t, c.Addrs(), "doctor")
	off := runBin(t, c.Addrs(), "doctor", "--recovery-period", "0")
	if on.code != exitOK || !strings.Contains(on.stdout, "restart: safe: 2 of 3 usable nodes (n2, n3) forget locks on restart") {
		t.Errorf("recovery on: exit %d, want 0:\n%s", on.code, on.stdout)
	}
	if !matchLine(doctorLine(on.stdout, 2), "ok   n3 .*appendonly yes (INFO), appendfsync unknown, save unknown: CONFIG GET refused") {
		t.Errorf("n3 line %q: want its settings unknown", doctorLine(on.stdout, 2))
	}
	if off.code != doctorWarnings || !strings.Contains(off.stdout, "restart: NOT SAFE: 2 of 3 usable nodes (n2, n3)") {
		t.Errorf("recovery off: exit %d, want %d:\n%s", off.code, doctorWarnings, off.stdout)
	}
	warned := 0
	for i := range 3 {
		if strings.HasPrefix(doctorLine(off.stdout, i), "WARN") {
			warned++
		}
	}
	if warned != 2 || !strings.HasPrefix(doctorLine(off.stdout, 0), "ok") {
		t.Errorf("recovery off: %d nodes warned, want 2 (n2, n3):\n%s", warned, off.stdout)
	}
	if r := runBin(t, c.Addrs(), "doctor", "--recovery-period", "-1s"); r.code != exitUsage {
		t.Errorf("negative recovery period: exit %d, want %d", r.code, exitUsage)
	}
	// A node told of a day's hold: a restarted node sits out a day, and doctor says so.
	if strings.Contains(on.stdout, "here ") {
		t.Errorf("no hold told, doctor names one:\n%s", on.stdout)
	}
	if err := cl[0].Set(t.Context(), "quorumlock:node", "V 86400000", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if r := runBin(t, c.Addrs(), "doctor"); !strings.Contains(r.stdout, "recovery period 10m0s (at least the longest TTL any client uses), or the longest hold told to the nodes if longer, here 24h0m0s") {
		t.Errorf("a hold of 24h told: the restart line does not say it:\n%s", r.stdout)
	}
}

// The offset takes the node's reading at the middle of the round trip; a
// real node's clock cannot be moved, so the warning threshold is checked here.
func TestClockOffset(t *testing.T) {
	sent := time.Unix(1000, 0)
	if got := clockOffset(sent, 10*time.Millisecond, sent.Add(5*time.Millisecond)); got != 0 {
		t.Errorf("node read at mid-trip: offset %s, want 0", got)
	}
	if got := clockOffset(sent, 0, sent.Add(-2*time.Second)); got != -2*time.Second {
		t.Errorf("node 2s behind: offset %s", got)
	}
}

func configSet(t *testing.T, c *redis.Client, k, v string) {
	t.Helper()
	if err := c.ConfigSet(t.Context(), k, v).Err(); err != nil {
		t.Fatal(err)
	}
}

func aclDefault(t *testing.T, c *redis.Client, rules ...string) {
	t.Helper()
	args := []any{"ACL", "SETUSER", "default"}
	for _, r := range rules {
		args = append(args, r)
	}
	if err := c.Do(t.Context(), args...).Err(); err != nil {
		t.Fatal(err)
	}
}

// doctorLine is the line of node i (0-based).
func doctorLine(out string, i int) string {
	label := " n" + string(rune('1'+i)) + " "
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 4 && strings.HasPrefix(line[4:], label) {
			return line
		}
	}
	return ""
}

// matchLine: want is "PREFIX .*PART.*PART": the line starts with PREFIX and
// holds the parts in order.
func matchLine(line, want string) bool {
	parts := strings.Split(want, ".*")
	if !strings.HasPrefix(line, parts[0]) {
		return false
	}
	rest := line[len(parts[0]):]
	for _, p := range parts[1:] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return true
}

// One node of three down: a lock can still be taken, but one more failure
// stops every lock. That is not OK: doctor says DEGRADED, with how many
// more failures the quorum survives, and exits doctorDegraded.
func TestDoctorDegraded(t *testing.T) {
	c := redistest.StartT(t, 5)
	if err := c.Nodes()[2].Kill(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addrs     []string
		survives  string
		allUpText string
	}{
		{c.Addrs()[:3], "survives only 0 more node failures", "(1 with all 3 nodes up)"},
		{c.Addrs(), "survives only 1 more node failure", "(2 with all 5 nodes up)"},
	} {
		r := runBin(t, tc.addrs, "doctor")
		if r.code != doctorDegraded {
			t.Errorf("%d nodes, one down: exit %d, want %d", len(tc.addrs), r.code, doctorDegraded)
		}
		for _, want := range []string{"FAIL n3 ", "verdict: DEGRADED: n3 not usable", tc.survives, tc.allUpText} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%d nodes, one down: output lacks %q:\n%s", len(tc.addrs), want, r.stdout)
			}
		}
		if strings.Contains(r.stdout, "verdict: OK") {
			t.Errorf("verdict OK with a node down:\n%s", r.stdout)
		}
	}
}

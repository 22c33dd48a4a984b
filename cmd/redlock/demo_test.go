package main

import (
	"bytes"
	"regexp"
	"strconv"
	"testing"
)

func TestDemoBinary(t *testing.T) {
	r := runBin(t, nil, "demo", "--duration", "2s")
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	checkDemo(t, r.stdout)
}

// In process, so that the race detector sees the demo's goroutines.
func TestDemoInProcess(t *testing.T) {
	t.Setenv(nodesEnv, "")
	var out bytes.Buffer
	if err := run(t.Context(), []string{"demo", "--duration", "2s"}, &out, &out); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	checkDemo(t, out.String())
}

var verdict = regexp.MustCompile(`PASS: overlaps (\d+) .*fenced rejections (\d+)`)

func checkDemo(t *testing.T, out string) {
	t.Helper()
	m := verdict.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no verdict line in:\n%s", out)
	}
	if m[1] != "0" {
		t.Errorf("overlaps %s, want 0", m[1])
	}
	if n, _ := strconv.Atoi(m[2]); n < 1 {
		t.Errorf("fenced rejections %s, want at least 1 (the paused holder's late write)", m[2])
	}
	for _, want := range []string{"SERVICE", "WAIT p99", "FINAL STATUS", "paused holder", "node n5 stopped"} {
		if !bytes.Contains([]byte(out), []byte(want)) {
			t.Errorf("output lacks %q", want)
		}
	}
}

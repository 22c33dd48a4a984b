package main

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/internal/redistest"
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

// The demo's /metrics, scraped after the run while still served, counts the
// paused holder's loss and the refusal of its late write.
func TestDemoMetrics(t *testing.T) {
	t.Setenv(nodesEnv, "")
	var scraped string
	var scrapeErr error
	demoMetricsServed = func(addr string) { scraped, scrapeErr = scrape("http://" + addr + "/metrics") }
	t.Cleanup(func() { demoMetricsServed = func(string) {} })
	var out bytes.Buffer
	// 4s: the other replicas write until 3/4 of the run, leaving the paused
	// holder (paused at 1/4, for a TTL) a wider window than a 2s run does on
	// a loaded machine.
	if err := run(t.Context(), []string{"demo", "--duration", "4s", "--metrics-addr", "127.0.0.1:0"}, &out, &out); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	if scrapeErr != nil {
		t.Fatal(scrapeErr)
	}
	checkDemo(t, out.String())
	paused := demoServices[0]
	for _, w := range []struct {
		series string
		min    float64
	}{
		{`quorumlock_losses_total{class="` + paused + `",reason="expired"}`, 1},
		{`quorumlock_fenced_rejections_total{class="` + paused + `"}`, 1},
		{`quorumlock_acquisitions_total{class="` + paused + `",result="acquired"}`, 1},
		{`quorumlock_node_errors_total{node="n5",op="acquire"}`, 1}, // the node stopped midway
	} {
		v, ok := sample(scraped, w.series)
		if !ok || v < w.min {
			t.Errorf("%s = %v (found %v), want at least %v in:\n%s", w.series, v, ok, w.min, scraped)
		}
	}
	if m := verdict.FindStringSubmatch(out.String()); m != nil {
		v, _ := sample(scraped, `quorumlock_fenced_rejections_total{class="`+paused+`"}`)
		if want, _ := strconv.ParseFloat(m[2], 64); v != want {
			t.Errorf("fenced rejections: %v in /metrics, %v in the demo's summary", v, want)
		}
	}
	if v, _ := sample(scraped, `quorumlock_held_locks{class="`+paused+`"}`); v != 0 {
		t.Errorf("held locks of %s after the run: %v, want 0", paused, v)
	}
}

func scrape(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// sample finds the value of one series line in a text exposition.
func sample(text, series string) (float64, bool) {
	for line := range strings.Lines(text) {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// An exported REDLOCK_NODES (here unreachable) is not the demo's: it runs
// on its embedded nodes and says so.
func TestDemoIgnoresNodesEnv(t *testing.T) {
	r := runBin(t, []string{freeAddr(t)}, "demo", "--duration", "1s")
	if r.code != 0 || !strings.Contains(r.stdout, "5 embedded memory nodes") || !strings.Contains(r.stdout, "REDLOCK_NODES ignored") {
		t.Fatalf("demo with REDLOCK_NODES set: exit %d; want 0 on the embedded nodes, saying REDLOCK_NODES is ignored", r.code)
	}
}

// On real nodes (--nodes) the demo writes under a "demo:" prefix of its own
// and removes all of it: nothing is left under that prefix, and nothing
// was written under the default "lock:".
func TestDemoOnRealNodesRemovesItsKeys(t *testing.T) {
	c := redistest.StartT(t, 3)
	r := runBin(t, nil, "demo", "--duration", "1s", "--nodes", strings.Join(c.Addrs(), ","))
	if r.code != 0 || !verdict.MatchString(r.stdout) {
		t.Fatalf("demo on real nodes: exit %d", r.code)
	}
	if !regexp.MustCompile(`cleanup: removed [1-9]\d* keys under demo:`).MatchString(r.stdout) {
		t.Errorf("no cleanup line in the output")
	}
	for i, rc := range c.Clients() {
		keys, err := rc.Keys(t.Context(), "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if strings.HasPrefix(k, "demo:") || strings.HasPrefix(k, "lock:") {
				t.Errorf("node %d: key %q left behind", i+1, k)
			}
		}
	}
}

package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

func TestLsListsHeldLocks(t *testing.T) {
	c := redistest.StartT(t, 3)
	client := lockClient(t, c)
	a := hold(t, client, "job-a", 30*time.Second)
	hold(t, client, "job-b", 30*time.Second)

	r := runBin(t, c.Addrs(), "ls")
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	for _, key := range []string{"job-a", "job-b"} {
		row := rowOf(r.stdout, key)
		if !strings.Contains(row, "yes (3/3)") {
			t.Errorf("%s: row %q, want majority yes (3/3)", key, row)
		}
	}
	token, err := c.Clients()[0].Get(t.Context(), "lock:{job-a}").Result()
	if err != nil || a == nil {
		t.Fatalf("job-a's token on node 0: %v", err)
	}
	if row := rowOf(r.stdout, "job-a"); !strings.Contains(row, token[:6]) {
		t.Errorf("job-a row %q lacks the holder's token prefix %s", row, token[:6])
	}
	if strings.Contains(r.stdout, token) {
		t.Error("ls printed a whole token")
	}
	if strings.Contains(r.stdout, ":fence") {
		t.Error("ls listed a fence counter")
	}

	r = runBin(t, c.Addrs(), "ls", "job-b*")
	if rowOf(r.stdout, "job-b") == "" || rowOf(r.stdout, "job-a") != "" {
		t.Errorf("ls job-b*: %q, want job-b only", r.stdout)
	}

	// A node down: still listed, unreadable, majority from the other two.
	if err := c.Nodes()[2].Kill(); err != nil {
		t.Fatal(err)
	}
	r = runBin(t, c.Addrs(), "ls", "job-a")
	if row := rowOf(r.stdout, "job-a"); r.code != 0 || !strings.Contains(row, "?") || !strings.Contains(row, "yes (2/3)") {
		t.Errorf("with n3 down: exit %d, row %q", r.code, row)
	}
	if !strings.Contains(r.stdout, "n3="+c.Addrs()[2]+" (unreadable: ") {
		t.Errorf("n3 not marked unreadable: %q", r.stdout)
	}
}

// Nodes that answer PING but refuse EVAL (an ACL) are unreadable, not
// "down" and not "free": with 2 of 3 unreadable ls cannot judge and exits 3.
func TestLsUnreadableNodes(t *testing.T) {
	c := redistest.StartT(t, 3)
	hold(t, lockClient(t, c), "job-acl", 30*time.Second)
	denyEval(t, c.Clients()[0])
	r := runBin(t, c.Addrs(), "ls")
	if row := rowOf(r.stdout, "job-acl"); r.code != 0 || !strings.Contains(row, "yes (2/3)") {
		t.Errorf("EVAL denied on n1: exit %d, row %q, want 0 and yes (2/3)", r.code, row)
	}
	if !strings.Contains(r.stdout, "n1="+c.Addrs()[0]+" (unreadable: ") || !strings.Contains(r.stdout, "NOPERM") {
		t.Errorf("n1 not marked unreadable with the reason: %q", r.stdout)
	}
	denyEval(t, c.Clients()[1])
	r = runBin(t, c.Addrs(), "ls")
	if r.code != exitUnreachable || r.stdout != "" {
		t.Errorf("EVAL denied on 2 of 3: exit %d, stdout %q; want 3 and nothing listed", r.code, r.stdout)
	}
	oneLine(t, r.stderr, "only 1 of 3 nodes readable, need 2")
}

func denyEval(t *testing.T, rc *redis.Client) {
	t.Helper()
	if err := rc.Do(t.Context(), "ACL", "SETUSER", "default", "-eval", "-evalsha").Err(); err != nil {
		t.Fatal(err)
	}
}

// A key with a newline or a space is quoted, so that each lock stays one
// row of whitespace-separated fields.
func TestLsQuotesKeys(t *testing.T) {
	c := redistest.StartT(t, 1)
	client := lockClient(t, c)
	hold(t, client, "line\nbreak", 30*time.Second)
	hold(t, client, "two words", 30*time.Second)
	hold(t, client, "plain", 30*time.Second)
	r := runBin(t, c.Addrs(), "ls")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); r.code != 0 || len(lines) != 5 {
		t.Fatalf("exit %d, %d lines, want 5 (nodes, header, 3 locks): %q", r.code, len(lines), r.stdout)
	}
	for _, want := range []string{`"line\nbreak"`, `"two words"`, "plain"} {
		if rowOf(r.stdout, strings.Fields(want)[0]) == "" {
			t.Errorf("no row starting with %s: %q", want, r.stdout)
		}
	}
}

func TestLsJSON(t *testing.T) {
	c := redistest.StartT(t, 3)
	hold(t, lockClient(t, c), "job:json", 30*time.Second)
	if err := c.Nodes()[2].Kill(); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, c.Addrs(), "ls", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	token, err := c.Clients()[0].Get(t.Context(), "lock:{job:json}").Result()
	if err != nil {
		t.Fatal(err)
	}
	var row struct {
		Key      string
		Holder   string
		Fence    uint64
		Votes    int
		Quorum   int
		Majority *bool
		Nodes    []struct {
			Node       string
			Holder     string
			TTLMillis  *int64 `json:"ttl_ms"`
			Unreadable string
		}
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one JSON object per lock, got %q", r.stdout)
	}
	if err := json.Unmarshal([]byte(lines[0]), &row); err != nil {
		t.Fatal(err)
	}
	if row.Key != "job:json" || row.Holder != token[:6] || row.Fence == 0 || row.Votes != 2 || row.Quorum != 2 || row.Majority == nil || !*row.Majority || len(row.Nodes) != 3 {
		t.Errorf("row %+v", row)
	}
	for i, n := range row.Nodes[:2] {
		if n.Node != c.Addrs()[i] || n.Holder != token[:6] || n.TTLMillis == nil || *n.TTLMillis <= 0 || *n.TTLMillis > 30000 {
			t.Errorf("node %d: %+v", i, n)
		}
	}
	if n := row.Nodes[2]; n.Unreadable == "" || n.TTLMillis != nil {
		t.Errorf("killed node: %+v, want unreadable and no TTL", n)
	}
	if strings.Contains(r.stdout, token) {
		t.Error("a whole token printed")
	}
}

func TestLsEmpty(t *testing.T) {
	c := redistest.StartT(t, 1)
	r := runBin(t, c.Addrs(), "ls")
	if r.code != 0 || !strings.Contains(r.stdout, "no locks held") {
		t.Errorf("exit %d, stdout %q", r.code, r.stdout)
	}
}

func rowOf(out, key string) string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == key {
			return line
		}
	}
	return ""
}

// Readable nodes hold the lock on less than a majority, but the unreadable
// ones could make it one: the verdict is unknown (JSON: null), not "no".
func TestLsMajorityUnknown(t *testing.T) {
	c := redistest.StartT(t, 5)
	hold(t, lockClient(t, c), "job:maybe", 30*time.Second)
	cl := c.Clients()
	if err := cl[0].Del(t.Context(), "lock:{job:maybe}").Err(); err != nil {
		t.Fatal(err)
	}
	denyEval(t, cl[3])
	denyEval(t, cl[4])
	r := runBin(t, c.Addrs(), "ls")
	if row := rowOf(r.stdout, "job:maybe"); r.code != 0 || !strings.Contains(row, "unknown (2/5)") {
		t.Errorf("exit %d, row %q, want unknown (2/5)", r.code, row)
	}
	r = runBin(t, c.Addrs(), "ls", "-o", "json")
	var row map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &row); err != nil {
		t.Fatal(err)
	}
	if m, ok := row["majority"]; !ok || m != nil {
		t.Errorf("majority = %v (present %v), want null", m, ok)
	}
}

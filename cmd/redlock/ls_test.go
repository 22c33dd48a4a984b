package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
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
	token := tokenOn(t, c, "job-a")
	if row := rowOf(r.stdout, "job-a"); !strings.Contains(row, node.ReleaseID(token)) || !strings.Contains(row, a.Owner()) {
		t.Errorf("job-a row %q lacks the holder's id %s or owner %s", row, node.ReleaseID(token), a.Owner())
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
	r := runBin(t, c.Addrs(), "ls", "--single-node")
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
	before := time.Now()
	l := hold(t, lockClient(t, c), "job:json", 30*time.Second)
	if err := c.Nodes()[2].Kill(); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, c.Addrs(), "ls", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	token := tokenOn(t, c, "job:json")
	var row struct {
		Key        string
		Holder     string
		Owner      string
		AcquiredAt *time.Time `json:"acquired_at"`
		AgeMillis  *int64     `json:"age_ms"`
		Fence      uint64
		Votes      int
		Quorum     int
		Majority   *bool
		Nodes      []struct {
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
	if row.Owner != l.Owner() || row.AcquiredAt == nil || !row.AcquiredAt.Equal(l.AcquiredAt()) ||
		row.AgeMillis == nil || *row.AgeMillis < 0 || *row.AgeMillis > time.Since(before).Milliseconds() {
		t.Errorf("owner %q acquired_at %v age_ms %v; want %q, %v and an age since the acquisition",
			row.Owner, row.AcquiredAt, row.AgeMillis, l.Owner(), l.AcquiredAt())
	}
	if row.Key != "job:json" || row.Holder != node.ReleaseID(token) || row.Fence == 0 || row.Votes != 2 || row.Quorum != 2 || row.Majority == nil || !*row.Majority || len(row.Nodes) != 3 {
		t.Errorf("row %+v", row)
	}
	for i, n := range row.Nodes[:2] {
		if n.Node != c.Addrs()[i] || n.Holder != node.ReleaseID(token) || n.TTLMillis == nil || *n.TTLMillis <= 0 || *n.TTLMillis > 30000 {
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
	c := redistest.StartT(t, 3)
	r := runBin(t, c.Addrs(), "ls")
	if r.code != 0 || !strings.Contains(r.stdout, "no locks held") {
		t.Errorf("exit %d, stdout %q", r.code, r.stdout)
	}
	for _, bad := range []string{"job[", `job\`, ""} { // refused by Client.Locks
		r := runBin(t, c.Addrs(), "ls", bad)
		if r.code != exitUsage || r.stdout != "" {
			t.Errorf("ls %q: exit %d, stdout %q; want %d", bad, r.code, r.stdout, exitUsage)
		}
		oneLine(t, r.stderr, "invalid argument")
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
// ones could make it one. Client.Locks lists only what a majority holds, so
// ls does not list the lock: it warns on stderr that such locks are not
// listed, in both formats.
func TestLsMajorityUnknown(t *testing.T) {
	c := redistest.StartT(t, 5)
	hold(t, lockClient(t, c), "job:maybe", 30*time.Second)
	waitKeyEverywhere(t, c, "lock:{job:maybe}") // the acquisition returned at a majority: no request of it lands after the delete
	cl := c.Clients()
	if err := cl[0].Del(t.Context(), "lock:{job:maybe}").Err(); err != nil {
		t.Fatal(err)
	}
	denyEval(t, cl[3])
	denyEval(t, cl[4])
	const warning = "2 of 5 nodes unreadable: a lock held on fewer than 3 of the readable nodes is not listed"
	r := runBin(t, c.Addrs(), "ls")
	if r.code != 0 || rowOf(r.stdout, "job:maybe") != "" || !strings.Contains(r.stdout, "no locks held") {
		t.Errorf("exit %d, stdout %q; want 0 and no lock listed", r.code, r.stdout)
	}
	oneLine(t, r.stderr, warning)
	if !strings.Contains(r.stdout, "n4="+c.Addrs()[3]+" (unreadable: ") {
		t.Errorf("n4 not marked unreadable: %q", r.stdout)
	}
	r = runBin(t, c.Addrs(), "ls", "-o", "json")
	if r.code != 0 || r.stdout != "" {
		t.Errorf("json: exit %d, stdout %q; want 0 and nothing", r.code, r.stdout)
	}
	oneLine(t, r.stderr, warning)
}

// The OWNER and AGE columns: a statuslock-style key held by a named owner
// shows that owner and an age since its acquisition; an owner with a space
// is quoted like a key.
func TestLsShowsOwnerAndAge(t *testing.T) {
	c := redistest.StartT(t, 3)
	var nodes []node.Node
	for _, rc := range c.Clients() {
		nodes = append(nodes, redisnode.New(rc))
	}
	client, err := redlock.New(nodes, redlock.WithOwner("deployer pod-7"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	hold(t, client, "status:billing", 30*time.Second)
	hold(t, lockClient(t, c), "job:other", 30*time.Second)
	r := runBin(t, c.Addrs(), "ls", "status:*")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 3 || rowOf(r.stdout, "job:other") != "" {
		t.Fatalf("exit %d, stdout %q; want the nodes, a header and status:billing", r.code, r.stdout)
	}
	if f := strings.Fields(lines[1]); len(f) < 5 || f[2] != "OWNER" || f[3] != "AGE" {
		t.Errorf("header %q, want KEY HOLDER OWNER AGE ...", lines[1])
	}
	f := strings.Fields(rowOf(r.stdout, "status:billing"))
	if len(f) < 6 || f[2]+" "+f[3] != `"deployer pod-7"` {
		t.Fatalf("row %q, want the quoted owner third", lines[2])
	}
	if age, err := time.ParseDuration(f[4]); err != nil || age < 0 || age > 5*time.Minute {
		t.Errorf("AGE %q (%v), want a duration since the acquisition", f[4], err)
	}
}

// tokenOn reads key's token on the first node.
func tokenOn(t *testing.T, c *redistest.Cluster, key string) string {
	t.Helper()
	v, err := c.Clients()[0].Get(t.Context(), "lock:{"+key+"}").Result()
	if err != nil {
		t.Fatalf("%s on node 0: %v", key, err)
	}
	return wire.ParseLockValue(v).Token
}

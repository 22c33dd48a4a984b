package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/election"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// elect runs CMD as leader with the term's fence and value, resigns when
// CMD exits (leader then finds none), and passes CMD's status through.
func TestElectRunsAndResigns(t *testing.T) {
	c := redistest.StartT(t, 3)
	r := runBin(t, c.Addrs(), "elect", "--value", "node-1", "sched", "--", "sh", "-c", `echo "$REDLOCK_KEY $REDLOCK_OWNER $REDLOCK_FENCE"; exit 7`)
	var fence uint64
	if _, err := fmt.Sscanf(strings.TrimSpace(r.stdout), "sched node-1 %d", &fence); r.code != 7 || err != nil || fence == 0 {
		t.Fatalf("exit %d, stdout %q; want 7 and \"sched node-1 <fence>\" (%v)", r.code, r.stdout, err)
	}
	r = runBin(t, c.Addrs(), "leader", "sched")
	if r.code != exitNoLeader || r.stdout != "" {
		t.Fatalf("leader after elect's CMD exited: exit %d, stdout %q; want %d and nothing", r.code, r.stdout, exitNoLeader)
	}
	oneLine(t, r.stderr, "no leader")
}

// leader prints the value, fence and start of the current term; elect waits
// while another leads and runs once it resigns, with a larger fence.
func TestLeaderAndElectWaits(t *testing.T) {
	c := redistest.StartT(t, 3)
	e, err := election.New(lockClient(t, c), "sched")
	if err != nil {
		t.Fatal(err)
	}
	term, err := e.Campaign(t.Context(), "first")
	if err != nil {
		t.Fatal(err)
	}
	r := runBin(t, c.Addrs(), "leader", "sched")
	fields := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\t")
	var shown uint64
	if len(fields) == 3 {
		_, _ = fmt.Sscanf(fields[1], "%d", &shown)
	}
	// The fence shown is the largest a node reported: at least the term's.
	if r.code != 0 || len(fields) != 3 || fields[0] != "first" || shown < term.Fence() {
		t.Fatalf("leader: exit %d, stdout %q; want \"first\\t<fence >= %d>\\t<since>\"", r.code, r.stdout, term.Fence())
	}
	if _, err := time.Parse(time.RFC3339Nano, fields[2]); err != nil {
		t.Fatalf("since %q: %v", fields[2], err)
	}
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	done := make(chan result, 1)
	go func() {
		done <- runBin(t, c.Addrs(), "elect", "--value", "second", "sched", "--", "sh", "-c", `echo $REDLOCK_FENCE > "$1"`, "sh", started)
	}()
	// While "first" leads, elect's CMD does not run: look a few times.
	for range 5 {
		time.Sleep(200 * time.Millisecond)
		if _, err := os.Stat(started); err == nil {
			t.Fatal("elect ran CMD while another leads")
		}
	}
	if err := term.Resign(t.Context()); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.code != 0 {
		t.Fatalf("elect: exit %d, want 0", r.code)
	}
	b, err := os.ReadFile(started)
	var fence uint64
	if _, serr := fmt.Sscanf(string(b), "%d", &fence); err != nil || serr != nil || fence <= term.Fence() {
		t.Fatalf("elect's CMD wrote %q (%v); want a fence above %d", b, err, term.Fence())
	}
}

// Leadership lost while CMD runs (2 of 3 nodes killed): CMD gets SIGTERM
// and elect exits 4, long before CMD's 30 s.
func TestElectLostTerminatesChild(t *testing.T) {
	c := redistest.StartT(t, 3)
	dir := t.TempDir()
	started, termed := filepath.Join(dir, "started"), filepath.Join(dir, "term")
	script := `trap 'echo TERM > "$2"; kill $! 2>/dev/null; exit 0' TERM; touch "$1"; sleep 30 & wait`
	done := make(chan result, 1)
	go func() {
		done <- runBin(t, c.Addrs(), "elect", "--ttl", "3s", "--grace", "3s", "sched", "--", "sh", "-c", script, "sh", started, termed)
	}()
	waitFile(t, started, 2*time.Minute) // hang guard
	for _, n := range c.Nodes()[:2] {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	r := <-done
	if r.code != exitLockLost {
		t.Errorf("exit %d, want %d (leadership lost)", r.code, exitLockLost)
	}
	if b, err := os.ReadFile(termed); err != nil || !strings.Contains(string(b), "TERM") {
		t.Errorf("child did not get SIGTERM: %v %q", err, b)
	}
	oneLine(t, r.stderr, "redlock elect: leadership of \"sched\" lost")
}

func TestElectLeaderBadUsage(t *testing.T) {
	c := redistest.StartT(t, 1)
	for _, args := range [][]string{
		{"elect"},
		{"elect", "name"},
		{"elect", "--ttl", "0", "name", "--", "true"},
		{"elect", "--value", "a\tb", "name", "--", "true"},
		{"leader"},
		{"leader", "a", "b"},
	} {
		if r := runBin(t, c.Addrs(), args...); r.code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, r.code, exitUsage)
		}
	}
}

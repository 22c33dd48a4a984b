package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// stillHeld checks through the library that l is still held by its token.
func stillHeld(t *testing.T, l *redlock.Lock) {
	t.Helper()
	if err := l.Extend(t.Context(), 30*time.Second); err != nil {
		t.Fatalf("the lock is no longer held: %v", err)
	}
}

func TestInspectShowsHolder(t *testing.T) {
	c := redistest.StartT(t, 3)
	l := hold(t, lockClient(t, c), "deploy:svc-1", 30*time.Second)
	// Acquire returns once a majority granted; the third grant may still
	// be on its way, and "nodes agree" needs it.
	waitKeyEverywhere(t, c, "lock:{deploy:svc-1}")
	r := runBin(t, c.Addrs(), "inspect", "deploy:svc-1")
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	for _, want := range []string{"held       yes (nodes agree)", "owner      " + l.Owner(), "acquired   " + l.AcquiredAt().UTC().Format(time.RFC3339Nano)} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if n := strings.Count(r.stdout, l.Owner()); n != 4 {
		t.Errorf("owner shown %d times, want 4 (the majority and each of 3 nodes)", n)
	}
	stillHeld(t, l)

	r = runBin(t, c.Addrs(), "inspect", "deploy:free")
	if r.code != 0 || !strings.Contains(r.stdout, "held   no (nodes agree)") {
		t.Fatalf("a free key: exit %d", r.code)
	}
	if r := runBin(t, c.Addrs(), "inspect"); r.code != exitUsage {
		t.Errorf("inspect without KEY: exit %d, want %d", r.code, exitUsage)
	}
	if r := runBin(t, c.Addrs(), "inspect", ""); r.code != exitUsage {
		t.Errorf("inspect of an empty KEY: exit %d, want %d", r.code, exitUsage)
	}
}

// Without a terminal and without --yes, unlock refuses and changes nothing;
// without --force it is a usage error.
func TestUnlockRefusesWithoutConfirmation(t *testing.T) {
	c := redistest.StartT(t, 3)
	l := hold(t, lockClient(t, c), "deploy:svc-2", 30*time.Second)
	r := runBin(t, c.Addrs(), "unlock", "--force", "deploy:svc-2")
	if r.code != exitUsage {
		t.Fatalf("unlock --force without a terminal: exit %d, want %d", r.code, exitUsage)
	}
	oneLine(t, r.stderr, "stdin is not a terminal; pass --yes")
	r = runBin(t, c.Addrs(), "unlock", "--yes", "deploy:svc-2")
	if r.code != exitUsage {
		t.Fatalf("unlock without --force: exit %d, want %d", r.code, exitUsage)
	}
	oneLine(t, r.stderr, "--force evicts the holder")
	stillHeld(t, l)
}

// unlock --force --yes evicts the holder: its next extension reports the
// loss, and the next holder's fence is larger.
func TestUnlockForceEvicts(t *testing.T) {
	c := redistest.StartT(t, 3)
	client := lockClient(t, c)
	l, err := client.TryAcquire(t.Context(), "deploy:svc-3", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r := runBin(t, c.Addrs(), "unlock", "--force", "--yes", "deploy:svc-3")
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	if !strings.Contains(r.stdout, "evicted "+l.Owner()) {
		t.Errorf("stdout does not name the evicted owner %q", l.Owner())
	}
	if err := l.Extend(t.Context(), 30*time.Second); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("the evicted holder's extension: %v, want ErrLockLost", err)
	}
	next := hold(t, client, "deploy:svc-3", 30*time.Second)
	if next.Fence() <= l.Fence() {
		t.Fatalf("next fence %d is not above the evicted %d", next.Fence(), l.Fence())
	}
	if prev, ok := next.TookOver(); !ok || prev.Owner != l.Owner() {
		t.Fatalf("TookOver = %+v, %v; want the evicted holder", prev, ok)
	}
	r = runBin(t, c.Addrs(), "unlock", "--force", "--yes", "deploy:free")
	if r.code != exitConflict {
		t.Fatalf("unlock of a free key: exit %d, want %d", r.code, exitConflict)
	}
	oneLine(t, r.stderr, "nothing to release")
}

// On a terminal unlock asks; anything but y or yes keeps the lock.
func TestUnlockAsksOnTerminal(t *testing.T) {
	c := redistest.StartT(t, 3)
	l := hold(t, lockClient(t, c), "deploy:svc-4", 30*time.Second)
	in, term := confirmInput, stdinIsTerminal
	defer func() { confirmInput, stdinIsTerminal = in, term }()
	stdinIsTerminal = func() bool { return true }
	args := []string{"unlock", "--force", "--nodes", strings.Join(c.Addrs(), ","), "deploy:svc-4"}
	for _, answer := range []string{"n\n", "\n", "yess\n", ""} {
		confirmInput = strings.NewReader(answer)
		var out bytes.Buffer
		err := run(context.Background(), args, &out, &out)
		if code, _ := codeOf(err); code != exitConflict || !strings.Contains(out.String(), "[y/N]") {
			t.Fatalf("answer %q: exit %d, output %q", answer, code, out.String())
		}
		stillHeld(t, l)
	}
	confirmInput = strings.NewReader("y\n")
	var out bytes.Buffer
	if err := run(context.Background(), args, &out, &out); err != nil {
		t.Fatalf("answer y: %v", err)
	}
	if err := l.Extend(t.Context(), 30*time.Second); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("after a confirmed unlock the holder's extension: %v, want ErrLockLost", err)
	}
}

// exec records "host/<redlock's pid>/exec CMD" as the owner (or --owner),
// gives it to CMD as REDLOCK_OWNER, and inspect and ls show it while CMD
// runs; a bad --owner is a usage error with the library's message.
func TestExecRecordsOwner(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finds redlock's pid in /proc")
	}
	c := redistest.StartT(t, 3)
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	// The child (sh) runs under the unit's supervisor, whose parent is
	// redlock: the owner names that pid.
	// CMD does not inherit REDLOCK_NODES: the nodes are passed on.
	nodes := strings.Join(c.Addrs(), ",")
	script := `echo "owner=$REDLOCK_OWNER"; read -r _ _ _ pp _ < /proc/$PPID/stat; echo "redlock=$pp"; '` +
		bin + `' inspect --nodes ` + nodes + ` job:own; '` + bin + `' ls --nodes ` + nodes + ` 'job:*'`
	r := runBin(t, c.Addrs(), "exec", "job:own", "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	var owner, pid string
	for _, line := range strings.Split(r.stdout, "\n") {
		if v, ok := strings.CutPrefix(line, "owner="); ok {
			owner = v
		}
		if v, ok := strings.CutPrefix(line, "redlock="); ok {
			pid = v
		}
	}
	if want := host + "/" + pid + "/exec sh"; pid == "" || owner != want {
		t.Fatalf("REDLOCK_OWNER %q, want %q", owner, want)
	}
	if !strings.Contains(r.stdout, "owner      "+owner) {
		t.Errorf("inspect does not show owner %q", owner)
	}
	if row := rowOf(r.stdout, "job:own"); !strings.Contains(row, owner) {
		t.Errorf("ls row %q lacks owner %q", row, owner)
	}

	r = runBin(t, c.Addrs(), "exec", "--owner", "deploy-bot 7", "job:own", "--", "sh", "-c",
		`echo "owner=$REDLOCK_OWNER"; '`+bin+`' inspect --nodes `+nodes+` job:own`)
	if r.code != 0 || !strings.Contains(r.stdout, "owner=deploy-bot 7\n") || !strings.Contains(r.stdout, "owner      deploy-bot 7\n") {
		t.Errorf("--owner: exit %d, stdout %q", r.code, r.stdout)
	}

	marker := filepath.Join(t.TempDir(), "ran")
	for owner, want := range map[string]string{
		"line\nbreak":            "control character",
		strings.Repeat("x", 300): "longer than 256",
	} {
		r := runBin(t, c.Addrs(), "exec", "--owner", owner, "job:own", "--", "touch", marker)
		if r.code != exitUsage {
			t.Errorf("--owner %.20q: exit %d, want %d", owner, r.code, exitUsage)
		}
		oneLine(t, r.stderr, want)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("CMD ran with a bad --owner")
	}
}

// waitKeyEverywhere waits until every node of c has key.
func waitKeyEverywhere(t *testing.T, c *redistest.Cluster, key string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // hang guard
	for _, rc := range c.Clients() {
		for rc.Exists(t.Context(), key).Val() != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("%s not on %s within the hang guard", key, rc.Options().Addr)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

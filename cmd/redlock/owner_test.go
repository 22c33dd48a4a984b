package main

import (
	"bytes"
	"context"
	"errors"
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

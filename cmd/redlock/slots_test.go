package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/semaphore"
)

// exec --slots N runs CMD while holding one of N permits: with all N held
// elsewhere -n exits 1 without running CMD; with one freed, CMD runs under
// that slot's key and fence.
func TestExecSlots(t *testing.T) {
	c := redistest.StartT(t, 3)
	sem, err := semaphore.New(lockClient(t, c), "exports", 2)
	if err != nil {
		t.Fatal(err)
	}
	var held []*semaphore.Permit
	for range 2 {
		p, err := sem.TryAcquire(t.Context(), 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Release(context.Background()) })
		held = append(held, p)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	r := runBin(t, c.Addrs(), "exec", "-n", "--slots", "2", "exports", "--", "touch", marker)
	if r.code != exitConflict {
		t.Fatalf("all permits held: exit %d, want %d (stderr %q)", r.code, exitConflict, r.stderr)
	}
	oneLine(t, r.stderr, `all 2 permits of "exports" are held`)
	freed := held[1]
	if err := freed.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	r = runBin(t, c.Addrs(), "exec", "-n", "--slots", "2", "exports", "--", "sh", "-c", `echo "$REDLOCK_KEY $REDLOCK_FENCE"`)
	if r.code != 0 {
		t.Fatalf("a permit free: exit %d (stderr %q)", r.code, r.stderr)
	}
	var key string
	var fence uint64
	if _, err := fmt.Sscanf(strings.TrimSpace(r.stdout), "%s %d", &key, &fence); err != nil {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	if key != semaphore.SlotKey("exports", freed.Slot()) || fence <= freed.Fence() {
		t.Fatalf("CMD ran under %q fence %d; want the freed slot %q with a fence above %d",
			key, fence, semaphore.SlotKey("exports", freed.Slot()), freed.Fence())
	}
	// Released afterwards: the permit is free again.
	p, err := sem.TryAcquire(t.Context(), 30*time.Second)
	if err != nil {
		t.Fatalf("exec did not release its permit: %v", err)
	}
	_ = p.Release(t.Context())
}

func TestExecSlotsBadUsage(t *testing.T) {
	nodes := []string{"127.0.0.1:1"} // never dialled: usage is checked first
	for _, args := range [][]string{
		{"exec", "--slots", "-1", "k", "--", "true"},
		{"exec", "--slots", "257", "k", "--", "true"},
		{"exec", "--slots", "many", "k", "--", "true"},
		{"exec", "--slots", "2", "a{b}", "--", "true"},
	} {
		r := runBin(t, nodes, args...)
		if r.code != exitUsage {
			t.Errorf("%v: exit %d, want 2", args, r.code)
		}
		oneLine(t, r.stderr, "redlock")
	}
}

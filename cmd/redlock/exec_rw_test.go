package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// Two --shared runs of one key hold it at once: each waits for the other's
// file, so both can finish only if both ran together.
func TestExecSharedRunsTogether(t *testing.T) {
	c := redistest.StartT(t, 3)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	wait := func(mine, theirs string) string {
		return fmt.Sprintf(`touch %s; i=0; while [ ! -e %s ]; do i=$((i+1)); [ $i -gt 6000 ] && exit 9; sleep 0.02; done`, mine, theirs)
	}
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i, cmd := range []string{wait(a, b), wait(b, a)} {
		wg.Go(func() { codes[i] = runBin(t, c.Addrs(), "exec", "--shared", "job:rw", "--", "sh", "-c", cmd).code })
	}
	wg.Wait()
	if codes[0] != 0 || codes[1] != 0 {
		t.Fatalf("exit codes %v, want both 0 (both readers held the lock at once)", codes)
	}
}

// A reader excludes a writer and the other way round; a plain exec (the
// mutex) is a lock apart. Fences: a reader's is at least the writer's.
func TestExecSharedExclusive(t *testing.T) {
	c := redistest.StartT(t, 3)
	dir := t.TempDir()
	started, stop := filepath.Join(dir, "started"), filepath.Join(dir, "stop")
	holdCmd := fmt.Sprintf(`echo "fence=$REDLOCK_FENCE"; touch %s; i=0; while [ ! -e %s ]; do i=$((i+1)); [ $i -gt 6000 ] && exit 9; sleep 0.02; done`, started, stop)
	var wg sync.WaitGroup
	var writer result
	wg.Go(func() { writer = runBin(t, c.Addrs(), "exec", "--exclusive", "job:rw", "--", "sh", "-c", holdCmd) })
	waitFile(t, started, 2*time.Minute)
	if r := runBin(t, c.Addrs(), "exec", "--shared", "-n", "job:rw", "--", "true"); r.code != 1 {
		t.Errorf("--shared -n while a writer holds: exit %d, want 1", r.code)
	}
	if r := runBin(t, c.Addrs(), "exec", "--exclusive", "-n", "job:rw", "--", "true"); r.code != 1 {
		t.Errorf("--exclusive -n while a writer holds: exit %d, want 1", r.code)
	}
	if r := runBin(t, c.Addrs(), "exec", "-n", "job:rw", "--", "true"); r.code != 0 {
		t.Errorf("plain exec (the mutex) while the writer holds: exit %d, want 0", r.code)
	}
	runBin(t, c.Addrs(), "exec", "-n", "job:touch", "--", "touch", stop)
	wg.Wait()
	var wfence, rfence uint64
	if _, err := fmt.Sscanf(strings.TrimSpace(writer.stdout), "fence=%d", &wfence); writer.code != 0 || err != nil || wfence == 0 {
		t.Fatalf("writer: exit %d, stdout %q", writer.code, writer.stdout)
	}
	r := runBin(t, c.Addrs(), "exec", "--shared", "-n", "job:rw", "--", "sh", "-c", `echo "fence=$REDLOCK_FENCE"`)
	if _, err := fmt.Sscanf(strings.TrimSpace(r.stdout), "fence=%d", &rfence); r.code != 0 || err != nil || rfence < wfence {
		t.Fatalf("reader after the writer: exit %d, stdout %q; want a fence of at least %d", r.code, r.stdout, wfence)
	}
}

func TestExecSharedAndExclusiveExcludeEachOther(t *testing.T) {
	r := runBin(t, nil, "exec", "--shared", "--exclusive", "k", "--", "true")
	if r.code != 2 || !strings.Contains(r.stderr, "--shared and --exclusive exclude each other") {
		t.Fatalf("exit %d, stderr %q; want a usage error (2)", r.code, r.stderr)
	}
}

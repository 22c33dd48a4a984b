package main

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// A SIGTERM or SIGINT to redlock while CMD ignores it: CMD (and the sleep
// it runs, which inherits the ignored disposition) is killed once --grace
// has passed, the lock is released, and redlock exits 128+N. The verdict
// is the exit code, the released lock and the dead processes; the time
// limit is a hang guard only.
func TestExecSignalEndsChildThatIgnoresIt(t *testing.T) {
	c := redistest.StartT(t, 3)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			key := "job:signal-" + strings.ReplaceAll(sig.String(), " ", "-")
			ready := filepath.Join(t.TempDir(), "ready")
			script := `trap "" TERM INT; echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; sleep 600`
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute) // hang guard
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "exec", "--grace", "1s", key, "--", "sh", "-c", script, "sh", ready)
			cmd.Env = append(withoutNodesEnv(), nodesEnv+"="+strings.Join(c.Addrs(), ","))
			cmd.WaitDelay = time.Minute
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFile(t, ready, 2*time.Minute)
			shPID := readPID(t, ready)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			if ctx.Err() != nil {
				t.Fatalf("redlock still running minutes after %s (hang guard)", sig)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 128+int(sig) {
				t.Errorf("after %s: %v, want exit %d", sig, err, 128+int(sig))
			}
			if syscall.Kill(shPID, 0) == nil {
				t.Errorf("CMD (pid %d) still runs after redlock exited", shPID)
				_ = syscall.Kill(shPID, syscall.SIGKILL)
			}
			// The lock was released: the next -n run gets it at once.
			if r := runBin(t, c.Addrs(), "exec", "-n", key, "--", "true"); r.code != 0 {
				t.Errorf("after %s: a later exec -n exits %d, want 0 (lock released)", sig, r.code)
			}
		})
	}
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/quorumlock/quorumlock/internal/defaults"
	"github.com/quorumlock/quorumlock/redlock"
)

// execArgs are the parsed flags and arguments of exec.
type execArgs struct {
	nonblock     bool          // -n, or -w 0: do not wait
	wait         time.Duration // with -w > 0: give up after this; 0: wait forever
	conflictCode int
	ttl, grace   time.Duration
	prefix       string
	nodes        nodeArgs
	owner        string // recorded on the nodes; see execOwner
	shared       bool   // --shared: a reader of KEY's read-write lock; see exec_rw.go
	exclusive    bool   // --exclusive: its writer
	key          string
	argv         []string      // CMD ARGS...
	slots        int           // --slots N: a permit of a semaphore (slots.go)
	tick         tickArgs      // --once-per, --tick, --min-hold (exec_tick.go)
	recovery     time.Duration // --recovery-period: redlock.WithRecoveryPeriod
}

func parseExec(args []string, stdout io.Writer) (*execArgs, error) {
	a := &execArgs{}
	fs := newFlagSet("exec")
	fs.BoolVar(&a.nonblock, "n", false, "fail at once if the lock is held elsewhere")
	wait := durationFlag(fs, &a.wait, "w", 0, "give up after waiting this long (0: do not wait)")
	fs.IntVar(&a.conflictCode, "E", exitConflict, "exit code for -n conflicts and -w timeouts")
	durationFlag(fs, &a.ttl, "ttl", 10*time.Second, "lock time to live")
	durationFlag(fs, &a.grace, "grace", 5*time.Second, "time between SIGTERM and SIGKILL")
	recoveryFlag(fs, &a.recovery)
	fs.StringVar(&a.prefix, "prefix", defaults.KeyPrefix, "key prefix on the nodes")
	nodesFlags(fs, &a.nodes)
	owner := fs.String("owner", "", "who holds the lock, as inspect and ls show it")
	slotsFlag(fs, a)
	tickFlags(fs, a)
	fs.BoolVar(&a.shared, "shared", false, "take KEY's read-write lock as a reader")
	fs.BoolVar(&a.exclusive, "exclusive", false, "take KEY's read-write lock as the writer")
	key, argv, err := parseAroundKey(fs, "exec", usageExec, args, stdout)
	if err != nil {
		return nil, err
	}
	a.key, a.argv = key, argv
	switch {
	case a.key == "" || a.key == "--":
		return nil, usageErr("exec", "missing KEY")
	case len(a.argv) == 0:
		return nil, usageErr("exec", "missing CMD after KEY %q", a.key)
	case a.nonblock && a.wait > 0:
		return nil, usageErr("exec", "-n and -w %s exclude each other (-w 0 is -n)", a.wait)
	case a.wait < 0:
		return nil, usageErr("exec", "-w %s is negative (0 means do not wait)", a.wait)
	case a.conflictCode < 0 || a.conflictCode > 255:
		return nil, usageErr("exec", "-E %d is not an exit code (0-255)", a.conflictCode)
	case a.ttl <= 0:
		return nil, usageErr("exec", "--ttl %s is not positive (e.g. --ttl 30 or --ttl 30s)", a.ttl)
	case a.grace < 0:
		return nil, usageErr("exec", "--grace %s is negative (0 sends SIGKILL at once)", a.grace)
	case a.shared && a.exclusive:
		return nil, usageErr("exec", "--shared and --exclusive exclude each other")
	case a.slots != 0 && (a.shared || a.exclusive):
		return nil, usageErr("exec", "--slots and --shared/--exclusive exclude each other")
	}
	if err := checkSlots(a); err != nil {
		return nil, err
	}
	if err := checkRecovery("exec", a.recovery, a.ttl); err != nil {
		return nil, err
	}
	if err := checkTick(a); err != nil {
		return nil, err
	}
	a.owner = *owner
	if a.owner == "" {
		a.owner = execOwner(a.argv[0])
	}
	if wait.set && a.wait == 0 {
		a.nonblock = true // flock(1): -w 0 does not wait
	}
	return a, nil
}

// parseAroundKey parses flags before and right after KEY, so that both
// "exec -n KEY -- CMD" and "exec KEY -n -- CMD" work, and returns KEY and
// CMD ARGS. Flags end at "--" or at CMD. KEY comes before "--": in
// "exec -- echo hi" the KEY is missing, and taking "echo" for it would run
// the wrong command under a lock nobody meant.
func parseAroundKey(fs *flag.FlagSet, cmd, usage string, args []string, stdout io.Writer) (string, []string, error) {
	if err := parse(fs, cmd, usage, args, stdout); err != nil {
		return "", nil, err
	}
	rest := fs.Args()
	keyWord := "KEY"
	if cmd == "elect" {
		keyWord = "NAME"
	}
	if len(rest) == 0 {
		return "", nil, usageErr(cmd, "missing %s and CMD", keyWord)
	}
	if i := len(args) - len(rest) - 1; i >= 0 && args[i] == "--" {
		return "", nil, usageErr(cmd, "missing %s: it goes before \"--\" (redlock %s [flags] %s -- CMD [ARGS...])", keyWord, cmd, keyWord)
	}
	key, argv := rest[0], rest[1:]
	if err := parse(fs, cmd, usage, argv, stdout); err != nil {
		return "", nil, err
	}
	return key, fs.Args(), nil
}

func runExec(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	a, err := parseExec(args, stdout)
	if err != nil {
		return err
	}
	path, err := exec.LookPath(a.argv[0])
	if err != nil {
		code := exitCannotExec // found, but a directory or not executable
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = exitNotFound
		}
		return exitf(code, "redlock exec: %s: %v", a.argv[0], unwrapExecErr(err))
	}

	// Signals: while waiting they abort the wait; while CMD runs they are
	// passed on to it.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	r, err := connect(ctx, "exec", a.nodes)
	if err != nil {
		return err
	}
	defer r.Close()
	if a.tick.on() {
		return runTickExec(ctx, r.nodes, a, path, sigs, stderr)
	}
	lk, err := newLocker(r.nodes, a)
	if err != nil { // a bad --owner, say: the library's message
		return usageErr("exec", "%v", err)
	}
	defer lk.close()

	lock, err := acquireForExec(ctx, lk, a, sigs)
	if err != nil {
		return err
	}
	lock.HoldAtLeast(a.tick.minHold)
	return runLocked(ctx, lock, a, path, sigs, stderr)
}

// acquireForExec takes the lock per -n / -w, aborting on a signal.
func acquireForExec(ctx context.Context, lk locker, a *execArgs, sigs <-chan os.Signal) (*redlock.Lock, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var got os.Signal
	sigDone := make(chan struct{})
	go func() {
		defer close(sigDone)
		select {
		case s := <-sigs:
			got = s
			cancel(errSignal)
		case <-ctx.Done():
		}
	}()
	defer func() { cancel(nil); <-sigDone }()

	wctx := ctx
	if a.wait > 0 {
		var wcancel context.CancelFunc
		wctx, wcancel = context.WithTimeoutCause(ctx, a.wait, errWaitTimeout)
		defer wcancel()
	}
	for {
		var lock *redlock.Lock
		var err error
		if a.nonblock {
			lock, err = lk.try(wctx, a.key, a.ttl)
		} else {
			lock, err = lk.wait(wctx, a.key, a.ttl)
		}
		switch {
		case err == nil:
			cancel(nil)
			<-sigDone
			if got != nil { // a signal raced with the acquisition
				releaseQuietly(lock)
				return nil, signalExit(got, "redlock exec: %s while acquiring %q", got, a.key)
			}
			return lock, nil
		case errors.Is(context.Cause(ctx), errSignal):
			<-sigDone
			return nil, signalExit(got, "redlock exec: %s while waiting for %q", got, a.key)
		case errors.Is(context.Cause(wctx), errWaitTimeout):
			return nil, exitf(a.conflictCode, "redlock exec: timed out after %s waiting for %q", a.wait, a.key)
		case errors.Is(err, redlock.ErrInvalidArgument):
			return nil, usageErr("exec", "%v", err)
		case errors.Is(err, redlock.ErrQuorumUnreachable):
			return nil, exitf(exitUnreachable, "redlock exec: %v", err)
		case errors.Is(err, redlock.ErrNotAcquired) && a.nonblock:
			return nil, exitf(a.conflictCode, "redlock exec: %s", heldElsewhere(a))
		case errors.Is(err, redlock.ErrNotAcquired):
			continue // still held: keep waiting, as flock(1) does
		default:
			return nil, exitf(exitUnreachable, "redlock exec: %v", err)
		}
	}
}

var (
	errSignal      = errors.New("signal received")
	errWaitTimeout = errors.New("wait timed out")
)

func signalExit(s os.Signal, format string, args ...any) error {
	code := 1
	if ss, ok := s.(syscall.Signal); ok {
		code = exitSignalBase + int(ss)
	}
	return exitf(code, format, args...)
}

// unwrapExecErr drops the "exec: "name": " and "fork/exec name: "
// decorations of exec errors.
func unwrapExecErr(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		if errors.Is(ee.Err, exec.ErrNotFound) {
			return errors.New("command not found")
		}
		err = ee.Err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// childEnv is the environment of CMD: redlock's, without REDLOCK_NODES
// (it may hold passwords, and CMD has no use for the lock's nodes), plus
// the lock's key, fence and owner.
func childEnv(l *redlock.Lock) []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, nodesEnv+"=") {
			env = append(env, e)
		}
	}
	return append(env,
		"REDLOCK_KEY="+l.Key(),
		"REDLOCK_FENCE="+strconv.FormatUint(l.Fence(), 10),
		"REDLOCK_OWNER="+l.Owner(),
	)
}

// execOwner is exec's default owner, "host/pid/exec CMD": the pid is
// redlock's own, since CMD's is not known before the lock is taken, and
// redlock's death ends CMD's unit. Characters an owner may not have
// (control characters, invalid UTF-8) become '?', and CMD is cut so that
// the owner stays well within node.MaxOwnerLen.
func execOwner(cmd string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	name := filepath.Base(cmd)
	if len(name) > 64 {
		name = name[:64] // a rune cut in half becomes '?' below
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(host+"/"+strconv.Itoa(os.Getpid())+"/exec "+name, "?"))
}

func describe(argv []string) string {
	if len(argv) == 1 {
		return argv[0]
	}
	if len(argv) == 2 {
		return argv[0] + " (with 1 argument)"
	}
	return fmt.Sprintf("%s (with %d arguments)", argv[0], len(argv)-1)
}

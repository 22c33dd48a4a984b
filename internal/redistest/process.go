package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	startAttempts = 4                      // new ports tried on a port race at first start
	termGrace     = 500 * time.Millisecond // SIGTERM grace at Close before SIGKILL
	reapTimeout   = 5 * time.Second        // a SIGKILLed process is always reaped long before this
	logTailBytes  = 2048
)

// pickPort is freePort; tests swap it to simulate losing the port race.
var pickPort = freePort

// processBackend runs redis-server binaries directly.
type processBackend struct {
	bin       string
	dir       string
	removeDir bool // dir is our temp dir
	extraArgs []string
	// clusterNodeTimeout > 0 runs every node as a Redis Cluster node
	// (StartSharded): its own bus port and nodes.conf, kept across restarts.
	clusterNodeTimeout time.Duration
}

func newProcessBackend(opts Options) (*processBackend, error) {
	bin, err := findRedisServer(opts.RedisServer)
	if err != nil {
		return nil, err
	}
	b := &processBackend{bin: bin, dir: opts.Dir, extraArgs: opts.ExtraArgs, clusterNodeTimeout: opts.clusterNodeTimeout}
	if b.dir == "" {
		if b.dir, err = os.MkdirTemp("", "redistest-"); err != nil {
			return nil, fmt.Errorf("redistest: %w", err)
		}
		b.removeDir = true
	}
	return b, nil
}

// findRedisServer resolves the binary: explicit path, $REDIS_SERVER, PATH.
func findRedisServer(path string) (string, error) {
	if path == "" {
		path = os.Getenv("REDIS_SERVER")
	}
	if path == "" {
		path = "redis-server"
	}
	bin, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("%w (looked for %q: %v)", ErrRedisServerNotFound, path, err)
	}
	return bin, nil
}

func (b *processBackend) newDriver(index int) driver {
	return &procDriver{b: b, dir: filepath.Join(b.dir, "node-"+strconv.Itoa(index))}
}

func (b *processBackend) close() error {
	if !b.removeDir {
		return nil
	}
	return os.RemoveAll(b.dir)
}

// procDriver is one redis-server process. Node's mutex serializes its use.
type procDriver struct {
	b      *processBackend
	dir    string
	port   int
	bus    int // cluster bus port, in cluster mode only
	proc   *os.Process
	done   chan struct{} // closed once proc has been reaped
	paused bool
}

func (p *procDriver) logPath() string    { return filepath.Join(p.dir, "redis.log") }
func (p *procDriver) stdoutPath() string { return filepath.Join(p.dir, "stdout.log") }

func (p *procDriver) start(ctx context.Context, first bool) (string, error) {
	if p.running() {
		return "", errors.New("already running")
	}
	var errs []error
	for attempt := range startAttempts {
		// Every attempt starts from a clean dir: a nodes.conf written by a
		// failed first attempt would name its port.
		if err := p.resetDir(first); err != nil {
			return "", err
		}
		if first || p.port == 0 {
			port, err := pickPort()
			if err != nil {
				return "", err
			}
			p.port = port
			if p.b.clusterNodeTimeout > 0 {
				// Not port+10000, the default, which may be taken or
				// beyond 65535.
				if p.bus, err = pickPort(); err != nil {
					return "", err
				}
			}
		} else if attempt > 0 {
			// Same port after a kill: give the kernel a moment to free it.
			time.Sleep(50 * time.Millisecond)
		}
		err := p.startOnce(ctx)
		if err == nil {
			return p.addr(), nil
		}
		errs = append(errs, fmt.Errorf("attempt %d on %s: %w", attempt+1, p.addr(), err))
		if ctx.Err() != nil {
			break
		}
	}
	return "", errors.Join(errs...)
}

func (p *procDriver) addr() string { return "127.0.0.1:" + strconv.Itoa(p.port) }

// clusterConfigFile is a cluster node's nodes.conf, in its dir.
const clusterConfigFile = "nodes.conf"

// resetDir makes sure the node starts empty even if ExtraArgs turned
// persistence on: everything but the logs is removed, and, on a restart of a
// cluster node, its nodes.conf, so that it rejoins its cluster as the same
// node owning the same slots.
func (p *procDriver) resetDir(first bool) error {
	keep := func(name string) bool {
		return strings.HasSuffix(name, ".log") ||
			(!first && p.b.clusterNodeTimeout > 0 && name == clusterConfigFile)
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	for _, e := range entries {
		if !keep(e.Name()) {
			if err := os.RemoveAll(filepath.Join(p.dir, e.Name())); err != nil {
				return fmt.Errorf("redistest: %w", err)
			}
		}
	}
	return nil
}

// startOnce launches the server on p.port and waits until it answers as
// itself; on failure the process is gone and the error carries its log tail.
func (p *procDriver) startOnce(ctx context.Context) error {
	args := []string{
		"--port", strconv.Itoa(p.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--protected-mode", "no",
		"--dir", p.dir,
		"--logfile", p.logPath(),
		"--daemonize", "no",
	}
	if p.b.clusterNodeTimeout > 0 {
		args = append(args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", clusterConfigFile, // relative to --dir
			"--cluster-port", strconv.Itoa(p.bus),
			"--cluster-node-timeout", strconv.FormatInt(p.b.clusterNodeTimeout.Milliseconds(), 10),
		)
	}
	args = append(args, p.b.extraArgs...)

	// Config errors are printed before the logfile is opened: keep them.
	out, err := os.OpenFile(p.stdoutPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close() // the child has its own copy

	// Not CommandContext: ctx bounds startup, not the server's lifetime.
	cmd := exec.Command(p.b.bin, args...)
	cmd.Dir = p.dir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { // reap, so killed servers never linger as zombies
		_ = cmd.Wait()
		close(done)
	}()
	p.proc, p.done, p.paused = cmd.Process, done, false

	err = waitReady(ctx, p.addr(), cmd.Process.Pid, done)
	if err == nil {
		return nil
	}
	_ = p.kill()
	if tail := p.logTail(); tail != "" {
		err = fmt.Errorf("%w; log tail:\n%s", err, tail)
	}
	return err
}

func (p *procDriver) running() bool {
	if p.proc == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill SIGKILLs the process (works on stopped processes too) and waits until
// it is reaped, so the port is free and Running is false on return.
func (p *procDriver) kill() error {
	if !p.running() {
		return nil
	}
	if err := p.proc.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return p.awaitExit(reapTimeout)
}

func (p *procDriver) awaitExit(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		p.paused = false
		return nil
	case <-t.C:
		return fmt.Errorf("pid %d did not exit within %v", p.proc.Pid, d)
	}
}

func (p *procDriver) pause() error  { return p.signal(syscall.SIGSTOP, true) }
func (p *procDriver) resume() error { return p.signal(syscall.SIGCONT, false) }

func (p *procDriver) signal(sig syscall.Signal, paused bool) error {
	if !p.running() {
		return errors.New("node is not running")
	}
	if err := p.proc.Signal(sig); err != nil {
		return err
	}
	p.paused = paused
	return nil
}

// stop ends the process for Close: SIGCONT (a stopped process would keep
// SIGTERM pending forever), SIGTERM for a clean log, SIGKILL if it lingers.
func (p *procDriver) stop() error {
	if !p.running() {
		return nil
	}
	_ = p.proc.Signal(syscall.SIGCONT)
	_ = p.proc.Signal(syscall.SIGTERM)
	if p.awaitExit(termGrace) == nil {
		return nil
	}
	return p.kill()
}

func (p *procDriver) logTail() string {
	var parts []string
	if s := tailFile(p.stdoutPath(), logTailBytes); s != "" {
		parts = append(parts, s)
	}
	if s := tailFile(p.logPath(), logTailBytes); s != "" {
		parts = append(parts, s)
	}
	return strings.Join(parts, "\n")
}

package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ErrNotFound is returned when the PostgreSQL binaries are not found.
var ErrNotFound = errors.New("pgtest: PostgreSQL not found; install it with apt-get install -y postgresql")

const (
	readyTimeout  = 2 * time.Minute // a hang guard on a loaded machine, not a speed limit
	stopTimeout   = time.Minute
	startAttempts = 4 // new ports tried when another process took ours first
)

// Server is one running PostgreSQL server.
type Server struct {
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// StartT starts a server for the test and stops it at the end of it. Without
// PostgreSQL the test is skipped, or fails when CI=true. Under -short (make
// check) it is skipped.
func StartT(t testing.TB) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("needs PostgreSQL: skipped by -short (make check); make test runs it")
	}
	s, err := Start(context.Background())
	if errors.Is(err, ErrNotFound) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// Start runs initdb and starts postgres. The caller must Close the server.
func Start(ctx context.Context) (*Server, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(tempBase(cred), "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("pgtest: hand %s to uid %d: %w", dir, cred.Uid, err)
		}
	}
	s := &Server{dir: dir}
	if err := s.initdb(ctx, bin, cred); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		err = s.start(ctx, bin, cred)
		if err == nil {
			return s, nil
		}
		if attempt == startAttempts || !errors.Is(err, errPortTaken) {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
}

// DSN is the URL of the database "postgres" as the superuser, for
// database/sql with the pgx driver (or any libpq-style client).
func (s *Server) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Close stops the server (a fast shutdown; SIGKILL if it hangs) and removes
// its files. It is safe to call twice.
func (s *Server) Close() error {
	if s.cmd == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(stopTimeout):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
	return os.RemoveAll(s.dir)
}

func (s *Server) initdb(ctx context.Context, bin string, cred *syscall.Credential) error {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", filepath.Join(s.dir, "data"), "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	return nil
}

var errPortTaken = errors.New("pgtest: port taken")

func (s *Server) start(ctx context.Context, bin string, cred *syscall.Credential) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	logPath := filepath.Join(s.dir, "postgres.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer logFile.Close()
	if cred != nil {
		_ = logFile.Chown(int(cred.Uid), int(cred.Gid))
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"),
		"-D", filepath.Join(s.dir, "data"), "-p", strconv.Itoa(port), "-k", s.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=100")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Pdeathsig: a test binary that dies leaves no server behind (Go sets it
	// after the uid change, which would clear it otherwise).
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()

	deadline := time.After(readyTimeout)
	for {
		logText, _ := os.ReadFile(logPath)
		switch {
		case strings.Contains(string(logText), "ready to accept connections"):
			s.port, s.cmd, s.done = port, cmd, done
			return nil
		case chanClosed(done):
			if strings.Contains(string(logText), "could not bind") || strings.Contains(string(logText), "Address already in use") {
				return fmt.Errorf("%w: %d", errPortTaken, port)
			}
			return fmt.Errorf("pgtest: postgres exited at start:\n%s", tail(logText))
		}
		select {
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("pgtest: start postgres: %w", ctx.Err())
		case <-deadline:
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("pgtest: postgres not ready after %v:\n%s", readyTimeout, tail(logText))
		case <-done:
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func chanClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func tail(b []byte) string {
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	return string(b)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: pick free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// debianBins is where Debian's postgresql packages put the binaries.
var debianBins = "/usr/lib/postgresql/*/bin"

// findBin returns the directory holding initdb and postgres.
func findBin() (string, error) {
	var candidates []string
	if d := os.Getenv("PG_BIN"); d != "" {
		candidates = append(candidates, d)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		candidates = append(candidates, filepath.Dir(p))
	}
	debian, _ := filepath.Glob(debianBins)
	sort.Slice(debian, func(i, j int) bool { return version(debian[i]) > version(debian[j]) })
	candidates = append(candidates, debian...)
	for _, d := range candidates {
		if executable(filepath.Join(d, "initdb")) && executable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", fmt.Errorf("%w (looked in $PG_BIN, PATH and /usr/lib/postgresql/*/bin)", ErrNotFound)
}

// version is the major version in /usr/lib/postgresql/N/bin.
func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// tempBase is where the server's dir goes: the usual temp dir, unless
// PostgreSQL runs as another user who cannot reach it (a root-only
// $TMPDIR); /tmp then.
func tempBase(cred *syscall.Credential) string {
	base := os.TempDir()
	if cred == nil {
		return base
	}
	for d := base; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
		if d == filepath.Dir(d) {
			return base
		}
	}
}

// credential is the user to run PostgreSQL as: nil when we are not root.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	name := os.Getenv("PGTEST_USER")
	if name == "" {
		name = "nobody"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, PostgreSQL must run as another user: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("pgtest: user %s: %w", name, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

package redistest

import (
	"context"
	"fmt"
	"sort"
	"sync"
)

// DockerModule is the module of the container backend ("docker"). It is a
// module of its own so that ory/dockertest and the Docker client never reach
// the library's go.mod; a test binary links it in with a blank import:
//
//	import _ "github.com/quorumlock/quorumlock/internal/redistest/docker"
const DockerModule = "github.com/quorumlock/quorumlock/internal/redistest/docker"

// Backend is a way to run nodes other than the built-in process backend,
// added with RegisterBackend (the docker backend in DockerModule is one).
type Backend interface {
	// NewDriver returns the driver of node index of this cluster.
	NewDriver(index int) Driver
	// Close releases cluster-wide resources after every node stopped.
	Close() error
}

// Driver runs one node of a registered Backend. Calls on one Driver are
// serialized by its Node.
type Driver interface {
	// Start launches an empty server and waits until it answers (see
	// WaitReady). first allows picking another port when the chosen one
	// turns out taken; later starts reuse the previous address when possible.
	Start(ctx context.Context, first bool) (addr string, err error)
	Kill() error // stop immediately; nil if already down
	Pause() error
	Resume() error
	Running() bool
	Stop() error // final stop for Close; must not hang on a paused node
	LogTail() string
}

// BackendFactory creates the Backend of one cluster. ctx bounds startup.
type BackendFactory func(ctx context.Context, opts Options) (Backend, error)

var (
	backendsMu sync.Mutex
	backends   = map[string]BackendFactory{}
)

// RegisterBackend makes a backend selectable by name in Options.Backend and
// REDLOCK_TEST_BACKEND. It is meant for init functions; registering a name
// twice, or "process", panics.
func RegisterBackend(name string, f BackendFactory) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if name == BackendProcess || backends[name] != nil || f == nil {
		panic(fmt.Sprintf("redistest: RegisterBackend(%q): already registered or nil", name))
	}
	backends[name] = f
}

func registeredBackend(name string) BackendFactory {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	return backends[name]
}

func backendNames() []string {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	names := []string{BackendProcess}
	for n := range backends {
		names = append(names, n)
	}
	sort.Strings(names[1:])
	return names
}

// newBackend picks the backend called name.
func newBackend(ctx context.Context, name string, opts Options) (backend, error) {
	if name == BackendProcess {
		return newProcessBackend(opts)
	}
	if f := registeredBackend(name); f != nil {
		b, err := f(ctx, opts)
		if err != nil {
			return nil, err
		}
		return extBackend{b}, nil
	}
	if name == BackendDocker {
		return nil, fmt.Errorf("redistest: REDLOCK_TEST_BACKEND=docker but the container backend is not linked into this binary: "+
			"it is the module %s; import it for its side effect (its own tests do): %w", DockerModule, ErrDockerUnavailable)
	}
	return nil, fmt.Errorf("redistest: unknown backend %q (want one of %q, or %q with %s linked in)", name, backendNames(), BackendDocker, DockerModule)
}

// WaitReady polls addr until a Redis server answers PING, bounded by ctx and
// ReadyTimeout; for Driver.Start of registered backends.
func WaitReady(ctx context.Context, addr string) error { return waitReady(ctx, addr, 0, nil) }

// ReadyTimeout bounds WaitReady.
const ReadyTimeout = readyTimeout

// extBackend adapts a registered Backend to the internal interfaces.
type extBackend struct{ b Backend }

func (e extBackend) newDriver(index int) driver { return extDriver{e.b.NewDriver(index)} }
func (e extBackend) close() error               { return e.b.Close() }

type extDriver struct{ d Driver }

func (e extDriver) start(ctx context.Context, first bool) (string, error) {
	return e.d.Start(ctx, first)
}
func (e extDriver) kill() error     { return e.d.Kill() }
func (e extDriver) pause() error    { return e.d.Pause() }
func (e extDriver) resume() error   { return e.d.Resume() }
func (e extDriver) running() bool   { return e.d.Running() }
func (e extDriver) stop() error     { return e.d.Stop() }
func (e extDriver) logTail() string { return e.d.LogTail() }

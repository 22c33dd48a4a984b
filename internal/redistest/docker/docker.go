// Package docker is the container backend of the redistest harness: one
// redis:7-alpine container per node, published on a random 127.0.0.1 port.
// It is a module of its own, so that ory/dockertest and the Docker client
// never reach the library's go.mod. Link it into a test binary with a blank
// import; it registers the "docker" backend, which REDLOCK_TEST_BACKEND=docker
// (or redistest.Options{Backend: "docker"}) then selects:
//
//	import _ "github.com/quorumlock/quorumlock/internal/redistest/docker"
//
// When no Docker daemon answers, redistest.Start fails with an error that
// wraps redistest.ErrDockerUnavailable and says so.
package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

func init() {
	redistest.RegisterBackend(redistest.BackendDocker, func(ctx context.Context, opts redistest.Options) (redistest.Backend, error) {
		return newDockerBackend(ctx, opts)
	})
}

// Restart removes the container and creates a fresh one (that is what makes
// the node empty) bound to the same host port. If that port was taken in the
// meantime it falls back to a new random port and Node.Addr changes; the
// node's client follows because it dials Node.Addr on every dial.
const (
	dockerRepo = "redis"
	dockerTag  = "7-alpine"
	dockerPort = "6379/tcp"
	dockerPing = 5 * time.Second
)

type dockerBackend struct {
	pool      *dockertest.Pool
	clusterID string // names containers so failed starts can be cleaned up
	extraArgs []string
}

func newDockerBackend(ctx context.Context, opts redistest.Options) (*dockerBackend, error) {
	unavailable := func(err error) error {
		return fmt.Errorf("redistest: REDLOCK_TEST_BACKEND=docker but no Docker daemon answers: %v: %w", err, redistest.ErrDockerUnavailable)
	}
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, unavailable(err)
	}
	pctx, cancel := context.WithTimeout(ctx, dockerPing)
	defer cancel()
	if err := pool.Client.PingWithContext(pctx); err != nil {
		return nil, unavailable(err)
	}
	pool.MaxWait = redistest.ReadyTimeout
	var id [4]byte
	_, _ = rand.Read(id[:])
	return &dockerBackend{pool: pool, clusterID: hex.EncodeToString(id[:]), extraArgs: opts.ExtraArgs}, nil
}

func (b *dockerBackend) NewDriver(index int) redistest.Driver {
	return &dockerDriver{b: b, index: index}
}

func (b *dockerBackend) Close() error { return nil } // containers are removed per node

type dockerDriver struct {
	b        *dockerBackend
	index    int
	gen      int // container generation, keeps names unique across restarts
	res      *dockertest.Resource
	hostPort string
	up       bool
	paused   bool
}

func (d *dockerDriver) Start(ctx context.Context, _ bool) (string, error) {
	if err := d.remove(); err != nil { // a fresh container is an empty node
		return "", err
	}
	ports := []string{""} // "" lets docker pick a free port
	if d.hostPort != "" {
		ports = []string{d.hostPort, ""}
	}
	var errs []error
	for _, hp := range ports {
		addr, err := d.run(ctx, hp)
		if err == nil {
			return addr, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return "", errors.Join(errs...)
}

func (d *dockerDriver) run(ctx context.Context, hostPort string) (string, error) {
	d.gen++
	name := fmt.Sprintf("redistest-%s-%d-%d", d.b.clusterID, d.index, d.gen)
	cmd := append([]string{"redis-server", "--save", "", "--appendonly", "no"}, d.b.extraArgs...)
	res, err := d.b.pool.RunWithOptions(&dockertest.RunOptions{
		Name:         name,
		Repository:   dockerRepo,
		Tag:          dockerTag,
		Cmd:          cmd,
		Labels:       map[string]string{"redistest.cluster": d.b.clusterID},
		ExposedPorts: []string{dockerPort},
		PortBindings: map[dc.Port][]dc.PortBinding{
			dockerPort: {{HostIP: "127.0.0.1", HostPort: hostPort}},
		},
	}, func(hc *dc.HostConfig) {
		hc.PublishAllPorts = false
		hc.AutoRemove = false
		hc.RestartPolicy = dc.RestartPolicy{Name: "no"}
	})
	if err != nil {
		// RunWithOptions leaves a created-but-unstarted container behind.
		_ = d.b.pool.RemoveContainerByName(name)
		return "", fmt.Errorf("run container %s: %w", name, err)
	}
	d.res, d.up, d.paused = res, true, false
	d.hostPort = res.GetPort(dockerPort)
	addr := net.JoinHostPort("127.0.0.1", d.hostPort)
	if err := redistest.WaitReady(ctx, addr); err != nil {
		_ = d.remove()
		return "", fmt.Errorf("container %s: %w", name, err)
	}
	return addr, nil
}

// kill SIGKILLs the container; it stays (stopped) until Restart or Close.
func (d *dockerDriver) Kill() error {
	if !d.up {
		return nil
	}
	if d.paused { // docker refuses to kill a paused container
		_ = d.b.pool.Client.UnpauseContainer(d.res.Container.ID)
		d.paused = false
	}
	if err := d.b.pool.Client.KillContainer(dc.KillContainerOptions{ID: d.res.Container.ID, Signal: dc.SIGKILL}); err != nil {
		var notRunning *dc.ContainerNotRunning
		if !errors.As(err, &notRunning) {
			return err
		}
	}
	d.up = false
	return nil
}

func (d *dockerDriver) Pause() error {
	if !d.up {
		return errors.New("node is not running")
	}
	if err := d.b.pool.Client.PauseContainer(d.res.Container.ID); err != nil {
		return err
	}
	d.paused = true
	return nil
}

func (d *dockerDriver) Resume() error {
	if !d.up {
		return errors.New("node is not running")
	}
	if err := d.b.pool.Client.UnpauseContainer(d.res.Container.ID); err != nil {
		return err
	}
	d.paused = false
	return nil
}

func (d *dockerDriver) Running() bool { return d.up }

func (d *dockerDriver) Stop() error { return d.remove() }

// remove force-removes the current container, if any.
func (d *dockerDriver) remove() error {
	if d.res == nil {
		return nil
	}
	if d.paused {
		_ = d.b.pool.Client.UnpauseContainer(d.res.Container.ID)
	}
	err := d.b.pool.Client.RemoveContainer(dc.RemoveContainerOptions{ID: d.res.Container.ID, Force: true, RemoveVolumes: true})
	var noSuch *dc.NoSuchContainer
	if err != nil && !errors.As(err, &noSuch) {
		return err
	}
	d.res, d.up, d.paused = nil, false, false
	return nil
}

// logTail is not collected for containers; use `docker logs` while debugging.
func (d *dockerDriver) LogTail() string { return "" }

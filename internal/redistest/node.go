package redistest

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/wire"
)

// Node is one redis server of a Cluster. Its methods are safe for concurrent
// use; lifecycle operations (Kill, Restart, Pause, ...) are serialized.
type Node struct {
	index int
	// addr is read without mu so that client dials never wait behind a
	// Restart that holds mu while the server boots.
	addr atomic.Pointer[string]

	mu     sync.Mutex // guards drv lifecycle and closed
	drv    driver
	closed bool

	clientMu     sync.Mutex
	client       *redis.Client
	clientClosed bool
}

// Index is the node's position in Cluster.Nodes.
func (n *Node) Index() int { return n.index }

// Addr is the node's "127.0.0.1:PORT" address. It is stable across restarts
// for the process backend (see docker.go for the docker backend).
func (n *Node) Addr() string {
	if p := n.addr.Load(); p != nil {
		return *p
	}
	return ""
}

func (n *Node) String() string { return fmt.Sprintf("node %d (%s)", n.index, n.Addr()) }

// Client returns the node's go-redis client, created on first use and closed
// by Cluster.Close. It outlives restarts: go-redis redials on the next command.
// It dials Addr at dial time, so it follows an address change too.
func (n *Node) Client() *redis.Client {
	n.clientMu.Lock()
	defer n.clientMu.Unlock()
	if n.client == nil {
		n.client = redis.NewClient(&redis.Options{
			Addr: n.Addr(),
			Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
				d := net.Dialer{Timeout: clientDialTimeout}
				return d.DialContext(ctx, network, n.Addr())
			},
			DialTimeout:  clientDialTimeout,
			ReadTimeout:  clientIOTimeout,
			WriteTimeout: clientIOTimeout,
			// A refused dial is final for a killed node; go-redis' default
			// of 5 dial attempts 100ms apart only slows fault tests down.
			// Command retries (MaxRetries) keep their default.
			DialerRetries: 1,
			// Honour ctx deadlines, so callers can bound a call to a
			// paused node below ReadTimeout.
			ContextTimeoutEnabled: true,
		})
		if n.clientClosed { // asked for after Close: hand out a closed client, don't leak
			_ = n.client.Close()
		}
	}
	return n.client
}

// Kill stops the server immediately (SIGKILL). The node stays down until
// Restart. Killing a node that is already down is a no-op.
func (n *Node) Kill() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ErrClosed
	}
	return n.drv.kill()
}

// Restart starts the server again, empty, on the same address, and waits
// until it answers, through Client() too. A running (or paused) server is
// killed first.
func (n *Node) Restart(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ErrClosed
	}
	if err := n.drv.kill(); err != nil {
		return fmt.Errorf("%v: restart: %w", n, err)
	}
	return n.startLocked(ctx, false)
}

// RestartAfter kills the node now and starts it empty after d, blocking until
// it answers. Other Node methods are not blocked during d.
func (n *Node) RestartAfter(ctx context.Context, d time.Duration) error {
	if err := n.Kill(); err != nil {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	return n.Restart(ctx)
}

// Pause freezes the server (SIGSTOP): connections stay open but nothing is
// answered, like a long GC pause or a partitioned node.
func (n *Node) Pause() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ErrClosed
	}
	return n.drv.pause()
}

// Resume continues a paused server (SIGCONT).
func (n *Node) Resume() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ErrClosed
	}
	return n.drv.resume()
}

// Running reports whether the server process/container is up (a paused
// server counts as running).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.closed && n.drv.running()
}

// FlushAll deletes every key on the node.
func (n *Node) FlushAll(ctx context.Context) error {
	return n.Client().FlushAll(ctx).Err()
}

// LogTail returns the end of the server's log, for diagnostics ("" if none).
func (n *Node) LogTail() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.drv.logTail()
}

func (n *Node) start(ctx context.Context, first bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.startLocked(ctx, first)
}

func (n *Node) startLocked(ctx context.Context, first bool) error {
	addr, err := n.drv.start(ctx, first)
	if err != nil {
		return fmt.Errorf("redistest: node %d: %w", n.index, err)
	}
	n.addr.Store(&addr)
	return n.awaitClientLocked(ctx)
}

// awaitClientLocked waits until the node's client (if one was handed out)
// talks to the new server. After many failed dials go-redis opens a circuit
// breaker and only re-probes about once a second; without this wait a
// Restart could return while Client() still fails for up to ~1s.
func (n *Node) awaitClientLocked(ctx context.Context) error {
	n.clientMu.Lock()
	cl := n.client
	if n.clientClosed {
		cl = nil
	}
	n.clientMu.Unlock()
	if cl == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		pctx, pcancel := context.WithTimeout(ctx, clientDialTimeout)
		err := cl.Ping(pctx).Err()
		pcancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%v: server is up but its client did not reconnect: %w", n, err)
		case <-time.After(probeEvery):
		}
	}
}

// MarkVoting writes the server's standing record as a voter's (see
// Options.Fresh): it votes from now on, as a server of a deployment that
// has run, whatever it lost before.
func (n *Node) MarkVoting(ctx context.Context) error {
	rc := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
	defer rc.Close()
	if err := rc.Set(ctx, wire.NodeRecordKey, "V", 0).Err(); err != nil {
		return fmt.Errorf("%v: marking it voting: %w", n, err)
	}
	return nil
}

// shutdown closes the client and stops the server for good.
func (n *Node) shutdown() error {
	n.clientMu.Lock()
	n.clientClosed = true
	var err error
	if n.client != nil {
		err = n.client.Close()
	}
	n.clientMu.Unlock()

	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return err
	}
	n.closed = true
	if serr := n.drv.stop(); serr != nil {
		return fmt.Errorf("%v: stop: %w", n, serr)
	}
	return err
}

// busPort is the node's cluster bus port (cluster mode, process backend),
// or 0.
func (n *Node) busPort() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p, ok := n.drv.(*procDriver); ok {
		return p.bus
	}
	return 0
}

package redlock

import (
	"context"
	"log/slog"
	"reflect"

	"github.com/quorumlock/quorumlock/extend"
	"github.com/quorumlock/quorumlock/internal/identity"
	"github.com/quorumlock/quorumlock/internal/inflight"
	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/internal/recovery"
	"github.com/quorumlock/quorumlock/internal/wake"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/observe"
)

// Client is safe for concurrent use: make one per process, share it, Close it.
type Client struct {
	nodes    []node.Node
	all      []int // 0..len(nodes)-1: every node, for rounds
	quorum   int
	cfg      config
	logger   *slog.Logger
	obs      observe.Observer               // never nil; see events.go
	notify   *wake.Hub                      // release notifications and waiters; see internal/wake
	keeper   *extend.Watchdog[extend.Lease] // auto-extension of kept locks; see extension.go
	ident    *identity.Nodes                // first-contact checks of the nodes; see internal/identity
	health   health                         // nodes failing recently; see health.go
	learning *recovery.Keeper               // learning nodes kept moving; see internal/recovery

	bg      inflight.Group   // requests in flight and cleanup running in the background
	checks  inflight.Group   // identify requests in flight, which Close cuts
	closing inflight.Closing // cancelled by Close: the identify requests' context
	rounds  rounds           // what each quorum round borrows of the client; see round.go

	releaseChannel string // prefix + "released", built once: it is on every release's path
}

// New returns a Client over nodes: an odd count of independent servers with
// maxmemory-policy noeviction, a majority of which must grant a lock. Bad
// input, or two nodes found to be one server, fails with ErrInvalidArgument.
func New(nodes []node.Node, opts ...Option) (*Client, error) {
	if len(nodes) == 0 {
		return nil, invalidArg("no nodes")
	}
	seen := make(map[string]int, len(nodes))
	for i, n := range nodes {
		if isNil(n) {
			return nil, invalidArg("node %d is nil", i)
		}
		if j, dup := seen[n.Name()]; dup {
			return nil, invalidArg("nodes %d and %d are the same node %q; a quorum needs independent nodes", j, i, n.Name())
		}
		seen[n.Name()] = i
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if o == nil {
			return nil, invalidArg("nil option")
		}
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	logger := cfg.logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{
		nodes:  append([]node.Node(nil), nodes...),
		quorum: quorum.Of(len(nodes)),
		cfg:    cfg,
		logger: logger,
		obs:    observerOf(cfg.observer),

		releaseChannel: cfg.prefix + "released",
	}
	if err := c.newWatchdog(); err != nil {
		return nil, err
	}
	c.notify = wake.New(wake.Config{Off: cfg.noNotify, Nodes: c.nodes, Channel: c.releaseChannel, Logger: logger, Timeout: c.cfg.adminTimeout()})
	c.learning = recovery.NewKeeper(c.nodes, cfg.recovery, c.cfg.adminTimeout())
	c.health = make(health, len(nodes))
	c.all = make([]int, len(nodes))
	for i := range c.all {
		c.all[i] = i
	}
	c.rounds = rounds{nodes: c.nodes, all: c.all, health: c.health, logger: logger, obs: c.obs, observed: cfg.observer != nil,
		bg: &c.bg, checks: &c.checks, closing: &c.closing, cfg: &c.cfg}
	if !cfg.noNotify {
		c.rounds.announce = c.releaseChannel
	}
	names := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		names[i] = n.Name()
	}
	c.ident = identity.New(identity.Config{Names: names, Strict: cfg.strict, Logger: logger, Ask: c.rounds.identify,
		Background: func(f func()) { c.bg.GoGuarded(logger, f) }, Invalid: invalidArg})
	return c, nil
}

// isNil catches both a nil interface and an interface holding a nil pointer,
// which would otherwise panic on first use.
func isNil(n node.Node) bool {
	if n == nil {
		return true
	}
	v := reflect.ValueOf(n)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Interface, reflect.Chan:
		return v.IsNil()
	}
	return false
}

// Close waits for requests in flight and background cleanup (each bounded by
// the node timeout where the node honours deadlines) and stops the release
// subscriptions. It does not release held locks; the Client stays usable.
func (c *Client) Close() error {
	c.closing.Cut()
	c.bg.Wait()
	c.checks.WaitFor(c.cfg.adminTimeout())
	c.learning.Stop()
	c.notify.Close()
	return nil
}

// NewLocal returns a Client on one in-process memory node, for development
// and tests: its locks exclude only within this process (it logs a warning).
func NewLocal(opts ...Option) (*Client, error) {
	c, err := New([]node.Node{memnode.New("local")}, opts...)
	if err != nil {
		return nil, err
	}
	c.logger.WarnContext(context.Background(), "redlock: local mode: locks live in this process only and exclude nothing across processes; do not use in production")
	return c, nil
}

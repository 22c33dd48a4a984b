package redlock

import (
	"context"
	"log/slog"
	"reflect"

	"github.com/quorumlock/quorumlock/extend"
	"github.com/quorumlock/quorumlock/internal/keyname"
	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/observe"
)

// Client acquires locks on a quorum of independent nodes. It is safe for
// concurrent use; create one per process and share it, and Close it when
// done.
type Client struct {
	nodes  []node.Node
	all    []int // 0..len(nodes)-1: every node, for rounds
	quorum int
	cfg    config
	logger *slog.Logger
	obs    observe.Observer       // never nil; see observe.go
	notify notifyHub              // release notifications and waiters; see notify.go
	keeper *extend.Watchdog[kept] // auto-extension; see extend.go
	ident  identity               // first-contact checks of the nodes; see nodes.go
	health health                 // nodes failing recently; see nodes.go

	bg      inFlight // requests in flight and cleanup running in the background
	checks  inFlight // identify requests in flight, which Close cuts
	closing closing  // cancelled by Close: the identify requests' context

	releaseChannel string // prefix + "released", built once: it is on every release's path
}

// New returns a Client over nodes. The nodes must be independent servers (no
// replication between them): a majority of them, len(nodes)/2+1, must agree
// for a lock to be held. Odd counts (3, 5, 7) make the best use of servers.
//
// At its first operation the client asks each node who it is (waiting for
// a silent node only until a quorum has answered; the others are asked
// again when they answer a request, or in the background). An answer
// counts toward a quorum only from a node identified as a server distinct
// from the others. Two nodes that turn out to be one server (127.0.0.1:6379
// and localhost:6379) make every operation fail with ErrInvalidArgument
// from the moment both have answered, and a node whose maxmemory-policy may
// evict lock keys is logged once as a warning (or refused, see
// WithRequireNoEviction).
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
	c.notify.off, c.notify.nodes, c.notify.channel, c.notify.logger = cfg.noNotify, c.nodes, c.releaseChannel, logger
	c.notify.timeout = c.cfg.adminTimeout()
	c.health = make(health, len(nodes))
	c.ident.strict, c.ident.logger = cfg.strict, logger
	for _, n := range c.nodes {
		c.ident.names = append(c.ident.names, n.Name())
	}
	c.all = make([]int, len(nodes))
	for i := range c.all {
		c.all[i] = i
	}
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

// Close waits for the requests still in flight and the cleanup running in
// the background (the undo of failed attempts, deletes of a lost lock's
// keys), and stops the client's release subscriptions. An undo that does
// not reach a node within the node timeout is reported to the observer
// (observe.UndoFailed); the attempt's key stays on that node until its TTL
// ends. Each request is
// bounded by its node timeout when the node honours context deadlines
// (memnode.Node, rueidisnode, redisnode.Node over a go-redis client with
// ContextTimeoutEnabled); over a go-redis client without it, a request to a
// stopped server lasts as long as go-redis's own dial and read timeouts
// (5s and 3s by default). The checks the client makes for itself are cut
// rather than awaited: Close cancels the requests asking nodes who they
// are and waits for them at most a node timeout (WithNodeTimeout, or 1s),
// and a subscription still being set up is given up within a node timeout.
// So a node that accepts connections and never answers holds Close about
// a node timeout or two, not more. It does not release held locks. The
// Client stays usable: later waits fall back to the retry policy's delays
// until a new subscription is made, and nodes not yet identified are asked
// again. Close is idempotent and returns nil.
func (c *Client) Close() error {
	c.closing.cut()
	c.bg.Wait()
	c.checks.WaitFor(c.cfg.adminTimeout())
	c.notify.close()
	return nil
}

// keyName is the name of key on the nodes: the prefix, then the key in
// braces, so that the key, its fence counter and its tombstones hash to one
// Redis Cluster slot (the hash tag is the key up to its first '}', never
// empty) and no key's name can be another key's counter or another
// prefix's key (prefixes have no braces).
func (c *Client) keyName(key string) string { return keyname.Of(c.cfg.prefix, key) }

// NewLocal returns a Client on a single in-process memory node, for
// development and tests without Redis. Its locks exclude only within this
// process; it logs a warning saying so, once, through the client's logger
// (WithLogger).
//
// It is an explicit choice: New never falls back to a memory node when the
// Redis nodes it was given fail; their failures are returned as errors
// (ErrQuorumUnreachable).
func NewLocal(opts ...Option) (*Client, error) {
	c, err := New([]node.Node{memnode.New("local")}, opts...)
	if err != nil {
		return nil, err
	}
	c.logger.WarnContext(context.Background(), "redlock: local mode: locks live in this process only and exclude nothing across processes; do not use in production")
	return c, nil
}

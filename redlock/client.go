package redlock

import (
	"context"
	"log/slog"
	"reflect"
	"strings"
	"time"
)

// Client acquires locks on a quorum of independent nodes. It is safe for
// concurrent use; create one per process and share it.
type Client struct {
	nodes  []Node
	quorum int
	cfg    config
	logger *slog.Logger
	notify notifyHub // release notifications and waiters; see notify.go
	keeper keeper    // auto-extension watchdog; see watchdog.go

	releaseChannel string // prefix + "released", built once: it is on every release's path
}

// New returns a Client over nodes. The nodes must be independent servers (no
// replication between them): a majority of them, len(nodes)/2+1, must agree
// for a lock to be held. Odd counts (3, 5, 7) make the best use of servers.
func New(nodes []Node, opts ...Option) (*Client, error) {
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
	return &Client{
		nodes:  append([]Node(nil), nodes...),
		quorum: len(nodes)/2 + 1,
		cfg:    cfg,
		logger: logger,

		releaseChannel: cfg.prefix + "released",
	}, nil
}

// isNil catches both a nil interface and an interface holding a nil pointer,
// which would otherwise panic on first use.
func isNil(n Node) bool {
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

// Nodes returns the client's nodes, in the order given to New.
func (c *Client) Nodes() []Node { return append([]Node(nil), c.nodes...) }

// Quorum is the number of nodes that must agree: len(nodes)/2 + 1.
func (c *Client) Quorum() int { return c.quorum }

// KeyName is the name of key on the nodes (the prefix prepended).
func (c *Client) KeyName(key string) string { return c.cfg.prefix + key }

// Drift is the time a lock of this ttl reserves for clock drift:
// ttl*driftFactor + 2 ms.
func (c *Client) Drift(ttl time.Duration) time.Duration { return c.cfg.drift(ttl) }

// NodeTimeout is the per-node request timeout for a lock of this ttl.
func (c *Client) NodeTimeout(ttl time.Duration) time.Duration { return c.cfg.timeoutFor(ttl) }

// checkArgs validates what every lock operation takes.
func (c *Client) checkArgs(ctx context.Context, key string, ttl time.Duration) error {
	switch {
	case ctx == nil:
		return invalidArg("nil context")
	case key == "":
		return invalidArg("empty key")
	case strings.HasSuffix(key, FenceSuffix):
		return invalidArg("key %q ends with %q, the suffix reserved for fence counters", key, FenceSuffix)
	}
	return c.checkTTL(ttl)
}

func (c *Client) checkTTL(ttl time.Duration) error {
	if ttl <= 0 {
		return invalidArg("ttl %s is not positive", ttl)
	}
	if need := c.cfg.drift(ttl) + c.cfg.timeoutFor(ttl); ttl <= need {
		return invalidArg("ttl %s leaves no validity after drift %s and node timeout %s", ttl, c.cfg.drift(ttl), c.cfg.timeoutFor(ttl))
	}
	return nil
}

func (c *Client) observe(e Event) {
	if c.cfg.observer != nil {
		c.cfg.observer.Observe(e)
	}
}

func (c *Client) nodeError(ctx context.Context, key string, node Node, op string, err error) error {
	ne := &NodeError{Node: node.Name(), Op: op, Err: err}
	c.observe(Event{Kind: EventNodeError, Key: key, Node: node.Name(), Op: op, Err: err})
	if c.logger.Enabled(ctx, slog.LevelWarn) {
		c.logger.WarnContext(ctx, "redlock: node failed", "node", node.Name(), "op", op, "key", key, "err", err)
	}
	return ne
}

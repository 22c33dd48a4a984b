// Package identity is what a client learns of its nodes at first contact:
// the server behind each (so that one server under two names is not
// counted twice) and whether its eviction policy can drop lock keys. A
// node's answers count toward a quorum only once it said who it is.
//
// The client lends it the identify round (Config.Ask) and its background
// work (Config.Background); the package asks nothing else of it.
package identity

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/node"
)

// Retry is how often nodes that could not be identified are asked again,
// in the background; until then their answers do not count.
const Retry = time.Second

// Timeout is the least time a node has to say who it is at first contact,
// which dials new connections.
const Timeout = 2 * time.Second

// Config is what the client lends its nodes' identity.
type Config struct {
	Names  []string     // the nodes' names, for errors and logs
	Strict bool         // WithRequireNoEviction: an evicting node is refused
	Logger *slog.Logger // warns of evicting nodes
	// Ask asks nodes (indexes among Names) who they are, each within
	// timeout; it returns the answers of those that said.
	Ask func(ctx context.Context, nodes []int, timeout time.Duration) []quorum.Answer[node.Identity]
	// Background runs f in the background, for the client's Close to wait on.
	Background func(f func())
	// Invalid is the client's error for a configuration it refuses.
	Invalid func(format string, args ...any) error
}

// Nodes holds what the client learnt of its nodes at first contact.
type Nodes struct {
	all atomic.Bool // every node identified and accepted: the fast path

	mu      sync.Mutex
	ids     []string // per node; "" while unknown
	err     error    // sticky: a configuration the client refuses
	asking  bool     // a background identification is running
	retryAt time.Time
	now     map[int]chan struct{} // Now's identify requests in flight, per node: closed once done

	cfg   Config
	every []int // 0..len(Names)-1
}

// New returns the identity of nodes not asked yet.
func New(cfg Config) *Nodes {
	id := &Nodes{cfg: cfg, every: make([]int, len(cfg.Names))}
	for i := range id.every {
		id.every[i] = i
	}
	return id
}

// Ready returns nil when the client's nodes may be used. The first call
// identifies every node (one round); nodes that do not answer stay
// unidentified, their answers not counted, and are asked again in the
// background at most every Retry. Two nodes that are one server, or an
// evicting node with Config.Strict, make every call fail with
// Config.Invalid's error from then on.
func (id *Nodes) Ready(ctx context.Context, timeout time.Duration) error {
	if id.all.Load() {
		return nil
	}
	// First contact dials new connections: give it at least a second.
	timeout = max(timeout, Timeout)
	id.mu.Lock()
	defer id.mu.Unlock()
	switch {
	case id.err != nil || id.all.Load():
		return id.err
	case id.ids == nil:
		id.ids = make([]string, len(id.cfg.Names))
		id.accept(id.cfg.Ask(ctx, id.every, timeout))
		return id.err
	case !id.asking && !time.Now().Before(id.retryAt):
		id.asking = true
		var ask []int
		for i, s := range id.ids {
			if s == "" {
				ask = append(ask, i)
			}
		}
		id.cfg.Background(func() {
			got := id.cfg.Ask(context.Background(), ask, timeout) // without the lock: counts must not wait
			id.mu.Lock()
			defer id.mu.Unlock()
			id.accept(got)
			id.asking = false
		})
	}
	return nil
}

// accept records identities, refusing duplicates and, with Config.Strict,
// evicting servers. Called with id.mu held.
func (id *Nodes) accept(got []quorum.Answer[node.Identity]) {
	id.retryAt = time.Now().Add(Retry)
	names := id.cfg.Names
	for _, a := range got {
		name := names[a.Node]
		for j, other := range id.ids {
			if other == a.Val.ID && j != a.Node {
				id.err = id.cfg.Invalid("nodes %q and %q are the same server (id %s); a quorum needs independent servers", names[j], name, a.Val.ID)
				return
			}
		}
		if a.Val.Eviction != "noeviction" {
			if id.cfg.Strict {
				id.err = id.cfg.Invalid("node %q has maxmemory-policy %q, which can evict lock keys and fence counters; set it to noeviction", name, a.Val.Eviction)
				return
			}
			id.cfg.Logger.Warn("redlock: node may evict lock keys under memory pressure, which breaks mutual exclusion; set maxmemory-policy noeviction",
				"node", name, "maxmemory-policy", a.Val.Eviction)
		}
		id.ids[a.Node] = a.Val.ID
	}
	for _, s := range id.ids {
		if s == "" {
			return
		}
	}
	id.all.Store(true)
}

// Now identifies node i at once, when it answered a request but has not
// said who it is (first contact did not wait for it): its answer then
// counts without waiting for the background retry. The first call asks
// every node not identified yet, each by a request of its own: an attempt
// whose answers come from several such nodes (every node restarted, say)
// waits for the slowest of their requests, not for their sum. It reports
// whether node i counts; a configuration error found meanwhile is
// returned. A request waits timeout (the caller's node timeout), no more:
// the node just answered over a connection that is up, and a lost identify
// request had blocked the attempt for Timeout, past a short TTL.
func (id *Nodes) Now(ctx context.Context, i int, timeout time.Duration) (bool, error) {
	if id.Counts(i) {
		return true, nil
	}
	id.mu.Lock()
	if id.ids == nil { // before Ready: nothing to ask yet
		id.mu.Unlock()
		return false, nil
	}
	if id.now == nil {
		id.now = make(map[int]chan struct{})
	}
	type request struct {
		node int
		done chan struct{}
	}
	var ask []request
	for j, s := range id.ids {
		if s == "" && id.now[j] == nil {
			r := request{j, make(chan struct{})}
			id.now[j] = r.done
			ask = append(ask, r)
		}
	}
	wait := id.now[i]
	id.mu.Unlock()
	for _, r := range ask { // without id.mu: identify takes it
		id.cfg.Background(func() { id.identify(r.node, timeout, r.done) })
	}
	if wait != nil { // nil: identified meanwhile
		select {
		case <-wait:
		case <-ctx.Done():
		}
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.err == nil && id.ids[i] != "", id.err
}

// identify asks node j who it is, for Now, and closes done.
func (id *Nodes) identify(j int, timeout time.Duration, done chan struct{}) {
	got := id.cfg.Ask(context.Background(), []int{j}, timeout)
	id.mu.Lock()
	if id.err == nil {
		id.accept(got)
	}
	delete(id.now, j)
	id.mu.Unlock()
	close(done)
}

// Counts reports whether node i's answers may count toward a quorum: it
// was identified as a server distinct from the others.
func (id *Nodes) Counts(i int) bool {
	if id.all.Load() {
		return true
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.ids != nil && id.ids[i] != ""
}

// All reports whether every node was identified and accepted.
func (id *Nodes) All() bool { return id.all.Load() }

// Unidentified is the failure recorded for the answer of a node that does
// not count yet.
func Unidentified(name string) error {
	return fmt.Errorf("node %s not identified yet (it did not say which server it is); its answer does not count", name)
}

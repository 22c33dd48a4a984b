package chaos

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
)

// Network gives every client its own view of the nodes: one toxiproxy proxy
// per (client, node), listening on 127.0.0.1:0 with the node as upstream.
// A partition disables a client's proxy (its connections are cut and new
// dials are refused); latency and resets are toxics on the proxy.
type Network struct {
	server  *toxiproxy.ApiServer
	proxies [][]*toxiproxy.Proxy // [client][node]
	redis   [][]*redis.Client    // [client][node], dialing the proxy
	addrs   [][]*atomic.Pointer[string]

	mu     sync.Mutex
	toxics map[*toxiproxy.Proxy][]string
}

// NewNetwork starts clients×len(upstreams) proxies.
func NewNetwork(clients int, upstreams []string) (*Network, error) {
	nw := &Network{
		server: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		toxics: map[*toxiproxy.Proxy][]string{},
	}
	for c := range clients {
		var row []*toxiproxy.Proxy
		var rrow []*redis.Client
		var arow []*atomic.Pointer[string]
		for n, up := range upstreams {
			p := toxiproxy.NewProxy(nw.server, fmt.Sprintf("c%d-n%d", c, n), "127.0.0.1:0", up)
			if err := p.Start(); err != nil {
				nw.Close()
				return nil, fmt.Errorf("chaos: proxy client %d node %d: %w", c, n, err)
			}
			addr := &atomic.Pointer[string]{}
			listen := p.Listen
			addr.Store(&listen)
			row = append(row, p)
			arow = append(arow, addr)
			rrow = append(rrow, newRedisClient(addr))
		}
		nw.proxies = append(nw.proxies, row)
		nw.redis = append(nw.redis, rrow)
		nw.addrs = append(nw.addrs, arow)
	}
	return nw, nil
}

// newRedisClient is a go-redis client tuned like the redistest ones: short
// dial and I/O timeouts, context deadlines honoured, one dial per attempt.
// It dials the proxy's current address (which can change when a healed
// proxy cannot get its old port back).
func newRedisClient(addr *atomic.Pointer[string]) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: *addr.Load(),
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			d := net.Dialer{Timeout: 300 * time.Millisecond}
			return d.DialContext(ctx, network, *addr.Load())
		},
		DialTimeout:           300 * time.Millisecond,
		ReadTimeout:           time.Second,
		WriteTimeout:          time.Second,
		DialerRetries:         1,
		MaxRetries:            1,
		ContextTimeoutEnabled: true,
		PoolSize:              8,
	})
}

// Redis returns the go-redis clients of client c, one per node, through its
// proxies.
func (nw *Network) Redis(c int) []*redis.Client { return nw.redis[c] }

// Clients is the number of clients.
func (nw *Network) Clients() int { return len(nw.proxies) }

// SetReachable enables or disables client c's proxy to node n.
func (nw *Network) SetReachable(c, n int, ok bool) error {
	p := nw.proxies[c][n]
	if ok {
		err := p.Start()
		if err != nil && err != toxiproxy.ErrProxyAlreadyStarted {
			// The old port was taken (an ephemeral port of some client)
			// while the proxy was down: listen on a new one.
			p.Listen = "127.0.0.1:0"
			if err = p.Start(); err != nil {
				return fmt.Errorf("chaos: heal client %d node %d: %w", c, n, err)
			}
			listen := p.Listen
			nw.addrs[c][n].Store(&listen)
		}
		return nil
	}
	p.Stop()
	return nil
}

// View makes client c see exactly the nodes in see.
func (nw *Network) View(c int, see []int) error {
	in := map[int]bool{}
	for _, n := range see {
		in[n] = true
	}
	for n := range nw.proxies[c] {
		if err := nw.SetReachable(c, n, in[n]); err != nil {
			return err
		}
	}
	return nil
}

// AddToxic adds a toxic (toxiproxy's JSON form, e.g.
// {"type":"latency","attributes":{"latency":80}}) to every client's proxy to
// node n, in both directions unless the JSON says otherwise.
func (nw *Network) AddToxic(n int, name, json string) error {
	for c := range nw.proxies {
		p := nw.proxies[c][n]
		full := fmt.Sprintf(`{"name":%q,%s`, name, strings.TrimPrefix(json, "{"))
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(full)); err != nil {
			return fmt.Errorf("chaos: toxic %s on client %d node %d: %w", name, c, n, err)
		}
		nw.mu.Lock()
		nw.toxics[p] = append(nw.toxics[p], name)
		nw.mu.Unlock()
	}
	return nil
}

// Heal removes every toxic and re-enables every proxy.
func (nw *Network) Heal() error {
	nw.mu.Lock()
	tx := nw.toxics
	nw.toxics = map[*toxiproxy.Proxy][]string{}
	nw.mu.Unlock()
	for p, names := range tx {
		for _, name := range names {
			_ = p.Toxics.RemoveToxic(context.Background(), name)
		}
	}
	for c := range nw.proxies {
		for n := range nw.proxies[c] {
			if err := nw.SetReachable(c, n, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close stops every proxy and closes the clients.
func (nw *Network) Close() {
	for c := range nw.proxies {
		for n, p := range nw.proxies[c] {
			p.Stop()
			if c < len(nw.redis) && n < len(nw.redis[c]) {
				_ = nw.redis[c][n].Close()
			}
		}
	}
}

package chaos

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
)

// This file is the one place where the chaos run touches the library's
// constructors that core v2 moves or adds: when they change, only these two
// functions change.

// newNodes makes one lock node per go-redis client, named node0, node1, ...
// in the order of the clients.
//
// Core v2 moves node constructors to package node: change this one line.
func newNodes(rcs []*redis.Client) []node.Node {
	nodes := make([]node.Node, len(rcs))
	for i, rc := range rcs {
		nodes[i] = redisnode.NewNamed(fmt.Sprintf("node%d", i), rc)
	}
	return nodes
}

// skewed offers the nodes seeds for new fence counters from a wall clock
// skew off the real one, as a client whose clock is off does.
// Node is a node with every optional capability: skewed embeds it, so that
// it forwards the capabilities of the node it wraps.
type Node interface {
	node.Node
	node.Inspector
	node.ForceReleaser
	node.Subscriber
}

type skewed struct {
	Node
	skew time.Duration
}

func (s skewed) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	a.Seed = uint64(int64(a.Seed) + s.skew.Microseconds())
	return s.Node.Acquire(ctx, a)
}

// skewNodes makes a client's nodes see its wall clock skew off.
func skewNodes(nodes []node.Node, skew time.Duration) []node.Node {
	if skew == 0 {
		return nodes
	}
	out := make([]node.Node, len(nodes))
	for i, n := range nodes {
		out[i] = skewed{n.(Node), skew}
	}
	return out
}

// directClients returns one go-redis client per address, connected straight
// to the nodes (no proxy), tuned like the proxied ones: short dial and I/O
// timeouts, context deadlines honoured, one dial per attempt, so that a
// killed node fails in milliseconds. Each replica of the measuring
// scenarios gets its own set, as separate processes would.
//
// delays, when not nil, gives each node's connection a one-way latency (each
// write waits that long): a replica "near" some nodes and "far" from others.
func directClients(addrs []string, poolSize int, delays []time.Duration) []*redis.Client {
	out := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		var delay time.Duration
		if delays != nil {
			delay = delays[i]
		}
		out[i] = redis.NewClient(&redis.Options{
			Addr: a,
			Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
				d := net.Dialer{Timeout: 300 * time.Millisecond}
				c, err := d.DialContext(ctx, network, addr)
				if err != nil || delay <= 0 {
					return c, err
				}
				return &delayConn{Conn: c, delay: delay}, nil
			},
			DialTimeout:           300 * time.Millisecond,
			ReadTimeout:           time.Second,
			WriteTimeout:          time.Second,
			DialerRetries:         1,
			MaxRetries:            1,
			ContextTimeoutEnabled: true,
			PoolSize:              poolSize,
		})
	}
	return out
}

// delayConn delays every write by a fixed latency.
type delayConn struct {
	net.Conn
	delay time.Duration
}

func (c *delayConn) Write(b []byte) (int, error) {
	time.Sleep(c.delay)
	return c.Conn.Write(b)
}

// replica is one process of the measuring scenarios: its own go-redis
// clients and its own redlock.Client.
type replica struct {
	rcs    []*redis.Client
	client *redlock.Client
}

// newReplica builds a replica over the nodes at addrs. With broken, it
// trusts only two of the nodes (a minority of five) and no drift: the
// checker must catch it.
func newReplica(addrs []string, idx int, broken bool, poolSize int, delays []time.Duration, opts ...redlock.Option) (*replica, error) {
	rcs := directClients(addrs, poolSize, delays)
	nodes := newNodes(rcs)
	if broken {
		nodes = []node.Node{nodes[(2*idx)%len(nodes)], nodes[(2*idx+1)%len(nodes)]}
		opts = append(opts, redlock.WithDriftFactor(0))
	}
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		for _, rc := range rcs {
			_ = rc.Close()
		}
		return nil, err
	}
	return &replica{rcs: rcs, client: c}, nil
}

func (r *replica) close() {
	_ = r.client.Close()
	for _, rc := range r.rcs {
		_ = rc.Close()
	}
}

func closeReplicas(rs []*replica) {
	for _, r := range rs {
		r.close()
	}
}

func newReplicas(n int, addrs []string, broken bool, poolSize int, opts ...redlock.Option) ([]*replica, error) {
	var rs []*replica
	for i := range n {
		r, err := newReplica(addrs, i, broken, poolSize, nil, opts...)
		if err != nil {
			closeReplicas(rs)
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
)

// Library names as they appear in results (lib=...).
const (
	libQL       = "quorumlock"
	libRS       = "redsync"
	libRSFast   = "redsync-failfast"
	libFloor    = "floor"
	libRawRedis = "go-redis"
)

// newClient is the go-redis client every library gets, one per node: both
// libraries honour context deadlines through ContextTimeoutEnabled.
func newClient(addr string, hook redis.Hook) *redis.Client {
	return newDialClient(addr, hook, nil)
}

// dialFunc is a go-redis Options.Dialer.
type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// newDialClient is newClient dialling through dial (go-redis's own dialer
// when nil).
func newDialClient(addr string, hook redis.Hook, dial dialFunc) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr:                  addr,
		Dialer:                dial,
		DialTimeout:           clientDialTimeout,
		ReadTimeout:           time.Second,
		WriteTimeout:          time.Second,
		ContextTimeoutEnabled: true,
	})
	if hook != nil {
		c.AddHook(hook)
	}
	return c
}

// clientDialTimeout is the dial timeout of every library's go-redis clients.
const clientDialTimeout = 500 * time.Millisecond

// clientSet is one go-redis client per node address.
type clientSet struct {
	clients []*redis.Client
}

func newClientSet(addrs []string, hooks []*harness.Counter) *clientSet {
	s := &clientSet{}
	for i, a := range addrs {
		var h redis.Hook
		if hooks != nil {
			h = hooks[i]
		}
		s.clients = append(s.clients, newClient(a, h))
	}
	return s
}

func (s *clientSet) Close() {
	for _, c := range s.clients {
		_ = c.Close()
	}
}

// warm opens a connection to every node so that the first batch does not pay
// for dials.
func (s *clientSet) warm(ctx context.Context) {
	for _, c := range s.clients {
		wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_ = c.Ping(wctx).Err()
		cancel()
	}
}

// locker is one library's acquire and release, with no adapter allocation:
// the handle is the library's own pointer.
type locker struct {
	name    string
	acquire func(ctx context.Context, key string) (any, error)
	release func(ctx context.Context, h any) error
	close   func()
}

func (l *locker) cycle(ctx context.Context, key string) error {
	h, err := l.acquire(ctx, key)
	if err != nil {
		return err
	}
	return l.release(ctx, h)
}

// qlNodes makes quorumlock's go-redis nodes, named node0, node1, ... This
// is the one place the bench builds them (rueidisnode's are in
// libs_rueidis.go): core v2 moves node constructors to package node, so
// change this line then.
func qlNodes(clients []*redis.Client) []node.Node {
	nodes := make([]node.Node, len(clients))
	for i, c := range clients {
		nodes[i] = redisnode.NewNamed(fmt.Sprintf("node%d", i), c)
	}
	return nodes
}

// newQL builds a quorumlock client over its own go-redis clients.
func newQL(addrs []string, ttl time.Duration, hooks []*harness.Counter, opts ...redlock.Option) (*locker, *redlock.Client, error) {
	return newQLOver(newClientSet(addrs, hooks), ttl, opts...)
}

// newQLOver builds a quorumlock client over cs, which its close closes (as
// does a failed build).
func newQLOver(cs *clientSet, ttl time.Duration, opts ...redlock.Option) (*locker, *redlock.Client, error) {
	nodes := qlNodes(cs.clients)
	opts = append([]redlock.Option{redlock.WithKeyPrefix("bench:ql:")}, opts...)
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		cs.Close()
		return nil, nil, err
	}
	cs.warm(context.Background())
	return &locker{
		name: libQL,
		acquire: func(ctx context.Context, key string) (any, error) {
			return c.Acquire(ctx, key, ttl)
		},
		release: func(ctx context.Context, h any) error {
			return h.(*redlock.Lock).Release(ctx)
		},
		close: func() { _ = c.Close(); cs.Close() },
	}, c, nil
}

// newRS builds a redsync instance over its own go-redis clients.
func newRS(name string, addrs []string, ttl time.Duration, hooks []*harness.Counter, opts ...redsync.Option) (*locker, *redsync.Redsync) {
	return newRSOver(name, newClientSet(addrs, hooks), ttl, opts...)
}

// newRSOver builds a redsync instance over cs, which its close closes.
func newRSOver(name string, cs *clientSet, ttl time.Duration, opts ...redsync.Option) (*locker, *redsync.Redsync) {
	pools := make([]redsyncredis.Pool, len(cs.clients))
	for i, c := range cs.clients {
		pools[i] = goredis.NewPool(c)
	}
	rs := redsync.New(pools...)
	opts = append([]redsync.Option{redsync.WithExpiry(ttl)}, opts...)
	cs.warm(context.Background())
	return &locker{
		name: name,
		acquire: func(ctx context.Context, key string) (any, error) {
			m := rs.NewMutex("bench:rs:"+key, opts...)
			if err := m.LockContext(ctx); err != nil {
				return nil, err
			}
			return m, nil
		},
		release: func(ctx context.Context, h any) error {
			ok, err := h.(*redsync.Mutex).UnlockContext(ctx)
			if err == nil && !ok {
				err = errors.New("redsync: unlock reached no quorum")
			}
			return err
		},
		close: cs.Close,
	}, rs
}

// delScript is the compare-and-delete every Redlock client runs on release.
var delScript = redis.NewScript(compareAndDeleteLua)

// newFloor is what an ideal go-redis Redlock client costs: a fresh random
// token, SET NX PX on every node in parallel, then compare-and-delete on
// every node in parallel, waiting for all replies each time. No retry, no
// validity, no fence.
func newFloor(addrs []string, ttl time.Duration) *locker {
	cs := newClientSet(addrs, nil)
	cs.warm(context.Background())
	n := len(cs.clients)
	quorum := n/2 + 1
	type held struct{ key, token string }
	var pool = sync.Pool{New: func() any { return make(chan bool, n) }}
	fan := func(f func(c *redis.Client) bool) int {
		ch := pool.Get().(chan bool)
		for _, c := range cs.clients {
			go func() { ch <- f(c) }()
		}
		ok := 0
		for range n {
			if <-ch {
				ok++
			}
		}
		pool.Put(ch)
		return ok
	}
	return &locker{
		name: libFloor,
		acquire: func(ctx context.Context, key string) (any, error) {
			var b [16]byte
			_, _ = rand.Read(b[:])
			h := &held{key: "bench:floor:" + key, token: base64.RawURLEncoding.EncodeToString(b[:])}
			if fan(func(c *redis.Client) bool {
				ok, err := c.SetNX(ctx, h.key, h.token, ttl).Result()
				return err == nil && ok
			}) < quorum {
				return nil, errors.New("floor: no quorum")
			}
			return h, nil
		},
		release: func(ctx context.Context, hv any) error {
			h := hv.(*held)
			if fan(func(c *redis.Client) bool {
				v, err := delScript.Run(ctx, c, []string{h.key}, h.token).Int64()
				return err == nil && v == 1
			}) < quorum {
				return errors.New("floor: release reached no quorum")
			}
			return nil
		},
		close: cs.Close,
	}
}

// floorHeld is a lock of the contended and silent floors.
type floorHeld struct{ key, token string }

// floorFan sends f to every node at once. With decide, it returns as soon as
// a majority said yes or can no longer say yes (the replies still in flight
// are drained in the background); without, it waits for every reply.
func floorFan(clients []*redis.Client, decide bool, f func(c *redis.Client) bool) int {
	n := len(clients)
	quorum := n/2 + 1
	ch := make(chan bool, n)
	for _, c := range clients {
		go func() { ch <- f(c) }()
	}
	yes, no := 0, 0
	for range n {
		if <-ch {
			yes++
		} else {
			no++
		}
		if decide && (yes >= quorum || no > n-quorum) {
			break
		}
	}
	return yes
}

// newFloorContended is the floor under contention: the plain floor's single
// attempt, undone on every node when it did not reach a majority (or the
// partial keys would block everyone for the TTL), retried after a random
// delay under a millisecond until ctx ends. Its try makes one attempt that
// decides as soon as the outcome is known (a silent node delays nothing)
// and undoes a partial win in the background.
func newFloorContended(addrs []string, ttl time.Duration) (l *locker, try func(ctx context.Context, key string) (any, error)) {
	cs := newClientSet(addrs, nil)
	cs.warm(context.Background())
	quorum := len(cs.clients)/2 + 1
	attempt := func(ctx context.Context, key string, decide bool) (*floorHeld, error) {
		var b [16]byte
		_, _ = rand.Read(b[:])
		h := &floorHeld{key: "bench:floor:" + key, token: base64.RawURLEncoding.EncodeToString(b[:])}
		if floorFan(cs.clients, decide, func(c *redis.Client) bool {
			ok, err := c.SetNX(ctx, h.key, h.token, ttl).Result()
			return err == nil && ok
		}) >= quorum {
			return h, nil
		}
		undo := func() {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			floorFan(cs.clients, false, func(c *redis.Client) bool {
				return delScript.Run(uctx, c, []string{h.key}, h.token).Err() == nil
			})
			cancel()
		}
		if decide {
			go undo()
		} else {
			undo()
		}
		return nil, errors.New("floor: not acquired")
	}
	release := func(ctx context.Context, hv any) error {
		h := hv.(*floorHeld)
		if floorFan(cs.clients, false, func(c *redis.Client) bool {
			v, err := delScript.Run(ctx, c, []string{h.key}, h.token).Int64()
			return err == nil && v == 1
		}) < quorum {
			return errors.New("floor: release reached no quorum")
		}
		return nil
	}
	l = &locker{
		name: libFloor,
		acquire: func(ctx context.Context, key string) (any, error) {
			for {
				h, err := attempt(ctx, key, false)
				if err == nil {
					return h, nil
				}
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				t := time.NewTimer(mrand.N(time.Millisecond))
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return nil, ctx.Err()
				}
			}
		},
		release: release,
		close:   cs.Close,
	}
	try = func(ctx context.Context, key string) (any, error) {
		h, err := attempt(ctx, key, true)
		if err != nil {
			return nil, err
		}
		return h, nil
	}
	return l, try
}

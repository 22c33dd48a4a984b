package main

import (
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/rueidisnode"
)

// libQLRueidis is quorumlock over rueidisnode (rueidis clients instead of
// go-redis).
const libQLRueidis = "quorumlock-rueidis"

// newRueidisClient is the rueidis client of one node: a standalone client
// (no cluster probe, no client-side cache), dial timeout as go-redis's.
// A node that does not answer at start (the blackhole) still gets a
// client, which dials again on use.
func newRueidisClient(addr string) (rueidis.Client, error) {
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{addr},
		ForceSingleClient: true,
		DisableCache:      true,
		Dialer:            net.Dialer{Timeout: 500 * time.Millisecond},
		ConnWriteTimeout:  time.Second,
		// Write every command through the pipeline goroutines from the
		// start: a Client always fans out, and the synchronous mode costs
		// more CPU per cycle here (measured with the rueidisnode module's
		// lock-cycle benchmark).
		AlwaysPipelining: true,
	})
	if c == nil {
		return nil, err
	}
	return c, nil
}

// countingClient counts a rueidis client's calls on a harness.Counter: a Do
// is one round trip, a DoMulti one round trip of len(multi) commands.
type countingClient struct {
	rueidis.Client
	n *harness.Counter
}

func (c countingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.n.Add(1, 1)
	return c.Client.Do(ctx, cmd)
}

func (c countingClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c.n.Add(int64(len(multi)), 1)
	return c.Client.DoMulti(ctx, multi...)
}

// newQLRueidis builds a quorumlock client over rueidisnode, with its own
// rueidis clients.
func newQLRueidis(addrs []string, ttl time.Duration, hooks []*harness.Counter, opts ...redlock.Option) (*locker, *redlock.Client, error) {
	var rcs []rueidis.Client
	closeRCs := func() {
		for _, rc := range rcs {
			rc.Close()
		}
	}
	nodes := make([]node.Node, len(addrs))
	for i, a := range addrs {
		rc, err := newRueidisClient(a)
		if err != nil {
			closeRCs()
			return nil, nil, err
		}
		rcs = append(rcs, rc)
		var nc rueidis.Client = rc
		if hooks != nil {
			nc = countingClient{Client: rc, n: hooks[i]}
		}
		nodes[i] = rueidisnode.New(nc, rueidisnode.WithName(fmt.Sprintf("node%d", i)))
	}
	opts = append([]redlock.Option{redlock.WithKeyPrefix("bench:qlr:")}, opts...)
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		closeRCs()
		return nil, nil, err
	}
	return &locker{
		name: libQLRueidis,
		acquire: func(ctx context.Context, key string) (any, error) {
			return c.Acquire(ctx, key, ttl)
		},
		release: func(ctx context.Context, h any) error {
			return h.(*redlock.Lock).Release(ctx)
		},
		close: func() { _ = c.Close(); closeRCs() },
	}, c, nil
}

// libRueidisFloor is the floor over rueidis: what an ideal Redlock client
// on rueidis costs (a fresh random token, SET NX PX on every node in
// parallel, then compare-and-delete on every node in parallel, waiting for
// every reply), so that quorumlock's rueidis node is compared with what
// rueidis itself allows.
const libRueidisFloor = "rueidis-floor"

// newRueidisFloor builds the rueidis floor over its own rueidis clients.
func newRueidisFloor(addrs []string, ttl time.Duration) (*locker, error) {
	var rcs []rueidis.Client
	closeRCs := func() {
		for _, rc := range rcs {
			rc.Close()
		}
	}
	for _, a := range addrs {
		rc, err := newRueidisClient(a)
		if err != nil {
			closeRCs()
			return nil, err
		}
		rcs = append(rcs, rc)
	}
	del := rueidis.NewLuaScript(compareAndDeleteLua)
	n, quorum := len(rcs), len(rcs)/2+1
	type held struct{ key, token string }
	fan := func(f func(c rueidis.Client) bool) int {
		ch := make(chan bool, n)
		for _, c := range rcs {
			go func() { ch <- f(c) }()
		}
		ok := 0
		for range n {
			if <-ch {
				ok++
			}
		}
		return ok
	}
	return &locker{
		name: libRueidisFloor,
		acquire: func(ctx context.Context, key string) (any, error) {
			var b [16]byte
			_, _ = crand.Read(b[:])
			h := &held{key: "bench:rueidis-floor:" + key, token: base64.RawURLEncoding.EncodeToString(b[:])}
			if fan(func(c rueidis.Client) bool {
				err := c.Do(ctx, c.B().Set().Key(h.key).Value(h.token).Nx().PxMilliseconds(ttl.Milliseconds()).Build()).Error()
				return err == nil
			}) < quorum {
				return nil, errors.New("rueidis floor: no quorum")
			}
			return h, nil
		},
		release: func(ctx context.Context, hv any) error {
			h := hv.(*held)
			if fan(func(c rueidis.Client) bool {
				v, err := del.Exec(ctx, c, []string{h.key}, []string{h.token}).AsInt64()
				return err == nil && v == 1
			}) < quorum {
				return errors.New("rueidis floor: release reached no quorum")
			}
			return nil
		},
		close: closeRCs,
	}, nil
}

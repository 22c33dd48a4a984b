package redisnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/guard"
	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
)

// subscriber is the part of a go-redis client that can subscribe:
// *redis.Client, *redis.Ring, *redis.ClusterClient, redis.UniversalClient.
type subscriber interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Timing of a subscription: an idle one is pinged every subscribePing and
// counts as broken when the pong (or the confirmation of SUBSCRIBE) is not
// back within another subscribePing. After a break it is remade with a
// backoff from subscribeRetryMin doubling up to subscribeRetryMax.
const (
	subscribePing     = 2 * time.Second
	subscribeRetryMin = 50 * time.Millisecond
	subscribeRetryMax = time.Second
)

// Subscribe implements Node when the client can subscribe; over a bare
// redis.Scripter it returns ErrNotificationsUnsupported. The subscription
// holds a connection of its own, read by one goroutine that pings it when
// idle and remakes it after a break; stop ends that goroutine.
func (n *Node) Subscribe(ctx context.Context, channel string, onRelease func(name, releaseID string), onState func(up bool, err error)) (func(), error) {
	if channel == "" {
		return nil, wire.Invalid("empty channel")
	}
	if onRelease == nil || onState == nil {
		return nil, wire.Invalid("nil callback")
	}
	sc, ok := n.client.(subscriber)
	if !ok {
		return nil, fmt.Errorf("%w: %T", node.ErrNotificationsUnsupported, n.client)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &redisSub{client: sc, channel: channel, onRelease: onRelease, onState: onState}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.run(ctx)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			s.closeCurrent()
			<-done
		})
	}, nil
}

type redisSub struct {
	client    subscriber
	channel   string
	onRelease func(name, releaseID string)
	onState   func(bool, error)

	mu sync.Mutex
	ps *redis.PubSub // the current subscription, closed by stop to end a blocked read
}

func (s *redisSub) run(ctx context.Context) {
	retry := subscribeRetryMin
	for {
		// A panic while reading (a reply go-redis cannot decode) is a
		// break like any other: reported, then subscribed again.
		wasUp, err := guard.Call(func() (bool, error) { return s.session(ctx) })
		if ctx.Err() != nil {
			return
		}
		s.onState(false, err)
		if wasUp {
			retry = subscribeRetryMin
		}
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		retry = min(2*retry, subscribeRetryMax)
	}
}

// session subscribes once and reads the subscription until it breaks,
// reporting whether it was ever up.
func (s *redisSub) session(ctx context.Context) (wasUp bool, err error) {
	ps := s.client.Subscribe(ctx, s.channel)
	defer func() { _ = ps.Close() }()
	s.mu.Lock()
	if ctx.Err() != nil {
		s.mu.Unlock()
		return false, ctx.Err()
	}
	s.ps = ps
	s.mu.Unlock()
	return s.receive(ctx, ps)
}

// receive reads ps until it breaks, reporting whether it was ever up.
func (s *redisSub) receive(ctx context.Context, ps *redis.PubSub) (wasUp bool, err error) {
	pinged := false
	for {
		msg, err := ps.ReceiveTimeout(ctx, subscribePing)
		if err != nil {
			if ctx.Err() != nil {
				return wasUp, ctx.Err()
			}
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				return wasUp, err
			}
			if pinged {
				return wasUp, fmt.Errorf("no answer to ping within %s: %w", subscribePing, err)
			}
			if err := ps.Ping(ctx); err != nil {
				return wasUp, err
			}
			pinged = true
			continue
		}
		pinged = false
		switch m := msg.(type) {
		case *redis.Message:
			s.onRelease(wire.ParseRelease(m.Payload))
		case *redis.Subscription:
			if m.Kind == "subscribe" && m.Channel == s.channel {
				wasUp = true
				s.onState(true, nil)
			}
		}
	}
}

func (s *redisSub) closeCurrent() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ps != nil {
		_ = s.ps.Close()
	}
}

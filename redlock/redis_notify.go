package redlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// subscriber is the part of a go-redis client that can subscribe:
// *redis.Client, *redis.Ring, *redis.ClusterClient, redis.UniversalClient.
type subscriber interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Timing of a RedisNode subscription: an idle subscription is pinged every
// subscribePing, and counts as broken when the pong (or the confirmation of
// SUBSCRIBE) is not back within another subscribePing. After a break it is
// remade with a backoff from subscribeRetryMin doubling up to
// subscribeRetryMax.
const (
	subscribePing     = 2 * time.Second
	subscribeRetryMin = 50 * time.Millisecond
	subscribeRetryMax = time.Second
)

// ReleaseNotify implements Notifier: the release script publishes key on
// channel when it deletes it.
func (n *RedisNode) ReleaseNotify(ctx context.Context, key, token, channel string) (bool, error) {
	v, err := releaseScript.Run(ctx, n.client, []string{key}, token, channel).Int64()
	return v == 1, err
}

// SubscribeReleases implements Notifier when the node's client can
// subscribe (a *redis.Client, *redis.Ring, *redis.ClusterClient or other
// redis.UniversalClient); over a bare redis.Scripter it fails with
// ErrNotificationsUnsupported. The subscription holds one connection of its
// own. A goroutine reads it, pings it when idle, and remakes it after a
// break (the node restarted, a network fault, no pong in time).
func (n *RedisNode) SubscribeReleases(ctx context.Context, channel string, onRelease func(key, release string), onState func(up bool, err error)) (func(), error) {
	sc, ok := n.client.(subscriber)
	if !ok {
		return nil, fmt.Errorf("%w: %T", ErrNotificationsUnsupported, n.client)
	}
	ctx, cancel := context.WithCancel(ctx)
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
	onRelease func(key, release string)
	onState   func(bool, error)

	mu sync.Mutex
	ps *redis.PubSub // the current subscription, closed by stop to end a blocked read
}

func (s *redisSub) run(ctx context.Context) {
	retry := subscribeRetryMin
	for {
		ps := s.client.Subscribe(ctx, s.channel)
		s.mu.Lock()
		if ctx.Err() != nil {
			s.mu.Unlock()
			_ = ps.Close()
			return
		}
		s.ps = ps
		s.mu.Unlock()

		wasUp, err := s.receive(ctx, ps)
		_ = ps.Close()
		if ctx.Err() != nil {
			return
		}
		s.onState(false, err)
		if wasUp {
			retry = subscribeRetryMin
		}
		if sleep(ctx, retry) != nil {
			return
		}
		retry = min(2*retry, subscribeRetryMax)
	}
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
			s.onRelease(parseRelease(m.Payload))
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

// parseRelease splits an announcement of the release script, "<id> <key>"
// with a 16-digit id, into key and id. Anything else is taken as a bare key
// with no id.
func parseRelease(payload string) (key, release string) {
	if len(payload) > 17 && payload[16] == ' ' {
		return payload[17:], payload[:16]
	}
	return payload, ""
}

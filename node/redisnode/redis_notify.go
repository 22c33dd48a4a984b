package redisnode

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/notifyloop"
	"github.com/quorumlock/quorumlock/node"
)

// subscriber is the part of a go-redis client that can subscribe:
// *redis.Client, *redis.Ring, *redis.ClusterClient, redis.UniversalClient.
type subscriber interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Subscribe implements Node when the client can subscribe; over a bare
// redis.Scripter it returns ErrNotificationsUnsupported. The subscription
// holds a connection of its own, read by one goroutine that pings it when
// idle and remakes it after a break; stop ends that goroutine.
func (n *Node) Subscribe(ctx context.Context, channel string, onRelease func(name, releaseID string), onState func(up bool, err error)) (func(), error) {
	if err := notifyloop.Validate(channel, onRelease, onState); err != nil {
		return nil, err
	}
	sc, ok := n.client.(subscriber)
	if !ok {
		return nil, fmt.Errorf("%w: %T", node.ErrNotificationsUnsupported, n.client)
	}
	return notifyloop.Start(ctx, pubSubDriver{sc}, channel, onRelease, onState)
}

// pubSubDriver subscribes with go-redis's PubSub.
type pubSubDriver struct{ client subscriber }

// Open subscribes within ctx. go-redis's Subscribe(ctx, channel) drops
// the error of its first attempt and makes the connection again in the
// first read, under the PubSub's lock and without ctx's deadline, where
// Close waits behind it; so Open subscribes itself and reports a failure.
func (d pubSubDriver) Open(ctx context.Context, channel string, ev *notifyloop.Events) (notifyloop.Conn, error) {
	ps := d.client.Subscribe(ctx)
	if err := ps.Subscribe(ctx, channel); err != nil {
		_ = ps.Close()
		return nil, err
	}
	return &pubSubConn{ps: ps, ev: ev}, nil
}

type pubSubConn struct {
	ps *redis.PubSub
	ev *notifyloop.Events
}

// Close ends a read blocked in ReceiveTimeout, which does not watch ctx.
func (c *pubSubConn) Close() { _ = c.ps.Close() }

// Serve reads the subscription until it breaks, pinging it when idle.
func (c *pubSubConn) Serve(ctx context.Context) error {
	defer c.Close()
	pinged := false
	for {
		msg, err := c.ps.ReceiveTimeout(ctx, notifyloop.Ping)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				return err
			}
			if pinged {
				return notifyloop.NoPong(err)
			}
			if err := c.ps.Ping(ctx); err != nil {
				return err
			}
			pinged = true
			continue
		}
		pinged = false
		switch m := msg.(type) {
		case *redis.Message:
			c.ev.Message(m.Channel, m.Payload)
		case *redis.Subscription:
			c.ev.Subscribed(m.Kind, m.Channel)
		}
	}
}

package rueidisnode

import (
	"context"
	"errors"
	"time"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/internal/notifyloop"
)

// Subscribe implements node.Node. The subscription holds a dedicated
// connection of the client (Client.Dedicate) with Pub/Sub hooks. A
// goroutine pings it when idle and, after a break (the node restarted, a
// network fault, no pong in time), closes the connection and subscribes
// again on a new one, with a backoff. ctx carries values only.
func (n *Node) Subscribe(ctx context.Context, channel string, onRelease func(name, releaseID string), onState func(up bool, err error)) (func(), error) {
	return notifyloop.Start(ctx, dedicatedDriver{n.client}, channel, onRelease, onState)
}

// errClosed stands for a subscription whose connection ended without
// saying why.
var errClosed = errors.New("rueidisnode: subscription connection closed")

// dedicatedDriver subscribes on a dedicated connection with Pub/Sub hooks.
type dedicatedDriver struct{ client rueidis.Client }

// Open subscribes on a dedicated connection. The hooks run on rueidis's
// reader goroutine: releases on channel go to ev, and so does the
// confirmation of the subscription.
func (d dedicatedDriver) Open(ctx context.Context, channel string, ev *notifyloop.Events) (_ notifyloop.Conn, err error) {
	dc, release := d.client.Dedicate()
	c := &dedicatedConn{dc: dc, release: release}
	c.hookErr = dc.SetPubSubHooks(rueidis.PubSubHooks{
		OnMessage:      func(m rueidis.PubSubMessage) { ev.Message(m.Channel, m.Message) },
		OnSubscription: func(m rueidis.PubSubSubscription) { ev.Subscribed(m.Kind, m.Channel) },
	})
	defer func() {
		if err != nil {
			c.free()
		}
	}()
	sctx, cancel := context.WithTimeout(ctx, 2*notifyloop.Ping)
	defer cancel()
	if err := dc.Do(sctx, dc.B().Subscribe().Channel(channel).Build()).Error(); err != nil {
		return nil, err
	}
	return c, nil
}

type dedicatedConn struct {
	dc      rueidis.DedicatedClient
	release func()
	hookErr <-chan error // closed once the hooks are done
}

// free closes the connection (not just back to the pool: it is
// subscribed) and waits for the hooks to stop.
func (c *dedicatedConn) free() {
	c.dc.Close()
	c.release()
	for range c.hookErr {
	}
}

// Close does nothing: Serve watches ctx, which stop cancels.
func (c *dedicatedConn) Close() {}

func (c *dedicatedConn) Serve(ctx context.Context) error {
	defer c.free()
	return c.keepPinging(ctx)
}

// keepPinging pings the subscribed connection every notifyloop.Ping until
// ctx ends, a ping goes unanswered or the hooks end; it returns why it
// stopped.
func (c *dedicatedConn) keepPinging(ctx context.Context) error {
	t := time.NewTicker(notifyloop.Ping)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err, ok := <-c.hookErr:
			if !ok || err == nil {
				err = errClosed
			}
			return err
		case <-t.C:
			pctx, cancel := context.WithTimeout(ctx, notifyloop.Ping)
			err := c.dc.Do(pctx, c.dc.B().Ping().Build()).Error()
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return notifyloop.NoPong(err)
			}
		}
	}
}

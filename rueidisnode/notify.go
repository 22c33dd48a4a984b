package rueidisnode

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/internal/guard"
	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
)

// Timing of a subscription, as in redisnode.Node: an idle subscription
// is pinged every subscribePing and counts as broken when the pong (or the
// confirmation of SUBSCRIBE) is not back within another subscribePing.
// After a break it is remade with a backoff from subscribeRetryMin doubling
// up to subscribeRetryMax.
const (
	subscribePing     = 2 * time.Second
	subscribeRetryMin = 50 * time.Millisecond
	subscribeRetryMax = time.Second
)

// Subscribe implements node.Node. The subscription holds a dedicated
// connection of the client (Client.Dedicate) with Pub/Sub hooks. A
// goroutine pings it when idle and, after a break (the node restarted, a
// network fault, no pong in time), closes the connection and subscribes
// again on a new one, with a backoff. ctx carries values only.
func (n *Node) Subscribe(ctx context.Context, channel string, onRelease func(name, releaseID string), onState func(up bool, err error)) (func(), error) {
	if channel == "" || onRelease == nil || onState == nil {
		return nil, fmt.Errorf("%w: subscribe needs a channel and both callbacks", node.ErrInvalidArgument)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &sub{client: n.client, channel: channel, onRelease: onRelease, onState: onState}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.run(ctx)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}, nil
}

type sub struct {
	client    rueidis.Client
	channel   string
	onRelease func(name, releaseID string)
	onState   func(bool, error)
}

func (s *sub) run(ctx context.Context) {
	retry := subscribeRetryMin
	for {
		// A panic in the session is a break like any other: reported,
		// then subscribed again.
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

// errClosed stands for a subscription whose connection ended without
// saying why.
var errClosed = errors.New("rueidisnode: subscription connection closed")

// session subscribes on a dedicated connection and serves it until it
// breaks or ctx ends, reporting whether it was ever up. The hooks run on
// rueidis's reader goroutine; session returns only once they have stopped,
// so that callbacks never overlap.
func (s *sub) session(ctx context.Context) (wasUp bool, err error) {
	dc, release := s.client.Dedicate()
	upc := make(chan struct{}, 1)
	hookErr := dc.SetPubSubHooks(s.hooks(upc))
	defer func() {
		dc.Close() // the connection, not just back to the pool: it is subscribed
		release()
		for range hookErr { // closed once the hooks are done
		}
		select {
		case <-upc:
			wasUp = true
		default:
		}
	}()

	sctx, cancel := context.WithTimeout(ctx, 2*subscribePing)
	err = dc.Do(sctx, dc.B().Subscribe().Channel(s.channel).Build()).Error()
	cancel()
	if err != nil {
		return false, err
	}
	return false, s.keepPinging(ctx, dc, hookErr)
}

// hooks are a session's: releases on s.channel go to onRelease, and its
// subscription is signalled on upc (without blocking) and to onState.
func (s *sub) hooks(upc chan struct{}) rueidis.PubSubHooks {
	return rueidis.PubSubHooks{
		OnMessage: func(m rueidis.PubSubMessage) {
			if m.Channel == s.channel {
				s.onRelease(wire.ParseRelease(m.Message))
			}
		},
		OnSubscription: func(m rueidis.PubSubSubscription) {
			if m.Kind == "subscribe" && m.Channel == s.channel {
				select {
				case upc <- struct{}{}:
				default:
				}
				s.onState(true, nil)
			}
		},
	}
}

// keepPinging pings the subscribed connection every subscribePing until
// ctx ends, a ping goes unanswered or the hooks end (hookErr); it returns
// why it stopped.
func (s *sub) keepPinging(ctx context.Context, dc rueidis.DedicatedClient, hookErr <-chan error) error {
	t := time.NewTicker(subscribePing)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err, ok := <-hookErr:
			if !ok || err == nil {
				err = errClosed
			}
			return err
		case <-t.C:
			pctx, cancel := context.WithTimeout(ctx, subscribePing)
			err := dc.Do(pctx, dc.B().Ping().Build()).Error()
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("no answer to ping within %s: %w", subscribePing, err)
			}
		}
	}
}

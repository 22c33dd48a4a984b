package redlock

import (
	"context"
	"sync"
)

// memoryBroker is a MemoryNode's Pub/Sub: subscribers per channel, called
// synchronously by the releasing goroutine. Its zero value is ready.
type memoryBroker struct {
	mu   sync.Mutex
	subs map[string]map[*memorySub]struct{}
}

type memorySub struct {
	mu        sync.Mutex // one delivery at a time, none after stop
	stopped   bool
	onRelease func(key, release string)
}

func (b *memoryBroker) publish(channel, key, release string) {
	b.mu.Lock()
	subs := make([]*memorySub, 0, len(b.subs[channel]))
	for s := range b.subs[channel] {
		subs = append(subs, s)
	}
	b.mu.Unlock()
	for _, s := range subs {
		s.mu.Lock()
		if !s.stopped {
			s.onRelease(key, release)
		}
		s.mu.Unlock()
	}
}

// ReleaseNotify implements Notifier: Release, then announce the key on
// channel to the node's subscribers if it was deleted.
func (n *MemoryNode) ReleaseNotify(ctx context.Context, key, token, channel string) (bool, error) {
	released, err := n.Release(ctx, key, token)
	if released {
		n.broker.publish(channel, key, releaseID(token))
	}
	return released, err
}

// SubscribeReleases implements Notifier. The subscription is up at once and
// never breaks (SetDown does not break it; a node that is down announces
// nothing, since its releases fail). It starts no goroutine: onRelease runs
// on the releasing goroutine.
func (n *MemoryNode) SubscribeReleases(_ context.Context, channel string, onRelease func(key, release string), onState func(up bool, err error)) (func(), error) {
	s := &memorySub{onRelease: onRelease}
	b := &n.broker
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[string]map[*memorySub]struct{}{}
	}
	if b.subs[channel] == nil {
		b.subs[channel] = map[*memorySub]struct{}{}
	}
	b.subs[channel][s] = struct{}{}
	b.mu.Unlock()
	onState(true, nil)
	return func() {
		b.mu.Lock()
		delete(b.subs[channel], s)
		if len(b.subs[channel]) == 0 {
			delete(b.subs, channel)
		}
		b.mu.Unlock()
		s.mu.Lock()
		s.stopped = true
		s.mu.Unlock()
	}, nil
}

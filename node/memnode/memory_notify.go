package memnode

import (
	"context"
	"sync"

	"github.com/quorumlock/quorumlock/internal/notifyloop"
)

// memBroker is a Memory node's Pub/Sub: subscribers per channel, called by
// the releasing goroutine. Its zero value is ready.
type memBroker struct {
	mu   sync.Mutex
	subs map[string]map[*memSub]struct{}
}

type memSub struct {
	mu        sync.Mutex // one callback at a time, none after stop
	stopped   bool
	reported  bool // onState was called at least once
	up        bool // what onState said last
	onRelease func(name, releaseID string)
	onState   func(up bool, err error)
}

func (b *memBroker) snapshot(channel string) []*memSub {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*memSub
	for c, subs := range b.subs {
		if channel != "" && c != channel {
			continue
		}
		for s := range subs {
			out = append(out, s)
		}
	}
	return out
}

func (b *memBroker) publish(channel, name, releaseID string) {
	for _, s := range b.snapshot(channel) {
		s.mu.Lock()
		if !s.stopped {
			s.onRelease(name, releaseID)
		}
		s.mu.Unlock()
	}
}

// reportState tells every subscription whether m is up.
func (b *memBroker) reportState(m *Node) {
	for _, s := range b.snapshot("") {
		s.report(m)
	}
}

// report calls onState with m's state if it changed since the last report.
// The state is read under s.mu, so the last report is always the current
// state, whatever the order of concurrent SetDown calls.
func (s *memSub) report(m *Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m.mu.Lock()
	up := !m.down
	m.mu.Unlock()
	if s.stopped || (s.reported && s.up == up) {
		return
	}
	s.reported, s.up = true, up
	if up {
		s.onState(true, nil)
	} else {
		s.onState(false, ErrDown)
	}
}

// Subscribe implements Node. Releases are delivered on the releasing
// goroutine. The subscription reports up (or down, while the node is down)
// from a short-lived goroutine, so that no callback runs before Subscribe
// returns, and then follows SetDown. stop must not be called from a
// callback.
func (m *Node) Subscribe(_ context.Context, channel string, onRelease func(name, releaseID string), onState func(up bool, err error)) (func(), error) {
	if err := notifyloop.Validate(channel, onRelease, onState); err != nil {
		return nil, err
	}
	s := &memSub{onRelease: onRelease, onState: onState}
	b := &m.broker
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[string]map[*memSub]struct{}{}
	}
	if b.subs[channel] == nil {
		b.subs[channel] = map[*memSub]struct{}{}
	}
	b.subs[channel][s] = struct{}{}
	b.mu.Unlock()
	var first sync.WaitGroup
	first.Go(func() { s.report(m) })
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs[channel], s)
			if len(b.subs[channel]) == 0 {
				delete(b.subs, channel)
			}
			b.mu.Unlock()
			s.mu.Lock()
			s.stopped = true
			s.mu.Unlock()
			first.Wait()
		})
	}, nil
}

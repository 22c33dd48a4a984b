package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// errRefused is a request to a node the client is partitioned from: the
// connection is refused at once.
var errRefused = errors.New("sim: connection refused (partition)")

// link is one client's view of one node over the simulated network. It
// implements node.Node. A request travels for a delay drawn from the link's
// own PCG, may be lost before the server applies it or after (the reply
// is lost), and is applied on the server whatever the client's context
// says: a client that gave up still leaves its request in flight, and
// requests in flight at once may overtake each other. The client waits for
// the reply or its context, whichever comes first.
type link struct {
	w      *world
	client int
	srv    *server
	base   time.Duration
	skew   time.Duration // the client's wall clock offset, added to fence seeds

	mu sync.Mutex // r
	r  *rand.Rand

	cut       atomic.Int32  // partitions active: refused at once
	hole      atomic.Int32  // blackholes active: requests and replies vanish
	acquiring *atomic.Int32 // BugMissedWakeup: the client's acquires in flight, on any node
}

// draw is one request's fate: the delays there and back, and whether the
// request or its reply is lost.
func (l *link) draw() (there, back time.Duration, lostThere, lostBack bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.w.s
	healthy := time.Since(l.w.start) >= s.Duration-s.Healthy // no spikes or drops in the healthy tail
	one := func() time.Duration {
		d := time.Duration(float64(l.base) * (0.5 + l.r.ExpFloat64()))
		if !healthy && s.SpikeProb > 0 && l.r.Float64() < s.SpikeProb {
			d += time.Duration(l.r.Int64N(int64(s.SpikeMax)))
		}
		return d
	}
	there, back = one(), one()
	lostThere = !healthy && s.DropProb > 0 && l.r.Float64() < s.DropProb
	lostBack = !healthy && s.DropProb > 0 && l.r.Float64() < s.DropProb
	return
}

type result[T any] struct {
	v   T
	err error
}

// roundTrip sends apply to the server over l.
func roundTrip[T any](ctx context.Context, l *link, apply func() (T, error)) (T, error) {
	var zero T

	if l.cut.Load() > 0 {
		return zero, errRefused
	}
	there, back, lostThere, lostBack := l.draw()
	l.w.counts.requests.Add(1)
	reply := make(chan result[T], 1)
	hole := l.hole.Load() > 0
	l.w.inflight.Go(func() {
		time.Sleep(there)
		if lostThere || hole {
			l.w.counts.lost.Add(1)
			return
		}
		v, err := apply()
		time.Sleep(back)
		if lostBack || l.hole.Load() > 0 {
			l.w.counts.lost.Add(1)
			return
		}
		reply <- result[T]{v, err}
	})
	select {
	case r := <-reply:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// Name implements node.Node.
func (l *link) Name() string { return fmt.Sprintf("n%d", l.srv.idx) }

// Identify implements node.Node. The world notes when the client asked,
// to tell an attempt that waited for an identification.
func (l *link) Identify(ctx context.Context) (node.Identity, error) {
	l.w.noteIdentify(l.client)
	return roundTrip(ctx, l, l.srv.identify)
}

// Acquire implements node.Node; the seed comes from the client's skewed
// wall clock.
func (l *link) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	a.Seed = uint64(int64(a.Seed) + l.skew.Microseconds())
	if l.w.s.Bug == BugMissedWakeup {
		l.acquiring.Add(1)
		defer l.acquiring.Add(-1)
	}
	l.w.tr("c%d sends acquire %s to n%d", l.client, rid(a.Token), l.srv.idx)
	return roundTrip(ctx, l, func() (node.AcquireReply, error) { return l.srv.acquire(a) })
}

// Extend implements node.Node.
func (l *link) Extend(ctx context.Context, ops []node.ExtendArgs) ([]node.ExtendResult, error) {
	ops = append([]node.ExtendArgs(nil), ops...)
	return roundTrip(ctx, l, func() ([]node.ExtendResult, error) { return l.srv.extend(ops) })
}

// Release implements node.Node.
func (l *link) Release(ctx context.Context, a node.ReleaseArgs) (bool, error) {
	l.w.tr("c%d sends release %s to n%d", l.client, rid(a.Token), l.srv.idx)
	return roundTrip(ctx, l, func() (bool, error) { return l.srv.release(a) })
}

// RaiseFence implements node.Node.
func (l *link) RaiseFence(ctx context.Context, name, token string, fence uint64, retention time.Duration) (bool, error) {
	return roundTrip(ctx, l, func() (bool, error) { return l.srv.raiseFence(name, token, fence, retention) })
}

// Inspect implements node.Node.
func (l *link) Inspect(ctx context.Context, name string) (node.Holding, error) {
	return roundTrip(ctx, l, func() (node.Holding, error) { return l.srv.inspect(name) })
}

// Learn implements node.Learner.
func (l *link) Learn(ctx context.Context, a node.LearnArgs) (node.Standing, error) {
	return roundTrip(ctx, l, func() (node.Standing, error) { return l.srv.learn(a) })
}

// ForceRelease implements node.Node.
func (l *link) ForceRelease(ctx context.Context, a node.ForceReleaseArgs) (bool, error) {
	return roundTrip(ctx, l, func() (bool, error) { return l.srv.forceRelease(a) })
}

// Scan implements node.Node.
func (l *link) Scan(ctx context.Context, a node.ScanArgs) (node.ScanPage, error) {
	return roundTrip(ctx, l, func() (node.ScanPage, error) { return l.srv.scan(a) })
}

// Subscribe implements node.Node. Announcements reach the client at once,
// except across a partition or a blackhole (and, with BugMissedWakeup,
// while one of the client's acquires is in flight).
func (l *link) Subscribe(ctx context.Context, channel string, onRelease func(name, releaseID string), onState func(up bool, err error)) (func(), error) {
	l.w.tr("c%d subscribes to n%d", l.client, l.srv.idx)
	return l.srv.mem.Subscribe(ctx, channel, func(name, id string) {
		if l.cut.Load() > 0 || l.hole.Load() > 0 || l.acquiring.Load() > 0 {
			l.w.tr("c%d misses n%d's announcement of %s", l.client, l.srv.idx, shortID(id))
			return
		}
		l.w.tr("c%d hears n%d's announcement of %s", l.client, l.srv.idx, shortID(id))
		onRelease(name, id)
	}, onState)
}

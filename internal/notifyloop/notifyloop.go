// Package notifyloop keeps one release-notification subscription alive,
// whatever the Redis client library: it subscribes, remakes the
// subscription after a break with a backoff, hands what it reads to the
// subscriber's callbacks, and stops without leaving a goroutine behind.
// A Driver adapts one client library: how to subscribe on a connection of
// its own, how to read it and find out that it broke.
package notifyloop

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/internal/guard"
	"github.com/quorumlock/quorumlock/internal/wire"
)

// Timing of a subscription: a driver pings an idle one every Ping and
// counts it as broken when the pong (or the confirmation of SUBSCRIBE) is
// not back within another Ping. After a break it is remade with a backoff
// from retryMin doubling up to retryMax; a session that was up starts the
// backoff again from retryMin.
const (
	Ping     = 2 * time.Second
	retryMin = 50 * time.Millisecond
	retryMax = time.Second
)

// Driver opens subscriptions over one client library.
type Driver interface {
	// Open subscribes to channel on a connection of its own and hands what
	// it reads to ev. On an error it has already freed the connection.
	Open(ctx context.Context, channel string, ev *Events) (Conn, error)
}

// Conn is one open subscription.
type Conn interface {
	// Serve reads the subscription until it breaks or ctx ends and says
	// why. It frees the connection and returns only once no callback of
	// its Events runs any more, so that two sessions' callbacks never
	// overlap.
	Serve(ctx context.Context) error
	// Close makes a blocked Serve return, for libraries whose reads do not
	// watch ctx. It may run concurrently with Serve, and more than once.
	Close()
}

// NoPong is the break of a subscription whose ping went unanswered.
func NoPong(err error) error {
	return fmt.Errorf("no answer to ping within %s: %w", Ping, err)
}

// Validate checks Subscribe's arguments, as every node does before
// anything else.
func Validate(channel string, onRelease func(name, releaseID string), onState func(up bool, err error)) error {
	if channel == "" {
		return wire.Invalid("empty channel")
	}
	if onRelease == nil || onState == nil {
		return wire.Invalid("nil callback")
	}
	return nil
}

// Start keeps a subscription to channel over d until the returned stop is
// called; stop waits for the loop's goroutine to end and may be called
// more than once. ctx carries values, and its end does not stop the loop;
// when it has a deadline, the time left to it at Start bounds each Open
// (connecting and sending SUBSCRIBE), so that stop never waits longer
// than that for a server that accepts connections and never answers.
func Start(ctx context.Context, d Driver, channel string, onRelease func(name, releaseID string), onState func(up bool, err error)) (stop func(), err error) {
	if err := Validate(channel, onRelease, onState); err != nil {
		return nil, err
	}
	var openTimeout time.Duration
	if dl, ok := ctx.Deadline(); ok {
		openTimeout = max(time.Until(dl), time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l := &loop{driver: d, channel: channel, onRelease: onRelease, onState: onState, openTimeout: openTimeout}
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.run(ctx)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			l.closeCurrent()
			<-done
		})
	}, nil
}

type loop struct {
	driver    Driver
	channel   string
	onRelease func(name, releaseID string)
	onState   func(bool, error)
	// openTimeout bounds each Open when positive.
	openTimeout time.Duration

	mu      sync.Mutex
	current Conn // the open session, closed by stop to end a blocked read
}

func (l *loop) run(ctx context.Context) {
	retry := retryMin
	for {
		// A panic while reading (a reply the library cannot decode) is a
		// break like any other: reported, then subscribed again.
		wasUp, err := guard.Call(func() (bool, error) { return l.session(ctx) })
		if ctx.Err() != nil {
			return
		}
		l.onState(false, err)
		if wasUp {
			retry = retryMin
		}
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		retry = min(2*retry, retryMax)
	}
}

// session subscribes once and serves the subscription until it breaks,
// reporting whether it was ever up.
func (l *loop) session(ctx context.Context) (wasUp bool, err error) {
	ev := &Events{channel: l.channel, onRelease: l.onRelease, onState: l.onState}
	conn, err := l.open(ctx, ev)
	if err != nil {
		return ev.up.Load(), err
	}
	if !l.setCurrent(ctx, conn) {
		conn.Close() // stop came first: Serve ends at once
	}
	defer l.setCurrent(ctx, nil)
	err = conn.Serve(ctx)
	return ev.up.Load(), err
}

// open opens a session, within openTimeout when it is set.
func (l *loop) open(ctx context.Context, ev *Events) (Conn, error) {
	if l.openTimeout <= 0 {
		return l.driver.Open(ctx, l.channel, ev)
	}
	octx, cancel := context.WithTimeout(ctx, l.openTimeout)
	defer cancel()
	return l.driver.Open(octx, l.channel, ev)
}

// setCurrent records conn as the session stop must close; it refuses
// (false) once stop has begun, since stop would not see it.
func (l *loop) setCurrent(ctx context.Context, conn Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if conn != nil && ctx.Err() != nil {
		return false
	}
	l.current = conn
	return true
}

func (l *loop) closeCurrent() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.current != nil {
		l.current.Close()
	}
}

// Events is where a session's driver hands what it reads.
type Events struct {
	channel   string
	onRelease func(name, releaseID string)
	onState   func(bool, error)
	up        atomic.Bool
}

// Message hands on a message published on channel; other channels' are
// not the subscriber's.
func (e *Events) Message(channel, payload string) {
	if channel == e.channel {
		e.onRelease(wire.ParseRelease(payload))
	}
}

// Subscribed records a confirmation of kind (SUBSCRIBE's is "subscribe")
// for channel: the subscription is up.
func (e *Events) Subscribed(kind, channel string) {
	if kind == "subscribe" && channel == e.channel {
		e.up.Store(true)
		e.onState(true, nil)
	}
}

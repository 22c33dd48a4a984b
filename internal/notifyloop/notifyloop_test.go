package notifyloop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

var (
	errRefused = errors.New("connection refused")
	errDropped = errors.New("connection reset")
)

// session is what one Open of the fake driver does.
type session struct {
	openErr  error    // Open fails with it
	events   []string // "up", or a message's payload, handed on in order
	breakErr error    // then Serve returns it; nil: Serve waits for Close
}

// fakeDriver plays sessions in order; it counts what it opened and closed.
type fakeDriver struct {
	channel  string
	sessions []session

	mu     sync.Mutex
	opened []time.Duration // when each Open came, since start
	start  time.Time
	closed int // conns whose Close ended a blocked Serve
	live   int // conns opened and not yet done serving
}

func (d *fakeDriver) Open(ctx context.Context, channel string, ev *Events) (Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.opened)
	d.opened = append(d.opened, time.Since(d.start))
	s := session{openErr: errRefused}
	if n < len(d.sessions) {
		s = d.sessions[n]
	}
	if s.openErr != nil {
		return nil, s.openErr
	}
	d.live++
	return &fakeConn{d: d, s: s, ev: ev, channel: channel, closeCh: make(chan struct{})}, nil
}

type fakeConn struct {
	d       *fakeDriver
	s       session
	ev      *Events
	channel string

	once    sync.Once
	closeCh chan struct{}
}

func (c *fakeConn) Close() { c.once.Do(func() { close(c.closeCh) }) }

// Serve ignores ctx on purpose, like a go-redis read: only Close ends a
// session that does not break by itself.
func (c *fakeConn) Serve(ctx context.Context) error {
	defer func() {
		c.d.mu.Lock()
		c.d.live--
		c.d.mu.Unlock()
	}()
	for _, e := range c.s.events {
		if e == "up" {
			c.ev.Subscribed("subscribe", c.channel)
			continue
		}
		c.ev.Message("other", "not ours")
		c.ev.Message(c.channel, e)
	}
	if c.s.breakErr != nil {
		return c.s.breakErr
	}
	<-c.closeCh
	c.d.mu.Lock()
	c.d.closed++
	c.d.mu.Unlock()
	return ctx.Err()
}

// recorder collects the callbacks as text, in order.
type recorder struct {
	mu  sync.Mutex
	log []string
}

func (r *recorder) onRelease(name, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, "release "+name+" "+id)
}

func (r *recorder) onState(up bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, fmt.Sprintf("up=%v err=%v", up, err))
}

func (r *recorder) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log)
}

// A refused subscribe and a connection dropped mid-stream are both
// reported and both followed by a new subscription whose messages arrive;
// stop ends the last session (whose read ignores ctx) and the loop, and no
// callback comes after it. synctest.Test fails if a goroutine is left.
func TestLoopResubscribesAfterBreaksAndStopsClean(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fakeDriver{channel: "ch", start: time.Now(), sessions: []session{
			{openErr: errRefused},
			{events: []string{"up", "0000000000000001 a"}, breakErr: errDropped},
			{events: []string{"up", "b"}},
		}}
		var r recorder
		stop, err := Start(context.Background(), d, "ch", r.onRelease, r.onState)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		want := []string{
			"up=false err=connection refused",
			"up=true err=<nil>",
			"release a 0000000000000001",
			"up=false err=connection reset",
			"up=true err=<nil>",
			"release b ",
		}
		if got := r.snapshot(); !slices.Equal(got, want) {
			t.Fatalf("callbacks:\n got %q\nwant %q", got, want)
		}
		stop()
		stop() // twice is fine
		if got := r.snapshot(); len(got) != len(want) {
			t.Fatalf("callbacks after stop: %q", got[len(want):])
		}
		if len(d.opened) != 3 || d.closed != 1 || d.live != 0 {
			t.Fatalf("opened %d, closed %d, still serving %d; want 3, 1, 0", len(d.opened), d.closed, d.live)
		}
	})
}

// The backoff doubles from retryMin up to retryMax while the subscription
// never comes up, and starts again from retryMin after a session that was
// up.
func TestLoopBackoffDoublesAndResetsAfterUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		up := session{events: []string{"up"}, breakErr: errDropped}
		d := &fakeDriver{channel: "ch", start: time.Now(), sessions: []session{
			{openErr: errRefused}, {openErr: errRefused}, {openErr: errRefused},
			{openErr: errRefused}, {openErr: errRefused}, {openErr: errRefused},
			up, {openErr: errRefused},
		}}
		var r recorder
		stop, err := Start(context.Background(), d, "ch", r.onRelease, r.onState)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3900 * time.Millisecond)
		synctest.Wait()
		stop()
		ms := time.Millisecond
		want := []time.Duration{0, 50 * ms, 150 * ms, 350 * ms, 750 * ms, 1550 * ms, 2550 * ms, 2600 * ms, 2700 * ms, 2900 * ms, 3300 * ms}
		if !slices.Equal(d.opened, want) {
			t.Fatalf("subscribed at %v, want %v", d.opened, want)
		}
	})
}

// Stop while Open is under way: the session opened after stop began is
// closed at once and the loop ends.
func TestStopDuringOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		entered, release := make(chan struct{}), make(chan struct{})
		d := &blockingOpen{entered: entered, release: release, inner: &fakeDriver{channel: "ch", start: time.Now(),
			sessions: []session{{events: []string{"up"}}}}}
		var r recorder
		stop, err := Start(context.Background(), d, "ch", r.onRelease, r.onState)
		if err != nil {
			t.Fatal(err)
		}
		<-entered
		stopped := make(chan struct{})
		go func() { stop(); close(stopped) }()
		synctest.Wait()
		close(release)
		<-stopped
		if d.inner.closed != 1 || d.inner.live != 0 {
			t.Fatalf("closed %d, still serving %d; want 1, 0", d.inner.closed, d.inner.live)
		}
	})
}

// blockingOpen holds Open until release is closed.
type blockingOpen struct {
	entered, release chan struct{}
	inner            *fakeDriver
}

func (b *blockingOpen) Open(ctx context.Context, channel string, ev *Events) (Conn, error) {
	close(b.entered)
	<-b.release
	return b.inner.Open(ctx, channel, ev)
}

func TestStartRejectsBadArguments(t *testing.T) {
	d := &fakeDriver{}
	noRelease := func(string, string) {}
	noState := func(bool, error) {}
	for _, c := range []struct {
		name    string
		channel string
		rel     func(string, string)
		st      func(bool, error)
	}{
		{"empty channel", "", noRelease, noState},
		{"nil onRelease", "ch", nil, noState},
		{"nil onState", "ch", noRelease, nil},
	} {
		stop, err := Start(context.Background(), d, c.channel, c.rel, c.st)
		if !errors.Is(err, node.ErrInvalidArgument) || stop != nil {
			t.Errorf("%s: stop %v, err %v; want ErrInvalidArgument", c.name, stop != nil, err)
		}
	}
	if len(d.opened) != 0 {
		t.Fatalf("opened %d subscriptions for bad arguments", len(d.opened))
	}
}

package promlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/promlock"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

type labels = map[string]string

// A real run on 3 redis-server nodes: every family counts what happened,
// and the gauges come back to zero.
func TestMetricsOfARealRun(t *testing.T) {
	reg := prometheus.NewRegistry()
	obs, err := promlock.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	_, c := realClient(t, 3, redlock.WithObserver(obs))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	held, err := c.Acquire(ctx, "job:1", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryAcquire(ctx, "job:1", time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire of a held key: %v", err)
	}
	waited := make(chan error, 1)
	go func() {
		l, err := c.Acquire(ctx, "job:1", 10*time.Second)
		if err == nil {
			err = l.Release(ctx)
		}
		waited <- err
	}()
	await(t, "a waiter that lost its first attempt", func() bool {
		f := families(t, reg)
		return value(t, f, "quorumlock_waiters", labels{"class": "job"}) == 1 &&
			value(t, f, "quorumlock_contended_attempts_total", labels{"class": "job", "reason": "contended"}) >= 2
	})
	fams := families(t, reg)
	if v := value(t, fams, "quorumlock_held_locks", labels{"class": "job"}); v != 1 {
		t.Errorf("held_locks %v while one lock is held, want 1", v)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "report:daily", time.Second, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	short, err := c.Acquire(ctx, "lease:7", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	<-short.Done() // expires: nobody extends or releases it
	// The loss is signalled first, then observed (an observer must not
	// delay the signal): wait for the event.
	await(t, "the lease's loss event", func() bool {
		return value(t, families(t, reg), "quorumlock_losses_total", labels{"class": "lease", "reason": "expired"}) == 1
	})
	obs.FencedRejection("status:billing")
	if err := c.Close(); err != nil { // the node events of the last round are in
		t.Fatal(err)
	}

	fams = families(t, reg)
	for _, w := range []struct {
		name string
		l    labels
		want float64
	}{
		{"quorumlock_acquisitions_total", labels{"class": "job", "result": "acquired"}, 2},
		{"quorumlock_acquisitions_total", labels{"class": "job", "result": "contended"}, 1},
		{"quorumlock_acquisitions_total", labels{"class": "report", "result": "acquired"}, 1},
		{"quorumlock_acquisitions_total", labels{"class": "lease", "result": "acquired"}, 1},
		{"quorumlock_acquire_duration_seconds", labels{"class": "job"}, 3},
		{"quorumlock_acquire_attempts", labels{"class": "job"}, 3},
		{"quorumlock_releases_total", labels{"class": "job"}, 2},
		{"quorumlock_releases_total", labels{"class": "report"}, 1},
		{"quorumlock_losses_total", labels{"class": "lease", "reason": "expired"}, 1},
		{"quorumlock_fenced_rejections_total", labels{"class": "status"}, 1},
		{"quorumlock_waiters", nil, 0},
		{"quorumlock_held_locks", nil, 0},
		{"quorumlock_kept_locks", nil, 0},
		{"quorumlock_node_errors_total", nil, 0},
	} {
		if got := value(t, fams, w.name, w.l); got != w.want {
			t.Errorf("%s%v = %v, want %v", w.name, w.l, got, w.want)
		}
	}
	// The try and the waiter's first attempt lose; the waiter may lose
	// once more when a wake-up comes before the release reached a
	// majority (a subscription that came up late, under load).
	contended := value(t, fams, "quorumlock_contended_attempts_total", labels{"class": "job", "reason": "contended"})
	if contended < 2 || contended > 4 {
		t.Errorf("contended attempts %v, want 2 (the try, the waiter's first) or a wake-up or two more", contended)
	}
	// 3 nodes × the acquire rounds: the holder, the waiter's winning one
	// (the holder's release runs it: it hands the key over to its client's
	// waiter), Do, the lease, and every lost one (a wake-up can add a round
	// that ends otherwise, under load); and 2 release rounds, the waiter's
	// and Do's (the undo of lost attempts adds requests to the nodes that
	// did not answer "held").
	if got, least := value(t, fams, "quorumlock_node_request_duration_seconds", labels{"op": "acquire"}), 3*(4+contended); got < least || int(got)%3 != 0 {
		t.Errorf("node acquire requests %v, want at least %v, 3 per round", got, least)
	}
	if got := value(t, fams, "quorumlock_node_request_duration_seconds", labels{"op": "release"}); got < 2*3 {
		t.Errorf("node release requests %v, want at least 6", got)
	}
	if got := value(t, fams, "quorumlock_kept_locks", nil); got != 0 {
		t.Errorf("kept_locks %v after Do, want 0", got)
	}
}

// Kept locks: the gauge follows KeepAlive and its stop.
func TestKeptGauge(t *testing.T) {
	reg := prometheus.NewRegistry()
	obs, _ := promlock.New(reg)
	_, c := realClient(t, 3, redlock.WithObserver(obs))
	ctx := t.Context()
	l, err := c.Acquire(ctx, "job:k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	stop := l.KeepAlive()
	if v := value(t, families(t, reg), "quorumlock_kept_locks", labels{"class": "job"}); v != 1 {
		t.Errorf("kept_locks %v under KeepAlive, want 1", v)
	}
	await(t, "an extension", func() bool {
		return value(t, families(t, reg), "quorumlock_extensions_total", labels{"result": "ok"}) > 0
	})
	stop()
	if v := value(t, families(t, reg), "quorumlock_kept_locks", labels{"class": "job"}); v != 0 {
		t.Errorf("kept_locks %v after stop, want 0", v)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// 100,000 distinct keys make a bounded number of series: one class with the
// default function for "job:<n>", and at most 100 classes plus "other" for
// keys without a ':'.
func TestCardinalityBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		key     func(i int) string
		classes int
	}{
		{"job:N", func(i int) string { return fmt.Sprintf("job:%d", i) }, 1},
		{"N", func(i int) string { return fmt.Sprint(i) }, 101},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			obs, err := promlock.New(reg)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 100_000 {
				k := tc.key(i)
				obs.Observe(observe.Event{Kind: observe.Attempt, Key: k, Attempts: 1})
				obs.Observe(observe.Event{Kind: observe.Acquired, Key: k, Attempts: 1, Latency: time.Millisecond})
				obs.Observe(observe.Event{Kind: observe.Released, Key: k})
			}
			fams := families(t, reg)
			// Per class: acquisitions, duration, attempts, waiters, held, releases.
			if got, want := series(fams), 6*tc.classes; got != want {
				t.Errorf("%d series after 100,000 keys, want %d (%d classes)", got, want, tc.classes)
			}
			if got := value(t, fams, "quorumlock_acquisitions_total", nil); got != 100_000 {
				t.Errorf("acquisitions %v, want 100000 (none lost to the bound)", got)
			}
		})
	}
}

func TestClassFunction(t *testing.T) {
	reg := prometheus.NewRegistry()
	obs, err := promlock.New(reg, promlock.WithClass(func(string) string { return "all" }), promlock.WithMaxClasses(1))
	if err != nil {
		t.Fatal(err)
	}
	obs.Observe(observe.Event{Kind: observe.Released, Key: "a:b"})
	obs.FencedRejection("x")
	fams := families(t, reg)
	if v := value(t, fams, "quorumlock_releases_total", labels{"class": "all"}); v != 1 {
		t.Errorf("releases{class=all} %v, want 1", v)
	}
	if v := value(t, fams, "quorumlock_fenced_rejections_total", labels{"class": "all"}); v != 1 {
		t.Errorf("fenced_rejections{class=all} %v, want 1", v)
	}
}

func TestBadInput(t *testing.T) {
	if _, err := promlock.New(nil); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("New(nil): %v, want ErrInvalidArgument", err)
	}
	if _, err := promlock.New(prometheus.NewRegistry(), promlock.WithMaxClasses(-1)); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("WithMaxClasses(-1): %v, want ErrInvalidArgument", err)
	}
	reg := prometheus.NewRegistry()
	if _, err := promlock.New(reg); err != nil {
		t.Fatal(err)
	}
	var already prometheus.AlreadyRegisteredError
	if _, err := promlock.New(reg); !errors.As(err, &already) {
		t.Errorf("New twice on one registry: %v, want prometheus.AlreadyRegisteredError", err)
	}
}

// await polls cond; the bound is a hang guard, not a speed requirement.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// quorumlock_takeovers_total counts acquisitions that took over from a
// holder that never released: 0 after a release and a new acquisition, 1
// after taking over a lock whose client closed without releasing it.
func TestTakeoverCounter(t *testing.T) {
	reg := prometheus.NewRegistry()
	obs, err := promlock.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	cl, c := realClient(t, 3, redlock.WithObserver(obs),
		redlock.WithRetry(retry.Constant(600, 100*time.Millisecond, 20*time.Millisecond)))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	takeovers := func() float64 {
		return value(t, families(t, reg), "quorumlock_takeovers_total", labels{"class": "lease"})
	}
	for range 2 { // acquire, release, acquire again: no takeover
		l, err := c.Acquire(ctx, "lease:9", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if v := takeovers(); v != 0 {
		t.Fatalf("takeovers %v after release and acquire, want 0", v)
	}
	var nodes []node.Node
	for _, rc := range cl.Clients() {
		nodes = append(nodes, redisnode.New(rc))
	}
	crashed, err := redlock.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crashed.TryAcquire(ctx, "lease:9", time.Second); err != nil {
		t.Fatal(err)
	}
	_ = crashed.Close() // no release: the lock expires
	l, err := c.Acquire(ctx, "lease:9", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.TookOver(); !ok {
		t.Fatal("TookOver false after the holder's client closed without release")
	}
	if v := takeovers(); v != 1 {
		t.Errorf("takeovers %v after taking over an expired lock, want 1", v)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

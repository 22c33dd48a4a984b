package tick_test

import (
	"context"
	"errors"
	"github.com/quorumlock/quorumlock/internal/wire"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/tick"
)

// TestRecordsExpire: many ticks of a short period leave nothing behind on
// the nodes once their retention is over: no record, claim, fence counter
// or trail grows with the number of ticks.
func TestRecordsExpire(t *testing.T) {
	n := 10000
	if testing.Short() {
		n = 1000
	}
	// The recovery period: the claim TTL, the shortest the client accepts.
	cs, rcs := replicas(t, 3, 1, redlock.WithFenceRetention(time.Second), redlock.WithRecoveryPeriod(tick.DefaultClaimTTL))
	ctx, job := ctxFor(t, 10*time.Minute), jobName(t)
	const short = time.Millisecond
	base := time.Unix(1_800_000_000, 0)
	ran := 0
	for k := range n {
		res, err := tick.Run(ctx, cs[0], job, tick.Every(short), func(context.Context) error { return nil },
			clockAt(base.Add(time.Duration(k)*short)), tick.WithRetention(tick.MinRetention))
		if err != nil {
			t.Fatal(err)
		}
		if res.Ran {
			ran++
		}
	}
	if ran != n {
		t.Fatalf("%d of %d distinct ticks ran", ran, n)
	}
	waitEmpty(t, ctx, rcs)
}

// waitEmpty waits until no node holds a key (hang guard: ctx).
func waitEmpty(t *testing.T, ctx context.Context, rcs []*redis.Client) {
	t.Helper()
	for {
		total := int64(0)
		for _, rc := range rcs {
			n, err := rc.DBSize(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			total += n - rc.Exists(ctx, wire.NodeRecordKey).Val() // the server's standing record stays
		}
		if total == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the nodes still hold %d keys", total)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestBadInput: each bad input gets its typed error, the job does not run,
// and nothing is sent to the nodes.
func TestBadInput(t *testing.T) {
	cs, rcs := replicas(t, 3, 1)
	ctx := ctxFor(t, 5*time.Minute)
	cases := []struct {
		name string
		job  string
		s    tick.Schedule
		opts []tick.Option
		want error
	}{
		{"zero period", "j", tick.Every(0), nil, tick.ErrBadPeriod},
		{"negative period", "j", tick.Every(-time.Minute), nil, tick.ErrBadPeriod},
		{"empty tick", "j", tick.Named(""), nil, tick.ErrBadTick},
		{"tick with a space", "j", tick.Named("2026-01-02 15:04"), nil, tick.ErrBadTick},
		{"tick with a brace", "j", tick.Named("{x}"), nil, tick.ErrBadTick},
		{"tick with a control character", "j", tick.Named("a\nb"), nil, tick.ErrBadTick},
		{"tick not valid UTF-8", "j", tick.Named("a\xffb"), nil, tick.ErrBadTick},
		{"zero time", "j", tick.At(time.Time{}), nil, tick.ErrBadTick},
		{"zero schedule", "j", tick.Schedule{}, nil, tick.ErrBadTick},
		{"empty job", "", tick.Every(time.Hour), nil, tick.ErrBadJob},
		{"job with @", "a@b", tick.Every(time.Hour), nil, tick.ErrBadJob},
		{"retention under a period", "j", tick.Every(time.Hour), []tick.Option{tick.WithRetention(time.Minute)}, tick.ErrBadOption},
		{"negative claim ttl", "j", tick.Every(time.Hour), []tick.Option{tick.WithClaimTTL(-1)}, tick.ErrBadOption},
		{"unknown mode", "j", tick.Every(time.Hour), []tick.Option{tick.WithMode(7)}, tick.ErrBadOption},
		{"nil option", "j", tick.Every(time.Hour), []tick.Option{nil}, tick.ErrBadOption},
	}
	for _, tc := range cases {
		ran := false
		_, err := tick.Run(ctx, cs[0], tc.job, tc.s, func(context.Context) error { ran = true; return nil }, tc.opts...)
		if !errors.Is(err, tc.want) || !errors.Is(err, redlock.ErrInvalidArgument) || ran {
			t.Errorf("%s: err %v (want %v), ran %v", tc.name, err, tc.want, ran)
		}
	}
	if _, err := tick.Run(ctx, cs[0], "j", tick.Every(time.Hour), nil); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("nil fn: %v", err)
	}
	for _, rc := range rcs {
		// (The server's standing record is not the tick's.)
		if n, err := rc.DBSize(ctx).Result(); err != nil || n-rc.Exists(ctx, wire.NodeRecordKey).Val() != 0 {
			t.Errorf("a node holds %d keys (%v) after bad input", n, err)
		}
	}
}

// TestDescribeNamesTheTickRecords: the keys of a tick, listed by
// Client.Locks, are described with job, tick, state, runner and fence.
func TestDescribeNamesTheTickRecords(t *testing.T) {
	c, err := redlock.NewLocal(redlock.WithOwner("replica-a"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxFor(t, time.Minute)
	if _, err := tick.Run(ctx, c, "report", tick.Named("t1"), func(context.Context) error { return errors.New("disk full") }); err == nil {
		t.Fatal("the job's error was not returned")
	}
	var got []string
	for info, err := range c.Locks(ctx, "tick:*") {
		if err != nil {
			t.Fatal(err)
		}
		d, ok := tick.Describe(info.Key, info.Owner)
		if !ok {
			t.Fatalf("%s not described", info.Key)
		}
		got = append(got, d)
	}
	want := []string{"job report tick t1: claimed by replica-a, fence ", "job report tick t1: done by replica-a, fence "}
	if len(got) != 2 {
		t.Fatalf("described %q", got)
	}
	joined := strings.Join(got, "\n")
	for _, w := range want {
		if !strings.Contains(joined, w) {
			t.Fatalf("described %q, want %q", got, w)
		}
	}
	if !strings.Contains(joined, "outcome disk full") {
		t.Fatalf("no outcome in %q", got)
	}
	if _, ok := tick.Describe("cron:penalties", "x"); ok {
		t.Fatal("a plain key described as a tick's")
	}
}

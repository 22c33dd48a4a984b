package tick_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/tick"
)

// FuzzNamedTick: a tick label from outside (a crontab's --tick) is either
// refused with ErrBadTick before anything runs, or names the tick as given;
// Describe reads back every key a tick leaves.
func FuzzNamedTick(f *testing.F) {
	for _, s := range []string{"2026-01-02T03:04", "", "a b", "{x}", "t@1", "a#done", "\xff", strings.Repeat("x", 200)} {
		f.Add(s)
	}
	c, err := redlock.NewLocal(redlock.WithOwner("fuzz"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = c.Close() })
	f.Fuzz(func(t *testing.T, label string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ran := false
		res, err := tick.Run(ctx, c, "fuzz", tick.Named(label), func(context.Context) error { ran = true; return nil },
			tick.WithRetention(tick.MinRetention))
		if err != nil {
			if !errors.Is(err, tick.ErrBadTick) || ran {
				t.Fatalf("label %q: %v (ran %v)", label, err, ran)
			}
			return
		}
		if res.Tick != label || (res.Status != tick.Ran && res.Status != tick.Done) {
			t.Fatalf("label %q: %s", label, res)
		}
		for _, suffix := range []string{"", "#claimed", "#done"} {
			if d, ok := tick.Describe("tick:fuzz@"+label+suffix, `{"r":"fuzz","f":1}`); !ok || !strings.Contains(d, "tick "+label+":") {
				t.Fatalf("Describe of %q%s: %q, %v", label, suffix, d, ok)
			}
		}
	})
}

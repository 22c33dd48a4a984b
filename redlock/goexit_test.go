package redlock_test

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestDoReleasesWhenFnExitsTheGoroutine: a fn that ends its goroutine
// without returning (runtime.Goexit, as t.FailNow does) still has its lock
// released, not kept alive by the watchdog for as long as the client lives.
func TestDoReleasesWhenFnExitsTheGoroutine(t *testing.T) {
	t.Parallel()
	_, c := start(t, 3)
	ctx := ctxFor(t)
	for _, name := range []string{"Do", "TryDo"} {
		key := uniqueKey(t)
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			fn := func(context.Context) error { runtime.Goexit(); return nil }
			if name == "Do" {
				_ = c.Do(ctx, key, 10*time.Second, fn)
			} else {
				_, _ = c.TryDo(ctx, key, 10*time.Second, fn)
			}
		}()
		<-exited
		info, err := c.Inspect(ctx, key)
		if err != nil {
			t.Fatalf("%s: inspect: %v", name, err)
		}
		if info.Held {
			t.Errorf("%s: the lock is still held after fn's goroutine exited", name)
		}
	}
}

package tick_test

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/tick"
)

// TestPanickingJobIsRecordedAndRepanics: a job that panics is recorded as
// done with the panic as its outcome, the claim is released, and the panic
// goes on to the caller; the next replica finds the tick done.
func TestPanickingJobIsRecordedAndRepanics(t *testing.T) {
	c, err := redlock.NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxFor(t, time.Minute)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want the job's panic", r)
			}
		}()
		_, _ = tick.Run(ctx, c, "job", tick.Named("t"), func(context.Context) error { panic("boom") })
		t.Fatal("Run returned after the job panicked")
	}()
	res, err := tick.Run(ctx, c, "job", tick.Named("t"), func(context.Context) error { return nil })
	if err != nil || res.Status != tick.Done || res.Record.Outcome != "panic: boom" {
		t.Fatalf("after the panic: %s, %v", res, err)
	}
	if info, err := c.Inspect(ctx, "tick:job@t"); err != nil || info.Held {
		t.Fatalf("the claim is still held (%v)", err)
	}
}

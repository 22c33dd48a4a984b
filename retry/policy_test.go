package retry

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func drain(t *testing.T, b Delays) []time.Duration {
	t.Helper()
	var out []time.Duration
	for i := 0; i < 1000; i++ {
		d, ok := b.Next()
		if !ok {
			return out
		}
		out = append(out, d)
	}
	t.Fatal("backoff never stopped")
	return nil
}

func TestConstantCountAndJitterBounds(t *testing.T) {
	p := Constant(10, 200*time.Millisecond, 100*time.Millisecond)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	ds := drain(t, p.Delays())
	if len(ds) != 10 {
		t.Fatalf("retries = %d, want 10", len(ds))
	}
	distinct := map[time.Duration]bool{}
	for _, d := range ds {
		if d < 200*time.Millisecond || d >= 300*time.Millisecond {
			t.Fatalf("delay %s outside [200ms, 300ms)", d)
		}
		distinct[d] = true
	}
	if len(distinct) < 2 {
		t.Fatalf("jitter produced the same delay 10 times: %v", ds)
	}
}

func TestConstantWithoutJitterIsExact(t *testing.T) {
	ds := drain(t, Constant(3, 5*time.Millisecond, 0).Delays())
	if len(ds) != 3 || ds[0] != 5*time.Millisecond || ds[2] != 5*time.Millisecond {
		t.Fatalf("got %v", ds)
	}
}

func TestEachBackOffHasItsOwnState(t *testing.T) {
	p := Constant(2, time.Millisecond, 0)
	a, b := p.Delays(), p.Delays()
	drain(t, a)
	if got := len(drain(t, b)); got != 2 {
		t.Fatalf("second backoff had %d retries left, want 2 (state shared?)", got)
	}
}

func TestNever(t *testing.T) {
	if ds := drain(t, Never().Delays()); len(ds) != 0 {
		t.Fatalf("Never retried: %v", ds)
	}
	if err := Never().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestExponentialGrowsAndCaps(t *testing.T) {
	p := Exponential(10*time.Millisecond, 80*time.Millisecond, 8)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	ds := drain(t, p.Delays())
	if len(ds) != 8 {
		t.Fatalf("retries = %d, want 8", len(ds))
	}
	if ds[0] < 5*time.Millisecond || ds[0] > 15*time.Millisecond {
		t.Fatalf("first delay %s not within 50%% of 10ms", ds[0])
	}
	for _, d := range ds {
		if d > 80*time.Millisecond {
			t.Fatalf("delay %s exceeds the max 80ms", d)
		}
	}
	if ds[len(ds)-1] < 40*time.Millisecond {
		t.Fatalf("last delay %s did not grow toward the cap", ds[len(ds)-1])
	}
}

// No delay of Exponential exceeds its max, jitter included. backoff/v4's
// jitter is not seeded, so this draws many runs: each delay at the cap had
// an even chance to pass it before the fix, so 2000 runs cannot all miss.
func TestExponentialNeverExceedsMax(t *testing.T) {
	for _, c := range []struct{ initial, max time.Duration }{
		{100 * time.Millisecond, 300 * time.Millisecond},
		{300 * time.Millisecond, 300 * time.Millisecond}, // the first delay is at the cap
		{time.Millisecond, 3 * time.Millisecond},
		{time.Nanosecond, 2 * time.Nanosecond},
	} {
		p := Exponential(c.initial, c.max, 8)
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		var top time.Duration
		for range 2000 {
			for _, d := range drain(t, p.Delays()) {
				if d > c.max {
					t.Fatalf("%s: delay %s exceeds the max %s", p, d, c.max)
				}
				if d < c.initial/2 {
					t.Fatalf("%s: delay %s under half the initial delay", p, d)
				}
				top = max(top, d)
			}
		}
		if top < c.max*9/10 {
			t.Errorf("%s: no delay in 16000 came within 10%% of the max (largest %s)", p, top)
		}
	}
}

// The jitter's extremes, drawn on purpose: the largest draw stays within
// max, the smallest is half the interval, at every step of the doubling.
func TestExponentialJitterExtremes(t *testing.T) {
	p := Exponential(100*time.Millisecond, 300*time.Millisecond, 5).(exponentialPolicy)
	for _, c := range []struct {
		name string
		draw func(time.Duration) time.Duration
		want []time.Duration
	}{
		{"largest", func(n time.Duration) time.Duration { return n - 1 }, []time.Duration{150, 300, 300, 300, 300}},
		{"smallest", func(time.Duration) time.Duration { return 0 }, []time.Duration{50, 100, 150, 150, 150}},
	} {
		run := p.Delays().(*exponentialRun)
		run.draw = c.draw
		ds := drain(t, run)
		for i := range c.want {
			c.want[i] *= time.Millisecond
		}
		if fmt.Sprint(ds) != fmt.Sprint(c.want) {
			t.Errorf("%s draws: delays %v, want %v", c.name, ds, c.want)
		}
	}
}

func TestInvalidPolicies(t *testing.T) {
	for _, p := range []Policy{
		Constant(-1, time.Millisecond, 0),
		Constant(1, -time.Millisecond, 0),
		Constant(1, time.Millisecond, -1),
		Exponential(0, time.Second, 3),
		Exponential(time.Second, time.Millisecond, 3),
		Exponential(time.Millisecond, time.Second, -2),
	} {
		if err := p.Validate(); !errors.Is(err, ErrInvalidPolicy) {
			t.Errorf("%s: Validate() = %v, want ErrInvalidPolicy", p, err)
		}
	}
}

// countdown is a policy of the caller's own, written against this
// package's interface alone.
type countdown int

func (c countdown) Delays() Delays  { return &countdownRun{left: int(c)} }
func (c countdown) Validate() error { return nil }
func (c countdown) String() string  { return "countdown" }
func (r *countdownRun) Next() (time.Duration, bool) {
	if r.left == 0 {
		return 0, false
	}
	r.left--
	return time.Duration(r.left) * time.Millisecond, true
}

type countdownRun struct{ left int }

func TestOwnPolicyNeedsNoOtherModule(t *testing.T) {
	var p Policy = countdown(3)
	if ds := drain(t, p.Delays()); len(ds) != 3 || ds[0] != 2*time.Millisecond {
		t.Fatalf("delays %v, want 2ms, 1ms, 0", ds)
	}
}

func TestNoRetryRunCostsNoAllocation(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _, _ = Never().Delays().Next() }); n != 0 {
		t.Fatalf("Never().Delays() allocates %v times, want 0", n)
	}
}

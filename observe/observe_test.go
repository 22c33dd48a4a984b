package observe_test

import (
	"testing"

	"github.com/quorumlock/quorumlock/observe"
)

func TestKindNamesAreMetricLabels(t *testing.T) {
	want := map[observe.Kind]string{
		observe.Attempt: "attempt", observe.Acquired: "acquired", observe.Contended: "contended",
		observe.NotAcquired: "not_acquired", observe.Extended: "extended", observe.Released: "released",
		observe.Lost: "lost", observe.Kept: "kept", observe.Node: "node", 0: "unknown", 99: "unknown",
	}
	for k, s := range want {
		if got := k.String(); got != s {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, s)
		}
	}
}

func TestFuncObserves(t *testing.T) {
	var got []observe.Event
	var o observe.Observer = observe.Func(func(e observe.Event) { got = append(got, e) })
	o.Observe(observe.Event{Kind: observe.Lost, Key: "k", Reason: "expired"})
	if len(got) != 1 || got[0].Kind != observe.Lost || got[0].Key != "k" {
		t.Fatalf("Func passed %+v, want the one Lost event of k", got)
	}
}

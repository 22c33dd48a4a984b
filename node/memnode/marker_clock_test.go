package memnode_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
)

// A node whose clock steps back keeps its marker old: from then on it
// reports the key's marker at least twice its keep old (past any recovery
// period), to Inspect and to acquires, and the age grows from there, also
// once the clock passed the marker's old times again; its touch is recent.
func TestMemoryMarkerStaysOldWhenClockStepsBack(t *testing.T) {
	for _, step := range []time.Duration{5 * time.Second, time.Hour} {
		t.Run(step.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const keep = 10 * time.Second
				ctx := t.Context()
				m := memnode.New("m")
				acquire := func(token string) node.AcquireReply {
					t.Helper()
					r, err := m.Acquire(ctx, node.AcquireArgs{Name: "lock:{k}", Token: token, TTL: time.Second,
						Retention: keep, MarkerRetention: keep, At: time.Now()})
					if err != nil || !r.DataAgeKnown {
						t.Fatalf("acquire: %+v, %v", r, err)
					}
					return r
				}
				acquire("a")
				time.Sleep(2 * time.Second)
				m.SetClockOffset(-step)
				h, err := m.Inspect(ctx, "lock:{k}")
				if err != nil || !h.DataAgeKnown || h.DataAge < 2*keep {
					t.Fatalf("inspect after the clock stepped back %s: %+v, %v; want an age of at least %s", step, h, err, 2*keep)
				}
				r := acquire("b")
				if r.DataAge < 2*keep || !r.DataTouchedKnown || r.DataTouchedAge != 0 {
					t.Fatalf("acquire after the clock stepped back %s: age %s touched %s ago; want at least %s, just touched",
						step, r.DataAge, r.DataTouchedAge, 2*keep)
				}
				time.Sleep(6 * time.Second) // past the marker's old times for a 5s step
				if r2 := acquire("c"); r2.DataAge < r.DataAge+6*time.Second {
					t.Fatalf("acquire 6s later: age %s, want at least %s", r2.DataAge, r.DataAge+6*time.Second)
				}
			})
		})
	}
}

package memnode_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
)

// A learning node counts its period by its own clock in steps of at most
// node.LearnStep: a clock that steps forward by an hour moves it on by a
// step, one that steps back by nothing, and while it is asked more often
// than a step it learns at the clock's rate. A voting node stays voting
// whatever its clock does, and a wipe makes it learn again.
func TestMemoryStandingCountsStepsNotClocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const period = 10 * time.Second
		ctx := t.Context()
		m := memnode.New("m")
		learn := func() node.Standing {
			t.Helper()
			s, err := m.Learn(ctx, node.LearnArgs{Name: "lock:{k}", Recovery: period})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		if s := learn(); s.Voting || s.Learned != 0 {
			t.Fatalf("a new node = %+v, want learning from zero", s)
		}
		m.SetClockOffset(time.Hour) // steps forward
		if s := learn(); s.Voting || s.Learned != node.LearnStep {
			t.Fatalf("after a step forward of an hour = %+v, want learned one step", s)
		}
		m.SetClockOffset(0) // steps back by the hour
		if s := learn(); s.Voting || s.Learned != node.LearnStep {
			t.Fatalf("after a step back = %+v, want unchanged", s)
		}
		for range 17 { // 8.5 s asked every half second
			time.Sleep(500 * time.Millisecond)
			learn()
		}
		if s := learn(); s.Voting || s.Learned != node.LearnStep+8500*time.Millisecond {
			t.Fatalf("after 8.5 s = %+v, want learned 9.5 s", s)
		}
		time.Sleep(500 * time.Millisecond)
		if s := learn(); !s.Voting {
			t.Fatalf("after the period = %+v, want voting", s)
		}
		m.SetClockOffset(-time.Hour)
		if s := learn(); !s.Voting {
			t.Fatalf("a voting node whose clock stepped back = %+v, want voting", s)
		}
		m.SetDown(true, true)
		m.SetDown(false, false)
		if s := learn(); s.Voting {
			t.Fatalf("after a wipe = %+v, want learning", s)
		}
	})
}

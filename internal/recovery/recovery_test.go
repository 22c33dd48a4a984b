package recovery

import (
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/node"
)

var (
	voter   = node.Standing{Known: true, Voting: true}
	learner = node.Standing{Known: true, ID: "1", Learned: 2 * time.Second}
	told    = node.Standing{Known: true, ID: "2", Learned: 2 * time.Second, Hold: time.Hour}
)

// A judge counts voters' yes votes, a learner's only in a new deployment
// (every node answered, none a voter or told of a hold), and says who sat
// out for how long, by the period or the hold.
func TestJudgeCountsVotersAndANewDeploymentOnly(t *testing.T) {
	for _, c := range []struct {
		name      string
		answers   []node.Standing
		yes       []bool
		granted   int
		out       int
		newDeploy bool
		left      time.Duration
	}{
		{"voters", []node.Standing{voter, voter, voter}, []bool{true, true, false}, 2, 0, false, 0},
		{"a learner beside voters sits out", []node.Standing{learner, voter, voter}, []bool{true, true, false}, 1, 1, false, 8 * time.Second},
		{"a new deployment counts", []node.Standing{learner, learner, learner}, []bool{true, true, true}, 3, 0, true, 0},
		{"learners told of a hold are no new deployment", []node.Standing{learner, told, learner}, []bool{true, true, true}, 0, 3, false, time.Hour - 2*time.Second},
	} {
		j := NewJudge(10*time.Second, len(c.answers), new(Hold))
		yes := 0
		for i, s := range c.answers {
			j.Note(i, s, c.yes[i])
			if c.yes[i] {
				yes++
			}
		}
		v, _ := j.Count(quorum.Votes{N: len(c.answers), Refused: len(c.answers) - yes}, yes)
		if v.Granted != c.granted || v.Out != c.out || j.NewDeployment() != c.newDeploy {
			t.Errorf("%s: granted %d, out %d, new deployment %v; want %d, %d, %v", c.name, v.Granted, v.Out, j.NewDeployment(), c.granted, c.out, c.newDeploy)
		}
		if c.out > 0 {
			out, left := j.SittingOut()
			if len(out) != c.out || left != c.left {
				t.Errorf("%s: %d sit out for up to %s, want %d for %s", c.name, len(out), left, c.out, c.left)
			}
		}
	}
	var off *Judge // recovery off: every yes counts
	off.Note(0, learner, true)
	if v, _ := off.Count(quorum.Votes{N: 3}, 2); v.Granted != 2 || off.NewDeployment() || len(off.Learners()) != 0 {
		t.Errorf("a nil judge: %+v", v)
	}
}

// The longest hold only grows, whatever the order of concurrent raises.
func TestHoldOnlyGrows(t *testing.T) {
	var h Hold
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() { h.Raise(time.Duration(i) * time.Second) })
	}
	wg.Wait()
	h.Raise(time.Second)
	if h.Get() != 99*time.Second {
		t.Fatalf("hold %s, want 99s", h.Get())
	}
}

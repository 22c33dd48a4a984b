package redlock

import (
	"errors"
	"strings"
	"testing"
)

// The tally's verdicts at the edges of a 5-node quorum (q = 3): two
// failures or no's can be spared, three cannot.
func TestTallyVerdicts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                                string
		yes, no, failed                     int
		won, beyond, unreachable, missesAny bool
	}{
		{name: "nothing yet"},
		{name: "majority yes", yes: 3, won: true},
		{name: "two spared", yes: 1, no: 1, failed: 1},
		{name: "no's and failures add up", no: 2, failed: 1, beyond: true},
		{name: "failures alone", failed: 3, beyond: true, unreachable: true, missesAny: true},
		{name: "no's alone are not unreachable", no: 3, beyond: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := tally{n: 5, q: 3, yes: tc.yes, no: tc.no}
			for range tc.failed {
				tl.fail(&NodeError{Node: "n", Op: "acquire", Err: errNoAnswer})
			}
			if tl.won() != tc.won || tl.beyondReach() != tc.beyond || tl.unreachable() != tc.unreachable || tl.missesAMajority() != tc.missesAny {
				t.Fatalf("won %v beyondReach %v unreachable %v missesAMajority %v, want %v %v %v %v",
					tl.won(), tl.beyondReach(), tl.unreachable(), tl.missesAMajority(), tc.won, tc.beyond, tc.unreachable, tc.missesAny)
			}
			if tl.decided() != (tc.won || tc.beyond) {
				t.Fatalf("decided %v", tl.decided())
			}
		})
	}
}

// A yes that does not count is a failure of its node, with the reason, and
// the tally's error wraps ErrQuorumUnreachable and every node's failure.
func TestTallyErrorWrapsEveryNodeFailure(t *testing.T) {
	t.Parallel()
	tl := tally{n: 3, q: 2}
	tl.fail(&NodeError{Node: "a", Op: "acquire", Err: errNoAnswer})
	tl.notCounted("b", "acquire", errUnidentified("b"))
	err := tl.err(`acquire "k"`)
	if !errors.Is(err, ErrQuorumUnreachable) || !errors.Is(err, errNoAnswer) {
		t.Fatalf("err = %v: want ErrQuorumUnreachable wrapping the node failures", err)
	}
	var ne *NodeError
	if !errors.As(err, &ne) || ne.Node != "a" {
		t.Fatalf("errors.As NodeError = %+v", ne)
	}
	if !strings.Contains(err.Error(), `acquire "k": 2 of 3 nodes failed`) || !strings.Contains(err.Error(), "node b: acquire") {
		t.Fatalf("err = %q", err)
	}
	if !tl.unreachable() {
		t.Fatal("two of three nodes failed (one yes not counted): want unreachable")
	}
}

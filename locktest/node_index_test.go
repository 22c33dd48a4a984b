package locktest_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/locktest"
)

// TestNodeOutOfRangeFailsTheTest: asking a quorum for a node it does not
// have fails the test (here a Session, which records it) and returns nil,
// instead of panicking with an index out of range.
func TestNodeOutOfRangeFailsTheTest(t *testing.T) {
	var out bytes.Buffer
	s := locktest.NewSession(&out)
	defer s.Close()
	q := locktest.NewQuorum(s, 3)
	for _, i := range []int{-1, 3} {
		if n := q.Node(i); n != nil {
			t.Errorf("Node(%d) = %v, want nil", i, n)
		}
	}
	if !s.Failed() || !strings.Contains(out.String(), "node") {
		t.Errorf("Node out of range did not fail the session: %q", out.String())
	}
	if q.Node(0) == nil {
		t.Error("Node(0) = nil")
	}
}

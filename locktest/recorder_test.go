package locktest_test

import (
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/locktest"
)

func kinds(r *locktest.Recorder) []string {
	var ks []string
	for _, v := range r.Violations() {
		ks = append(ks, v.Kind)
	}
	return ks
}

func TestRecorderFindsOverlap(t *testing.T) {
	r := locktest.NewRecorder()
	leaveA := r.Enter("a", "job", 1)
	leaveB := r.Enter("b", "job", 2)
	leaveB()
	leaveA()
	if got := kinds(r); len(got) != 1 || got[0] != "overlap" {
		t.Fatalf("violations %v, want one overlap", got)
	}
	if !strings.Contains(r.Report(), "b (fence 2) entered job while a (fence 1) was inside") {
		t.Fatalf("report lacks the overlap:\n%s", r.Report())
	}
}

func TestRecorderFindsStaleWriteAndDoneTwice(t *testing.T) {
	r := locktest.NewRecorder()
	r.Wrote("b", "status", 2)
	r.Wrote("a", "status", 1)
	r.Did("a", "task-1")
	r.Did("b", "task-1")
	if got := strings.Join(kinds(r), ","); got != "stale write,done twice" {
		t.Fatalf("violations %s", got)
	}
}

// Sections one after another, nested entries of one holder, repeated writes
// with one fence and growing fences are all fine.
func TestRecorderAcceptsCorrectHistory(t *testing.T) {
	r := locktest.NewRecorder()
	leave := r.Enter("a", "job", 1)
	inner := r.Enter("a", "job", 1)
	r.Wrote("a", "status", 1)
	r.Wrote("a", "status", 1)
	inner()
	leave()
	leave() // a second call changes nothing
	defer r.Enter("b", "job", 2)()
	r.Wrote("b", "status", 2)
	r.Did("b", "task-1")
	if vs := r.Violations(); len(vs) != 0 {
		t.Fatalf("violations in a correct history: %v\n%s", vs, r.Timeline())
	}
	r.Check(t)
}

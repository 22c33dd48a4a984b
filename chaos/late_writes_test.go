package chaos

import "testing"

// A GC-paused holder's write after its lock's end must be refused when a
// newer holder had touched the resource; one that nobody overtook (the
// others were too slow to acquire during the pause) is safe to accept and
// fails nothing.
func TestLateWritesCountOnlyOvertakenOnes(t *testing.T) {
	ops := []RegOp{
		{Seq: 0, At: 50, Kind: OpWrite, Fence: 7, MaxFence: 9, Accepted: false}, // overtaken, refused
		{Seq: 1, At: 60, Kind: OpWrite, Fence: 7, MaxFence: 9, Accepted: true},  // overtaken, accepted: unsafe
		{Seq: 2, At: 70, Kind: OpWrite, Fence: 7, MaxFence: 7, Accepted: true},  // nobody overtook it
		{Seq: 3, At: 5, Kind: OpWrite, Fence: 7, MaxFence: 9, Accepted: true},   // within the validity
	}
	css := []CS{
		{Fence: 7, End: 100, ValidEnd: 10, GCPaused: true, Steps: []Step{{WriteSeq: 0}, {WriteSeq: 1, Accepted: true}, {WriteSeq: 2, Accepted: true}, {WriteSeq: 3, Accepted: true}, {WriteSeq: -1}}},
		{Fence: 7, End: 100, ValidEnd: 10, Steps: []Step{{WriteSeq: 1, Accepted: true}}}, // not paused
	}
	overtaken, refused, alone := lateWrites(css, ops)
	if overtaken != 2 || refused != 1 || alone != 1 {
		t.Fatalf("overtaken %d, refused %d, alone %d; want 2, 1, 1", overtaken, refused, alone)
	}
}

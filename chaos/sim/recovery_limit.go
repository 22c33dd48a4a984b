package sim

import "time"

// beyondRecovery reports whether an acquisition at `at` may fall within
// the limit the library states for recovery: a majority of the nodes lost
// their data while the nodes that kept the key are silent (paused, down,
// a request lost) or answer more than a moment after the others. The
// simulator does not tell from its history whether the node that kept the
// key was heard, so it counts the rest: a node restarted empty before the
// TTL, and a majority of the nodes back up empty, each within a recovery
// period and a TTL before `at` (a node's marker is written by the first
// acquire after it is back, and is young for the period after that). A
// competitor that hears only such nodes sees a key in its first use.
func beyondRecovery(s *Schedule, empty [][]time.Duration, at time.Duration) bool {
	if s.Recovery == 0 {
		return false
	}
	since := at - s.Recovery - s.TTL
	restarted := false
	for _, f := range s.Faults {
		if end := f.At + f.For; f.Kind == FaultRestartNow && end >= since && end <= at {
			restarted = true
		}
	}
	if !restarted {
		return false
	}
	young := 0
	for _, backs := range empty {
		for _, b := range backs {
			if b >= since && b <= at {
				young++
				break
			}
		}
	}
	return young >= s.Nodes/2+1
}

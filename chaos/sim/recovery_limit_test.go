package sim

import (
	"testing"
	"time"
)

// An overlap counts as within recovery's stated limit only with a restart
// before the TTL and a majority of the nodes back up empty, each within a
// recovery period and a TTL before it. The case is seed 84918's, from a
// 100,000-schedule run: 3 nodes, all wiped and back at 2.148 s except node
// 0 (crashed until 3 s), node 1 restarted empty at once at 2.713 s and back
// at 3 s; the node that kept the holder's key was not heard, and a
// competitor took nodes 0 and 1 at 3.0066 s.
func TestBeyondRecoveryNeedsAYoungMajorityAndAnEarlyRestart(t *testing.T) {
	ms := func(d float64) time.Duration { return time.Duration(d * float64(time.Second)) }
	s := &Schedule{Nodes: 3, TTL: time.Second, Recovery: time.Second, Faults: []Fault{
		{Kind: FaultRestartNow, Node: 1, At: ms(2.713), For: ms(0.287)},
	}}
	empty := [][]time.Duration{{ms(3)}, {ms(2.148), ms(3)}, {ms(2.148)}}
	at := ms(3.0066)
	if !beyondRecovery(s, empty, at) {
		t.Errorf("seed 84918's overlap is not within the limit")
	}
	cases := []struct {
		name  string
		s     *Schedule
		empty [][]time.Duration
		at    time.Duration
	}{
		{"recovery off", &Schedule{Nodes: 3, TTL: time.Second, Faults: s.Faults}, empty, at},
		{"no restart before the TTL", &Schedule{Nodes: 3, TTL: time.Second, Recovery: time.Second}, empty, at},
		{"only a minority back empty", s, [][]time.Duration{nil, {ms(3)}, nil}, at},
		{"back empty too long before", s, [][]time.Duration{{ms(0.5)}, {ms(3)}, {ms(0.5)}}, at},
		{"the restart long before", s, empty, ms(6)},
	}
	for _, c := range cases {
		if beyondRecovery(c.s, c.empty, c.at) {
			t.Errorf("%s: counted as within recovery's limit", c.name)
		}
	}
}

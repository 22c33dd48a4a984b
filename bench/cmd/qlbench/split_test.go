package main

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
	"testing"
)

// fakeSplitter makes n Clients whose single attempt wins when win(i) says
// so, and counts releases.
func fakeSplitter(n int, win func(i int) bool, released *atomic.Int64) *splitter {
	s := &splitter{lib: "fake", c: &contender{lib: "fake"}}
	for i := range n {
		s.tries = append(s.tries, func(context.Context, string) (any, error) {
			if win(i) {
				return i, nil
			}
			return nil, errors.New("not acquired")
		})
		s.c.clients = append(s.c.clients, &locker{release: func(context.Context, any) error { released.Add(1); return nil }})
	}
	return s
}

func TestSplitRoundsCountsNobodyAndCatchesTwoWinners(t *testing.T) {
	ctx := context.Background()
	var released atomic.Int64

	st, err := splitRounds(ctx, fakeSplitter(4, func(i int) bool { return i == 2 }, &released), "k", 0, 10)
	if err != nil || st.rounds != 10 || st.nobody != 0 || st.attempts.N != 40 || released.Load() != 10 {
		t.Errorf("one winner a round: %+v, %v, %d released; want 10 rounds, nobody 0, 40 attempts, 10 releases", st, err, released.Load())
	}

	st, err = splitRounds(ctx, fakeSplitter(4, func(int) bool { return false }, &released), "k", 0, 7)
	if err != nil || st.rounds != 7 || st.nobody != 7 || st.errSample["not acquired"] != 28 {
		t.Errorf("nobody wins: %+v, %v; want 7 rounds, all nobody, 28 losses counted", st, err)
	}

	released.Store(0)
	_, err = splitRounds(ctx, fakeSplitter(4, func(i int) bool { return i < 2 }, &released), "k", 0, 5)
	if !errors.Is(err, errTwoHolders) || released.Load() != 2 {
		t.Errorf("two winners: err %v, %d released; want errTwoHolders after releasing both", err, released.Load())
	}
}

func TestDropEmpty(t *testing.T) {
	rp := newTestReport()
	p := dropEmpty(panel(rp, "Split", "nobody-frac", "", "", 1, false))
	if len(p.Cases) != 1 || p.Cases[0] != "try/faults=none" || len(p.Series) != 2 || len(p.Series[1].Med) != 1 {
		t.Errorf("dropEmpty: cases %v, series %+v; want only the try case, two series of one value", p.Cases, p.Series)
	}
}

func newTestReport() *harness.Report {
	rp := &harness.Report{}
	rp.Add("Split", "try/faults=none", libQL, harness.Rep{N: 1, Metrics: []harness.Metric{{Unit: "nobody-frac", Value: 0}}})
	rp.Add("Split", "try/faults=none", libRS, harness.Rep{N: 1, Metrics: []harness.Metric{{Unit: "nobody-frac", Value: 0.1}}})
	rp.Add("Split", "acquire/faults=none", libQL, harness.Rep{N: 1, Metrics: []harness.Metric{{Unit: "acq/s", Value: 100}}})
	return rp
}

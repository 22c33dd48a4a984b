package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/quorumlock/quorumlock/internal/lockmetrics"
	"github.com/quorumlock/quorumlock/observe"
)

// demoStats counts what happens to each service's status lock. It is the
// redlock clients' Observer, so acquisitions, waits and extensions are
// counted by the library itself.
type demoStats struct {
	prefix  string                // the status lock key prefix: key = prefix + service
	metrics *lockmetrics.Recorder // --metrics-addr; nil without it

	mu        sync.Mutex
	services  []string
	per       map[string]*serviceStats
	overlaps  []string
	pauseNote string
	pauseOK   bool
	paused    bool
	down      int
	nodeErrs  int
	gaveUp    int // Acquire gave up after its retries
	skipped   int // single attempts that found the lock busy (reconcilers)
}

type serviceStats struct {
	acquired, extended, fenced, overlaps, writes, lost int
	waits                                              []time.Duration
}

func newDemoStats(services []string, prefix string) *demoStats {
	s := &demoStats{prefix: prefix, services: services, per: map[string]*serviceStats{}}
	for _, svc := range services {
		s.per[svc] = &serviceStats{}
	}
	return s
}

// Observe implements observe.Observer.
func (s *demoStats) Observe(e observe.Event) {
	if s.metrics != nil {
		s.metrics.Observe(e) // safe for concurrent use: outside s.mu
	}
	if e.Kind == observe.Node { // one per node per round: keep s.mu out of the hot path
		if e.Err != nil {
			s.mu.Lock()
			s.nodeErrs++
			s.mu.Unlock()
		}
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.per[strings.TrimPrefix(e.Key, s.prefix)]
	if ss == nil {
		return
	}
	switch e.Kind {
	case observe.Acquired:
		ss.acquired++
		ss.waits = append(ss.waits, e.Latency)
	case observe.Extended:
		ss.extended++
	case observe.Lost:
		ss.lost++
	case observe.NotAcquired:
		if e.Attempts > 1 {
			s.gaveUp++
		} else {
			s.skipped++
		}
	}
}

func (s *demoStats) wrote(svc string) {
	s.mu.Lock()
	s.per[svc].writes++
	s.mu.Unlock()
}

func (s *demoStats) fenced(svc string) {
	if s.metrics != nil {
		s.metrics.FencedRejection(s.prefix + svc)
	}
	s.mu.Lock()
	s.per[svc].fenced++
	s.mu.Unlock()
}

func (s *demoStats) overlap(svc, what string) {
	s.mu.Lock()
	s.per[svc].overlaps++
	s.overlaps = append(s.overlaps, svc+": "+what)
	s.mu.Unlock()
}

func (s *demoStats) pause(note string, refused bool) {
	s.mu.Lock()
	s.paused, s.pauseNote, s.pauseOK = true, note, refused
	s.mu.Unlock()
}

func (s *demoStats) nodeDown() {
	s.mu.Lock()
	s.down++
	s.mu.Unlock()
}

// totals are the counters summed over services, for the progress line.
type totals struct {
	acquired, extended, fenced, overlaps, writes, down, nodeErrs int
}

func (s *demoStats) totals() totals {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := totals{down: s.down, nodeErrs: s.nodeErrs}
	for _, ss := range s.per {
		t.acquired += ss.acquired
		t.extended += ss.extended
		t.fenced += ss.fenced
		t.overlaps += ss.overlaps
		t.writes += ss.writes
	}
	return t
}

// demoSummary is the final report and whether the run passed its checks.
type demoSummary struct {
	text   string
	passed bool
}

func (s *demoStats) summary(w *world, took time.Duration, nodes int) demoSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "\nsummary after %s:\n", took.Round(10*time.Millisecond))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tACQUIRED\tWAIT p50\tWAIT p99\tEXTENDED\tWRITES\tFENCED\tOVERLAPS\tFINAL STATUS")
	all := &serviceStats{}
	for _, svc := range s.services {
		ss := s.per[svc]
		all.acquired += ss.acquired
		all.extended += ss.extended
		all.fenced += ss.fenced
		all.overlaps += ss.overlaps
		all.writes += ss.writes
		all.waits = append(all.waits, ss.waits...)
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", svc, ss.acquired,
			fmtWait(percentile(ss.waits, 50)), fmtWait(percentile(ss.waits, 99)), ss.extended, ss.writes, ss.fenced, ss.overlaps,
			w.status(context.Background(), svc).Status)
	}
	fmt.Fprintf(tw, "all\t%d\t%s\t%s\t%d\t%d\t%d\t%d\n", all.acquired,
		fmtWait(percentile(all.waits, 50)), fmtWait(percentile(all.waits, 99)), all.extended, all.writes, all.fenced, all.overlaps)
	_ = tw.Flush()

	fmt.Fprintf(&b, "\nnodes: %d of %d up at the end; %d node errors absorbed by the quorum\n", nodes-s.down, nodes, s.nodeErrs)
	fmt.Fprintf(&b, "contention: %d single attempts found a lock busy (reconcilers skip), %d waits gave up after the retry policy\n", s.skipped, s.gaveUp)
	if s.paused {
		fmt.Fprintf(&b, "paused holder: %s\n", s.pauseNote)
	}
	for _, o := range s.overlaps {
		fmt.Fprintf(&b, "OVERLAP %s\n", o)
	}
	passed := all.overlaps == 0
	verdict := "PASS"
	if !passed {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "%s: overlaps %d (two holders of one service's lock at once), fenced rejections %d (late writes refused)\n",
		verdict, all.overlaps, all.fenced)
	return demoSummary{text: b.String(), passed: passed}
}

// percentile is the p-th percentile (nearest rank) of ds, 0 when empty.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	return s[min(max(i, 0), len(s)-1)]
}

func fmtWait(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

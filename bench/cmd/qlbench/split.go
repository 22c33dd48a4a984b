package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
)

// splitTTL is the lock TTL of the split scenario: quorumlock's node timeout
// is a tenth of it (200 ms), redsync's 5 % (100 ms), so that rounds that wait
// for the silent node stay short.
const splitTTL = 2 * time.Second

// splitNodeTimeout is each library's node timeout at splitTTL: quorumlock's
// default (a tenth of the TTL), redsync's (5 % of it).
func splitNodeTimeout(lib string) time.Duration {
	if lib == libRS {
		return splitTTL / 20
	}
	return splitTTL / 10
}

// splitGoroutines is the blocking contention of the split scenario, as in
// the contended scenario's target case, over contendedClients Clients.
const splitGoroutines = 32

// splitter is one library in the split scenario: contendedClients Clients,
// each able to make one single attempt (quorumlock TryAcquire, redsync
// TryLockContext) and to acquire blocking (the contender).
type splitter struct {
	lib   string
	tries []func(ctx context.Context, key string) (any, error)
	c     *contender
}

func (e *env) splitters(addrs []string) ([]*splitter, error) {
	var out []*splitter
	if e.want(libQL) {
		s := &splitter{lib: libQL, c: &contender{lib: libQL}}
		out = append(out, s) // closed by the caller even if a later client fails
		for range contendedClients {
			l, c, err := newQL(addrs, splitTTL, nil)
			if err != nil {
				return out, err
			}
			s.c.clients = append(s.c.clients, l)
			s.tries = append(s.tries, func(ctx context.Context, key string) (any, error) { return c.TryAcquire(ctx, key, splitTTL) })
		}
	}
	if e.want(libRS) {
		s := &splitter{lib: libRS, c: &contender{lib: libRS}}
		for range contendedClients {
			l, rs := newRS(libRS, addrs, splitTTL, nil)
			s.c.clients = append(s.c.clients, l)
			s.tries = append(s.tries, func(ctx context.Context, key string) (any, error) {
				m := rs.NewMutex("bench:rs:"+key, redsync.WithExpiry(splitTTL))
				if err := m.TryLockContext(ctx); err != nil {
					return nil, err
				}
				return m, nil
			})
		}
		out = append(out, s)
	}
	return out, nil
}

// splitStats is what a batch of rounds measured.
type splitStats struct {
	rounds, nobody int
	attempts       harness.Summary
	errSample      map[string]int // why attempts lost (first 80 bytes) and how often
}

// errTwoHolders is a round in which two attempts both hold the key.
var errTwoHolders = errors.New("two attempts of one round hold the key at once")

// splitRounds runs rounds until dur has passed and at least minRounds ran.
// In a round every Client makes one single attempt on a fresh free key, all
// released at one barrier; the winners keep the key until every attempt of
// the round has returned (so two winners would be two holders at once: an
// error), then release it in the background (awaited before it returns).
func splitRounds(ctx context.Context, s *splitter, keyPrefix string, dur time.Duration, minRounds int) (st splitStats, err error) {
	lat := harness.NewLatencies(1 << 12)
	st.errSample = map[string]int{}
	stopAt := time.Now().Add(dur)
	n := len(s.tries)
	type result struct {
		h   any
		err error
	}
	res := make([]result, n)
	var releases sync.WaitGroup
	defer releases.Wait()
	for r := 0; (r < minRounds || time.Now().Before(stopAt)) && ctx.Err() == nil; r++ {
		key := fmt.Sprintf("%s%d", keyPrefix, r)
		var ready, done sync.WaitGroup
		start := make(chan struct{})
		took := make([]time.Duration, n)
		for i, try := range s.tries {
			ready.Add(1)
			done.Go(func() {
				ready.Done()
				<-start
				t0 := time.Now()
				h, err := try(ctx, key)
				took[i] = time.Since(t0)
				res[i] = result{h, err}
			})
		}
		ready.Wait()
		close(start)
		done.Wait()
		won := 0
		for i, x := range res {
			lat.Add(took[i])
			if x.err == nil {
				won++
				continue
			}
			st.errSample[strings.ReplaceAll(errLine(x.err, 120), key, "KEY")]++
		}
		st.rounds++
		if won == 0 {
			st.nobody++
		}
		// Released in the background: a release can wait for the silent
		// node (redsync's for the whole timeout), and the next round's key
		// is another.
		for i, x := range res {
			if x.err == nil {
				releases.Go(func() {
					rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
					_ = s.c.clients[i].release(rctx, x.h)
					cancel()
				})
			}
		}
		if won > 1 {
			return st, fmt.Errorf("%s round %d: %d winners: %w", s.lib, r, won, errTwoHolders)
		}
	}
	st.attempts = lat.Summary()
	return st, nil
}

// scenarioSplit: single attempts at one barrier (a split vote is possible)
// and blocking contention (32 goroutines), each on 5 healthy nodes and with
// node 4 stopped (SIGSTOP), for quorumlock and redsync.
func scenarioSplit(e *env) error {
	addrs := e.addrs[:5]
	silent := e.cluster.Nodes()[4]
	defer func() { _ = silent.Resume() }()
	ss, err := e.splitters(addrs)
	defer func() {
		for _, s := range ss {
			s.c.close()
		}
	}()
	if err != nil {
		return err
	}
	for rep := range e.prof.reps {
		for _, fault := range []string{"none", "silent"} {
			if fault == "silent" {
				err = silent.Pause()
			} else {
				err = silent.Resume()
			}
			if err != nil {
				return err
			}
			for _, s := range rotate(ss, rep) {
				if err := splitTryCase(e, s, rep, fault); err != nil {
					return err
				}
				splitAcquireCase(e, s, rep, fault)
				if e.ctx.Err() != nil {
					return e.ctx.Err()
				}
			}
		}
	}
	return silent.Resume()
}

// splitMinRounds is the least number of rounds of a batch.
const splitMinRounds = 10

func splitTryCase(e *env, s *splitter, rep int, fault string) error {
	cas := "try/faults=" + fault
	st, err := splitRounds(e.ctx, s, fmt.Sprintf("sv:%d:%s:", rep, fault), e.prof.split, splitMinRounds)
	if err != nil {
		return err
	}
	frac := float64(st.nobody) / float64(max(st.rounds, 1))
	m := []harness.Metric{
		{Unit: "ns/op", Value: ns(st.attempts.Mean)},
		{Unit: "p50-ns", Value: ns(st.attempts.P50)},
		{Unit: "p99-ns", Value: ns(st.attempts.P99)},
		{Unit: "max-ns", Value: ns(st.attempts.Max)},
		{Unit: "max-node-timeouts", Value: float64(st.attempts.Max) / float64(splitNodeTimeout(s.lib))},
		{Unit: "rounds", Value: float64(st.rounds)},
		{Unit: "nobody-frac", Value: frac},
	}
	e.add("Split", cas, s.lib, harness.Rep{N: max(st.attempts.N, 1), Metrics: m})
	progress("split %s %-10s rep %d/%d: %4d rounds of %d attempts, nobody acquired in %d (%.1f%%); attempt p50 %-9s p99 %-9s max %s",
		cas, s.lib, rep+1, e.prof.reps, st.rounds, len(s.tries), st.nobody, 100*frac,
		st.attempts.P50.Round(time.Microsecond), st.attempts.P99.Round(time.Microsecond), st.attempts.Max.Round(time.Microsecond))
	printTop(st.errSample, "lost: ")
	return nil
}

func splitAcquireCase(e *env, s *splitter, rep int, fault string) {
	cas := "acquire/faults=" + fault // splitGoroutines of them
	st := contendedBatch(e.ctx, s.c, fmt.Sprintf("sa:%d:%s", rep, fault), splitGoroutines, e.prof.split)
	rate := float64(st.acquired) / e.prof.split.Seconds()
	m := append(st.rateMetrics(e.prof.split), harness.Metric{Unit: "failed", Value: float64(st.failed)})
	e.add("Split", cas, s.lib, harness.Rep{N: max(st.acquired, 1), Metrics: m})
	progress("split %s %-10s rep %d/%d: %5.0f acq/s wait p50 %-9s p99 %-9s max %-9s failed %d",
		cas, s.lib, rep+1, e.prof.reps, rate, st.wait.P50.Round(time.Microsecond), st.wait.P99.Round(time.Microsecond),
		st.wait.Max.Round(time.Microsecond), st.failed)
	for msg, n := range st.errSample {
		progress("    %d× %s", n, msg)
	}
}

// splitPanels are the split scenario's chart: each panel shows only the
// cases that have its unit.
func splitPanels(rp *harness.Report, sc string) []harness.Panel {
	return []harness.Panel{
		dropEmpty(panel(rp, sc, "p99-ns", "Single attempts at one barrier: attempt p99 (log)", "ms", 1e6, true)),
		dropEmpty(panel(rp, sc, "nobody-frac", "Single attempts: share of rounds nobody acquired", "fraction", 1, false)),
		dropEmpty(panel(rp, sc, "wait-p99-ns", "32 goroutines blocking: wait p99 (log)", "ms", 1e6, true)),
		dropEmpty(panel(rp, sc, "acq/s", "32 goroutines blocking: acquisitions/s", "acq/s", 1, false)),
	}
}

// dropEmpty removes the cases where no series has a value.
func dropEmpty(p harness.Panel) harness.Panel {
	q := p
	q.Cases = nil
	q.Series = make([]harness.Series, len(p.Series))
	for i, s := range p.Series {
		q.Series[i] = harness.Series{Name: s.Name}
	}
	for ci, c := range p.Cases {
		empty := true
		for _, s := range p.Series {
			if !math.IsNaN(s.Med[ci]) {
				empty = false
			}
		}
		if empty {
			continue
		}
		q.Cases = append(q.Cases, c)
		for i, s := range p.Series {
			q.Series[i].Med = append(q.Series[i].Med, s.Med[ci])
			q.Series[i].Min = append(q.Series[i].Min, s.Min[ci])
			q.Series[i].Max = append(q.Series[i].Max, s.Max[ci])
		}
	}
	return q
}

// errLine is err on one line, cut to n bytes: a key for counting errors.
func errLine(err error, n int) string {
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	return msg[:min(len(msg), n)]
}

// printTop prints the three most frequent messages of a count.
func printTop(counts map[string]int, prefix string) {
	msgs := slices.Collect(maps.Keys(counts))
	slices.SortFunc(msgs, func(a, b string) int { return cmp.Or(counts[b]-counts[a], strings.Compare(a, b)) })
	for i, msg := range msgs {
		if i == 3 {
			progress("    %s%d other message(s)", prefix, len(msgs)-3)
			break
		}
		progress("    %s%d× %s", prefix, counts[msg], msg)
	}
}

// The ratio builders of output.go's ratios: add divides two medians, abs
// takes one value (its worst repetition).
type (
	addRatio func(name, sc, numCase, numLib, denCase, denLib, unit, op string, target float64, hasTarget bool, comment string)
	absRatio func(name, sc, cas, lib, unit, op string, target float64, comment string)
)

// splitRatios: measured and charted beside the healthy case. quorumlock's
// single attempts with a silent node have targets: p99 at most 2x the
// healthy p99, max at most one node timeout (in the worst repetition).
func splitRatios(add addRatio, abs absRatio) {
	const sc = "Split"
	const tryOK, trySilent = "try/faults=none", "try/faults=silent"
	const acqOK, acqSilent = "acquire/faults=none", "acquire/faults=silent"
	add("split: "+libQL+" single attempt p99 with a silent node vs healthy (target)", sc, trySilent, libQL, tryOK, libQL, "p99-ns", "<=", 2, true, "")
	abs("split: "+libQL+" single attempt max with a silent node, in node timeouts (worst rep)", sc, trySilent, libQL, "max-node-timeouts", "<=", 1, "")
	add("split: "+libRS+" single attempt p99 with a silent node vs healthy", sc, trySilent, libRS, tryOK, libRS, "p99-ns", "", 0, false, "lower is better")
	for _, lib := range []string{libQL, libRS} {
		for _, cas := range []string{tryOK, trySilent} {
			abs("split: "+lib+" "+cas+" share of rounds nobody acquired (worst rep)", sc, cas, lib, "nobody-frac", "", 0, "")
		}
		add("split: "+lib+" 32 goroutines wait p99 with a silent node vs healthy", sc, acqSilent, lib, acqOK, lib, "wait-p99-ns", "", 0, false, "lower is better")
		abs("split: "+lib+" 32 goroutines with a silent node: failed acquisitions (worst rep)", sc, acqSilent, lib, "failed", "", 0, "")
	}
	add("split: single attempt p99 with a silent node vs redsync", sc, trySilent, libQL, trySilent, libRS, "p99-ns", "", 0, false, "lower is better")
	add("split: 32 goroutines wait p99 with a silent node vs redsync", sc, acqSilent, libQL, acqSilent, libRS, "wait-p99-ns", "", 0, false, "lower is better")
}

package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
	"github.com/quorumlock/quorumlock/rwlock"
)

// The rwlock scenario: readers and writers of package rwlock on one key,
// under kills, pauses and delayed restarts. rwReaders loop RDo back to back
// (a stream of readers); rwWriters loop Do with a pause in between.
const (
	rwReaders = 4
	rwWriters = 2
	// rwTurnsPerReader bounds the turns one reader takes while one writer
	// waits: the attempt in flight when the writer's intent lands on a
	// majority, the few it can finish while the writer's next attempt is
	// under way (a writer refused by another writer leaves no intent), and
	// those a fault lets in (a node restarted empty forgets the intents).
	// How many fit in such a moment depends on timing: a timing target.
	rwTurnsPerReader = 8
)

// rwCS is one critical section of the scenario.
type rwCS struct {
	CS
	write bool
}

// rwWait is one writer's Do: from the call until it entered (or gave up).
type rwWait struct{ from, to time.Duration }

// rwFaults is the fault schedule: a minority killed and restarted after 2
// TTL, a node paused, a node killed with a delayed restart (the rule:
// restart no sooner than the TTL).
func rwFaults(ctx context.Context, e *Env) error {
	k := 0
	return cycle(ctx, 2*e.TTL, func() error {
		k++
		switch k % 3 {
		case 1:
			return e.fault(ctx, "kill nodes 3,4", false, 2*e.TTL,
				func() error { return firstErr(e.node(3).Kill(), e.node(4).Kill()) },
				func() error { return restartAll(context.Background(), e, 3, 4) })
		case 2:
			return e.fault(ctx, "node 1 paused", false, 2*e.TTL,
				func() error { return e.node(1).Pause() },
				func() error { return e.node(1).Resume() })
		}
		return e.fault(ctx, "node 0 down, delayed restart", false, 2*e.TTL,
			func() error { return e.node(0).Kill() },
			func() error { return e.node(0).Restart(context.Background()) })
	})
}

// runRWLock runs the workload for the profile's time with rwFaults and
// checks it: no reader's believed-valid interval meets a writer's, writers
// never overlap, fences never go back (a writer's is above every
// acquisition that returned before it began, a reader's at least as high),
// and a waiting writer sees a bounded number of reader turns. With broken,
// each client uses 2 of the 5 nodes as its quorum and no drift: the
// checker must find overlaps.
func runRWLock(ctx context.Context, p Profile, e *Env, broken bool) (*Measured, error) {
	addrs := e.Cluster.Addrs()
	key := fmt.Sprintf("rw-%d", time.Now().UnixNano())
	var clients []*rwlock.Client
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for i := range rwReaders + rwWriters {
		rcs := directClients(addrs, 4, nil)
		nodes := newNodes(rcs)
		opts := []redlock.Option{redlock.WithRetry(retry.Constant(100000, 20*time.Millisecond, 20*time.Millisecond))}
		if broken {
			nodes = []node.Node{nodes[(2*i)%len(nodes)], nodes[(2*i+1)%len(nodes)]}
			opts = append(opts, redlock.WithDriftFactor(0))
		}
		c, err := rwlock.New(nodes, opts...)
		if err != nil {
			return nil, err
		}
		clients = append(clients, c)
		closers = append(closers, func() {
			_ = c.Close()
			for _, rc := range rcs {
				_ = rc.Close()
			}
		})
	}

	var (
		mu      sync.Mutex
		css     []rwCS
		waits   []rwWait
		errs    = map[string]int{}
		lossSig int
	)
	d := p.PerScenario
	if broken {
		// Caught by events, not by time: the run ends at the first overlap
		// the checker finds, with ten times the profile's time as a hang
		// guard (a loaded machine runs few critical sections).
		d *= 10
	}
	run, stop := context.WithTimeout(ctx, d)
	defer stop()
	ttl := e.TTL
	hold := func(ctx context.Context) {
		d := time.Duration(rand.N(int64(ttl / 5)))
		if rand.N(10) == 0 {
			d = 3 * ttl / 2 // longer than the TTL: kept by extensions
		}
		sleepCtx(ctx, d)
	}
	worker := func(i int, write bool) {
		c := clients[i]
		for run.Err() == nil {
			acqStart := e.Clock.Now()
			entered := false
			do := c.RDo
			if write {
				do = c.Do
			}
			err := do(run, key, ttl, func(wctx context.Context) error {
				entered = true
				l, _ := redlock.LockFromContext(wctx)
				cs := rwCS{write: write, CS: CS{Client: i, Fence: l.Fence(), AcqStart: acqStart, AcqEnd: e.Clock.Now()}}
				cs.Start = cs.AcqEnd
				if write {
					mu.Lock()
					waits = append(waits, rwWait{acqStart, cs.AcqEnd})
					mu.Unlock()
				}
				hold(wctx)
				cs.End = e.Clock.Now()
				cs.ValidEnd = e.Clock.At(l.ValidUntil()) // moved back to the loss when it was lost
				if errors.Is(context.Cause(wctx), redlock.ErrLockLost) {
					cs.Aborted = true
				}
				mu.Lock()
				css = append(css, cs)
				if cs.Aborted {
					lossSig++
				}
				mu.Unlock()
				return nil
			})
			if err != nil && run.Err() == nil {
				mu.Lock()
				errs[attemptKind(err)]++
				mu.Unlock()
			}
			if write && !entered {
				mu.Lock()
				waits = append(waits, rwWait{acqStart, e.Clock.Now()})
				mu.Unlock()
			}
			if write {
				sleepCtx(run, time.Duration(rand.N(int64(ttl/2))))
			}
		}
	}
	start := e.Clock.Now()
	var wg sync.WaitGroup
	for i := range rwReaders + rwWriters {
		wg.Go(func() { worker(i, i >= rwReaders) })
	}
	var injErr error
	if !broken {
		injErr = rwFaults(run, e)
	}
	for broken && run.Err() == nil {
		sleepCtx(run, 200*time.Millisecond)
		mu.Lock()
		snap := slices.Clone(css)
		mu.Unlock()
		if _, _, o := rwChecked(snap); len(o) > 0 {
			stop()
		}
	}
	<-run.Done()
	wg.Wait()
	if injErr != nil {
		return nil, injErr
	}

	f := &Findings{AcquireErrors: errs, Linearizable: "-", CriticalSections: len(css), Acquisitions: len(css), LossSignals: lossSig}
	css, _, f.Overlaps = rwChecked(css)
	f.FenceInversions = rwFenceInversions(css)
	nr, nw := 0, 0
	for _, c := range css {
		if c.write {
			nw++
		} else {
			nr++
		}
	}
	// Turns per reader while one writer waited.
	maxTurns := 0
	for _, w := range waits {
		var turns [rwReaders]int
		for _, c := range css {
			if !c.write && c.AcqEnd > w.from && c.AcqEnd < w.to {
				turns[c.Client]++
				maxTurns = max(maxTurns, turns[c.Client])
			}
		}
	}
	m := &Measured{Findings: f, Windows: e.Windows()}
	m.Figures.info("reader critical sections", float64(nr), "")
	if broken {
		m.Figures.info("writer critical sections", float64(nw), "")
		m.Summary = fmt.Sprintf("%d readers, %d writers, %d overlaps found", nr, nw, len(f.Overlaps))
		return m, nil
	}
	m.Figures.atLeast("writer critical sections", float64(nw), "", 1)
	m.Figures.atMost("most turns of one reader while one writer waited", float64(maxTurns), "", rwTurnsPerReader)
	m.Figures.timing()
	dur := (e.Clock.Now() - start).Seconds()
	m.Summary = fmt.Sprintf("%d reader and %d writer critical sections (%.1f/s), %d faults; a reader took at most %d turns while one writer waited; %d lost locks signalled",
		nr, nw, float64(nr+nw)/dur, len(m.Windows), maxTurns, lossSig)
	return m, nil
}

// rwChecked numbers the critical sections in the order they were acquired
// and finds their overlaps.
func rwChecked(css []rwCS) ([]rwCS, []CS, []Overlap) {
	sort.Slice(css, func(a, b int) bool { return css[a].AcqEnd < css[b].AcqEnd })
	var all []CS
	for k := range css {
		css[k].ID = k
		all = append(all, css[k].CS)
	}
	return css, all, rwOverlaps(css, all)
}

// rwOverlaps: a reader and a writer, or two writers, whose believed-valid
// intervals meet. Readers may overlap each other.
func rwOverlaps(css []rwCS, all []CS) []Overlap {
	var out []Overlap
	for _, o := range checkOverlaps(all) {
		if css[o.A].write || css[o.B].write {
			out = append(out, o)
		}
	}
	return out
}

// rwFenceInversions: an acquisition B that began after A returned has a
// fence at least A's, and above it when B is a writer.
func rwFenceInversions(css []rwCS) []FenceInversion {
	var out []FenceInversion
	for _, b := range css {
		for _, a := range css {
			if a.AcqEnd >= b.AcqStart {
				continue
			}
			if b.Fence < a.Fence || (b.write && b.Fence == a.Fence) {
				out = append(out, FenceInversion{A: a.ID, B: b.ID, FenceA: a.Fence, FenceB: b.Fence})
			}
		}
	}
	return out
}

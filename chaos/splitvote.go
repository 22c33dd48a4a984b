package chaos

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Measured is what a measuring scenario (one that does not loop Client.Do
// under a fault schedule) hands back: the safety findings, its figures
// against their targets, and one sentence of what happened.
type Measured struct {
	*Findings
	Figures figures
	Summary string
	Windows []Window
}

// splitVoteTTL is the TTL of the split-vote attempts (a cron job's lock).
const splitVoteTTL = 2 * time.Second

// svReplicas is how many replicas race in each split-vote round.
const svReplicas = 3

// svStep is the one-way latency step of the "spread" rounds: replica c
// reaches node n after ((n-2c) mod 5) steps, so replica 0 is nearest to
// nodes 0 and 1, replica 1 to nodes 2 and 3, replica 2 to node 4, and a
// simultaneous start gives each of them the nodes nearest to it: a 2-2-1
// split in which nobody reaches a majority, as replicas in different
// zones see it.
const svStep = 250 * time.Microsecond

func svDelays(c, nodes int) []time.Duration {
	d := make([]time.Duration, nodes)
	for n := range d {
		d[n] = time.Duration(((n-2*c)%nodes+nodes)%nodes) * svStep
	}
	return d
}

// runSplitVote: 3 replicas (each its own Client and go-redis clients) call
// TryAcquire on a fresh key at the same instant, round after round. Rounds
// alternate between plain loopback (every node equally near) and "spread"
// latencies (see svStep: each replica nearest to other nodes, a split by
// construction). A replica that wins holds the lock until every replica's
// attempt has returned (the job outlasts the race), then releases. Per
// round: how many ran (target: exactly one) and, when nobody ran, what the
// losers were told. Two holders in one round are two holders at once: a
// safety violation, whatever the machine's speed. With broken, each replica
// trusts two of the five nodes and the checker must find double holders.
func runSplitVote(ctx context.Context, p Profile, e *Env, broken bool) (*Measured, error) {
	rounds := p.SplitRounds
	if broken {
		rounds = min(rounds, 50)
	}
	addrs := e.Cluster.Addrs()
	plain, err := newReplicas(svReplicas, addrs, broken, 4)
	if err != nil {
		return nil, err
	}
	defer closeReplicas(plain)
	var spread []*replica
	defer func() { closeReplicas(spread) }()
	for c := range svReplicas {
		r, err := newReplica(addrs, c, broken, 4, svDelays(c, len(addrs)))
		if err != nil {
			return nil, err
		}
		spread = append(spread, r)
	}
	// One warm-up attempt per replica so that the first round does not pay
	// for dials and script loading.
	for i, r := range append(slices.Clone(plain), spread...) {
		if l, err := r.client.TryAcquire(ctx, fmt.Sprintf("sv-warm-%d", i), splitVoteTTL); err == nil {
			_ = l.Release(ctx)
		}
	}

	type outcome struct {
		kind     string
		took     time.Duration
		cs       CS
		acquired bool
	}
	f := &Findings{AcquireErrors: map[string]int{}, Linearizable: "-"}
	var (
		noRunner, double, one [2]int // [plain, spread]
		all, lostNoRunner     = kinds{}, kinds{}
		attemptLat            lat
		base                  = time.Now().UnixNano()
		done                  [2]int
	)
	hard, cancel := context.WithTimeout(ctx, time.Duration(rounds)*time.Second+time.Minute)
	defer cancel()
	for round := range rounds {
		if hard.Err() != nil {
			break
		}
		key := fmt.Sprintf("sv-%d-%d", base, round)
		kind, reps := round%2, plain
		if kind == 1 {
			reps = spread
		}
		outs := make([]outcome, svReplicas)
		var ready, attempted, finished sync.WaitGroup
		start, release := make(chan struct{}), make(chan struct{})
		for i, r := range reps {
			ready.Add(1)
			attempted.Add(1)
			finished.Add(1)
			go func() {
				defer finished.Done()
				ready.Done()
				<-start
				t0 := time.Now()
				acqStart := e.Clock.Now()
				l, err := r.client.TryAcquire(hard, key, splitVoteTTL)
				o := outcome{kind: attemptKind(err), took: time.Since(t0), acquired: err == nil}
				if err == nil {
					o.cs = CS{Client: i, Fence: l.Fence(), AcqStart: acqStart, AcqEnd: e.Clock.Now()}
					o.cs.Start = o.cs.AcqEnd
				}
				attempted.Done()
				if err != nil {
					outs[i] = o
					return
				}
				// Hold until every replica's attempt returned, and at
				// least a millisecond: a job outlasts the race for it.
				<-release
				time.Sleep(time.Millisecond)
				o.cs.End = e.Clock.Now()
				o.cs.ValidEnd = e.Clock.At(l.ValidUntil())
				rctx, rcancel := context.WithTimeout(context.WithoutCancel(hard), 2*time.Second)
				o.cs.ReleaseOK = l.Release(rctx) == nil
				rcancel()
				outs[i] = o
			}()
		}
		ready.Wait()
		close(start) // the barrier: all three are parked on it
		attempted.Wait()
		close(release)
		finished.Wait()
		done[kind]++

		var css []CS
		rk := kinds{}
		for _, o := range outs {
			all[o.kind]++
			rk[o.kind]++
			attemptLat = append(attemptLat, o.took)
			if o.acquired {
				o.cs.ID = len(css)
				css = append(css, o.cs)
				f.Acquisitions++
			} else {
				f.AcquireErrors[o.kind]++
			}
		}
		f.CriticalSections += len(css)
		switch len(css) {
		case 0:
			noRunner[kind]++
			for k, v := range rk {
				lostNoRunner[k] += v
			}
		case 1:
			one[kind]++
		default:
			double[kind]++
			// Both held until every attempt returned: their believed-valid
			// intervals overlap.
			for _, o := range checkOverlaps(css) {
				o.A, o.B = o.A+3*round, o.B+3*round
				f.Overlaps = append(f.Overlaps, o)
			}
		}
	}
	var rw svRWCounts
	if !broken {
		if rw, err = runSVWriterReader(hard, e, max(8, min(rounds/8, 64)), f); err != nil {
			return nil, err
		}
	}
	total := done[0] + done[1]
	if hard.Err() != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("split-vote: %d of %d rounds in the time allowed", total, rounds)
	}

	m := &Measured{Findings: f}
	m.Figures.info("rounds (plain + spread)", float64(total), "")
	m.Figures.atMost("rounds without a runner", float64(noRunner[0]+noRunner[1]), "", 0)
	m.Figures.info("plain rounds without a runner", float64(noRunner[0]), "")
	m.Figures.info("spread rounds without a runner", float64(noRunner[1]), "")
	m.Figures.atMost("rounds with two holders at once", float64(double[0]+double[1]), "", 0)
	m.Figures.info("lost attempts in rounds without a runner said held", float64(lostNoRunner[kindHeld]), "")
	m.Figures.info("lost attempts in rounds without a runner said split vote", float64(lostNoRunner[kindSplit]), "")
	if !broken {
		m.Figures.info("writer-reader rounds (rwlock, 2-2 split)", float64(rw.rounds), "")
		m.Figures.atMost("writer-reader rounds without exactly one runner", float64(rw.none+rw.both), "", 0)
		m.Figures.atMost("writer-reader rounds where a side gave up on split votes", float64(rw.gaveUp), "", 0)
	}
	m.Figures.info("attempt p50", ms(attemptLat.pct(50)), "ms")
	m.Figures.info("attempt p99", ms(attemptLat.pct(99)), "ms")
	m.Figures.info("attempt max", ms(attemptLat.pct(100)), "ms")
	m.Summary = fmt.Sprintf("%d rounds of %d replicas; plain loopback: %d of %d ran once, %d without a runner, %d with two holders at once; spread latencies: %d of %d ran once, %d without a runner, %d with two holders at once; the losers of rounds without a runner said: %s; all attempts: %s; attempt p99 %s; writer-reader rounds: %d of %d ran once, %d gave up on split votes",
		total, svReplicas, one[0], done[0], noRunner[0], double[0], one[1], done[1], noRunner[1], double[1], lostNoRunner, all, fmtFigure(ms(attemptLat.pct(99)), "ms"), rw.one, rw.rounds, rw.gaveUp)
	return m, nil
}

package locktest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/redlock"
)

// ReplayEnv names the environment variable that replays one schedule: with
// LOCKTEST_SEED=n, Explore and FirstFailure run the schedule of seed n
// only.
const ReplayEnv = "LOCKTEST_SEED"

// Plan is a run of seeded fault schedules over a workload. Zero fields take
// their defaults.
type Plan struct {
	Replicas  int           // replicas of the workload, each with a client of its own; default 3
	Nodes     int           // memory nodes; default 3
	Schedules int           // schedules to run; default 100
	Seed      uint64        // seed of the first schedule, the others follow; default 1
	Faults    int           // faults per schedule; default 4
	Length    time.Duration // how long each schedule runs, on the bubble's clock (or real time); default 2 min
	TTL       time.Duration // the workload's TTL, which fault durations follow; default 30 s (on real time, set both short)
	Options   []redlock.Option
}

func (p Plan) withDefaults() Plan {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&p.Replicas, 3)
	def(&p.Nodes, 3)
	def(&p.Schedules, 100)
	def(&p.Faults, 4)
	if p.Seed == 0 {
		p.Seed = 1
	}
	if p.Length <= 0 {
		p.Length = 2 * time.Minute
	}
	if p.TTL <= 0 {
		p.TTL = 30 * time.Second
	}
	return p
}

// Replica is one replica of the workload in one schedule.
type Replica struct {
	ID     int    // from 0
	Name   string // replica-1, replica-2, ...
	Client *redlock.Client
	Rec    *Recorder  // shared by the replicas of the schedule
	Rand   *rand.Rand // seeded by the schedule, for the workload's own choices

	q      *Quorum
	stalls chan time.Duration // stalls the schedule has for this replica
}

// Checkpoint is where the schedule may stall the replica, as a
// stop-the-world pause (GC, a VM migration) does: when a stall of this
// replica is due, Checkpoint sleeps through it, whatever the lock says,
// and the replica's client reaches no node meanwhile (its extensions do not
// land, as those of a frozen process). Put it where a stall hurts most,
// such as between a check and a write.
func (r *Replica) Checkpoint() {
	select {
	case d := <-r.stalls:
		id, _ := r.q.clientID(r.Client)
		r.Rec.Note("%s stalls for %v", r.Name, d)
		for _, nd := range r.q.nodes {
			nd.cutID(id, true)
		}
		time.Sleep(d)
		for _, nd := range r.q.nodes {
			nd.cutID(id, false)
		}
		r.Rec.Note("%s wakes", r.Name)
	default:
	}
}

// Failure is the first schedule in which the Recorder found a violation.
type Failure struct {
	Seed       uint64
	Faults     []string // the schedule's faults, in order
	Violations []Violation
	Timeline   string
}

func (f *Failure) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "locktest: schedule with seed %d: %d violation(s):\n", f.Seed, len(f.Violations))
	for _, v := range f.Violations {
		fmt.Fprintf(&b, "  %s\n", v)
	}
	b.WriteString("faults:\n")
	for _, s := range f.Faults {
		fmt.Fprintf(&b, "  %s\n", s)
	}
	b.WriteString("timeline:\n")
	b.WriteString(f.Timeline)
	return b.String()
}

// Explore runs work on p.Replicas replicas under p.Schedules seeded fault
// schedules and fails t at the first schedule in which the Recorder found
// a violation, with its seed, faults, timeline and how to run it again.
// work runs once per replica, even if late, and returns when ctx ends (at
// p.Length); it marks its critical sections on r.Rec.
//
// With a *testing.T, each schedule runs in its own testing/synctest bubble,
// one after the other: a schedule of minutes takes milliseconds. A seed
// fixes the faults and their instants, the replicas' start instants and
// Rand, and what the clients draw from crypto/rand: their tokens and the
// jitter that settles a split vote (through testing/cryptotest: the test
// must not be parallel). It does not fix the order in which goroutines
// runnable at one fake instant run, nor Acquire's retry jitter (math/rand):
// use TryAcquire or TryDo in the workload, and draw its delays from r.Rand
// in milliseconds so that its steps rarely share an instant. A schedule
// whose steps do share one may replay differently; rerun its seed a few
// times.
//
// With another TB (a Session, in an example or a program; a
// *testing.B), the schedules run on real time, many at once: set p.TTL and
// p.Length short, and scale the workload's TTL and delays to them. Speed
// then changes what happens, so check on real time only a workload whose
// safety does not hang on timing (its resource checks fences), and expect
// no replay: a seed gives the same faults, not the same interleaving.
func Explore(t TB, p Plan, work func(ctx context.Context, r *Replica)) {
	t.Helper()
	if f := FirstFailure(t, p, work); f != nil {
		t.Errorf("%v\n%s", f, replayHint(t, f.Seed))
	}
}

// replayHint says how to run the schedule of seed again.
func replayHint(t TB, seed uint64) string {
	if tt, ok := t.(*testing.T); ok {
		return fmt.Sprintf("replay: %s=%d go test -run '^%s$'", ReplayEnv, seed, tt.Name())
	}
	return fmt.Sprintf("on real time, %s=%d runs its faults again, not its interleaving", ReplayEnv, seed)
}

// FirstFailure runs the schedules of p as Explore does and returns the
// failure of the lowest failing seed, or nil; it fails t only when the
// plan cannot run.
func FirstFailure(t TB, p Plan, work func(ctx context.Context, r *Replica)) *Failure {
	t.Helper()
	p = p.withDefaults()
	first, n := p.Seed, p.Schedules
	if s := os.Getenv(ReplayEnv); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("locktest: %s=%q is not a seed: %v", ReplayEnv, s, err)
			return nil
		}
		first, n = seed, 1
	}
	if !validOptions(t, p.Options) {
		return nil
	}
	tt, ok := t.(*testing.T)
	if !ok {
		return firstOnRealTime(t, p, first, n, work)
	}
	for seed := first; seed < first+uint64(n); seed++ {
		var f *Failure
		broken := false
		synctest.Test(tt, func(t *testing.T) {
			defer func() { broken = t.Failed() }() // the plan cannot run
			// Tokens and split-vote jitter from the seed too.
			cryptotest.SetGlobalRandom(t, seed)
			f = runSchedule(t, p, seed, time.Second, work)
		})
		if f != nil || broken {
			return f
		}
	}
	return nil
}

// runSchedule plays the schedule of seed, its replicas starting within
// spread; on fake time inside a bubble, or on real time.
func runSchedule(t TB, p Plan, seed uint64, spread time.Duration, work func(ctx context.Context, r *Replica)) *Failure {
	rng := rand.New(rand.NewPCG(seed, 0x10c7e57))
	q := NewQuorum(t, p.Nodes)
	rec := NewRecorder()
	replicas := make([]*Replica, p.Replicas)
	for i := range replicas {
		replicas[i] = &Replica{ID: i, Name: fmt.Sprintf("replica-%d", i+1), Client: q.Client(p.Options...),
			Rec: rec, Rand: rand.New(rand.NewPCG(seed, uint64(i))), q: q, stalls: make(chan time.Duration, p.Faults)}
		if replicas[i].Client == nil {
			return nil // the options are invalid: t was told
		}
	}
	faults := drawFaults(rng, p, q, replicas)
	ctx, cancel := context.WithTimeout(context.Background(), p.Length)
	defer cancel()
	var wg sync.WaitGroup
	for _, f := range faults {
		wg.Go(func() { f.play(ctx, rec) })
	}
	for _, r := range replicas {
		// Replicas start at distinct instants (of the first second, on
		// fake time): two requests at one fake instant land in the
		// scheduler's order, which no seed fixes. Each runs, however
		// late: work returns at once when ctx has ended.
		start := time.Duration(rng.IntN(1000)) * (spread / 1000)
		wg.Go(func() {
			sleepCtx(ctx, start)
			work(ctx, r)
		})
	}
	wg.Wait()
	if vs := rec.Violations(); len(vs) > 0 {
		descs := make([]string, len(faults))
		for i, f := range faults {
			descs[i] = f.desc
		}
		return &Failure{Seed: seed, Faults: descs, Violations: vs, Timeline: rec.Timeline()}
	}
	return nil
}

// validOptions fails t once, before any schedule runs, when opts are
// invalid: each schedule's clients would fail alike.
func validOptions(t TB, opts []redlock.Option) bool {
	t.Helper()
	c, err := redlock.New([]node.Node{memnode.New("node-1")}, opts...)
	if err != nil {
		t.Fatalf("locktest: %v", err)
		return false
	}
	_ = c.Close()
	return true
}

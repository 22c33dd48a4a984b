package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// Expect is the outcome a scenario must show.
type Expect string

const (
	// ExpectSafe: no violation of any kind, and progress during the fault.
	ExpectSafe Expect = "safe"
	// ExpectNoQuorum: safe, and no acquisition succeeds while a majority is
	// down; acquisitions fail with ErrQuorumUnreachable and holders are
	// told of the loss before their validity ends.
	ExpectNoQuorum Expect = "no-quorum"
	// ExpectFenced: the lock may be overtaken (a holder paused past its
	// TTL), and fencing must refuse every late write.
	ExpectFenced Expect = "fenced"
	// ExpectUnsafe: one of Redlock's documented unsafe cases (a node that
	// loses a held key: restart without delay, clock jump). An overlap may
	// happen (it is reported); fencing must still refuse every unsafe write
	// so that no update is lost.
	ExpectUnsafe Expect = "unsafe-fenced"
	// ExpectFenceLoss: a majority of nodes lost their data (restarted
	// empty after the delay). Mutual exclusion must hold (the delayed
	// restart protects it), no unsafe write may be accepted, and fences must
	// still grow: the lost counters restart from the client's clock in
	// microseconds, above every fence handed out before.
	ExpectFenceLoss Expect = "data-loss"
	// ExpectSkewLoss: as ExpectFenceLoss, with clients whose wall clocks
	// (which seed new fence counters) are skewed by +-60 s, and with nodes
	// wiped again and again: still no overlap, no fence inversion, no lost
	// update.
	ExpectSkewLoss Expect = "skew-data-loss"
	// ExpectTargets: a measuring scenario: no safety violation, and every
	// target of its figures met (counts, or ratios of two measurements of
	// the same run).
	ExpectTargets Expect = "targets"
	// ExpectCaught: a deliberately broken client; the checker must find
	// overlaps and lost updates (a measuring scenario: double holders).
	ExpectCaught Expect = "caught"
)

// Scenario is one fault-injection run.
type Scenario struct {
	Name   string
	What   string // one line for the table and the README
	Expect Expect
	// Clients that contend for the lock (each with its own proxies).
	Clients int
	// LongEvery is how often (on average, per client, in TTLs) a client
	// runs a long critical section, one that spans more than a TTL and only
	// stays valid through extensions. 0: never.
	LongEvery float64
	// Broken: each client uses a minority of the nodes and no drift.
	Broken bool
	// NoRecovery: the clients do not sit out nodes that lost their data
	// (WithRecoveryPeriod(0)), and the register is not fenced: the broken
	// variant of a data-loss scenario. Otherwise their recovery period is
	// recoveryTTLs TTLs.
	NoRecovery bool
	// GCPause: client 0 freezes between its validity check and its write.
	GCPause bool
	// Inject runs the fault schedule until ctx ends.
	Inject func(ctx context.Context, e *Env) error
	// Skew is how far client c's wall clock is off (nil: none): the seed
	// it offers for new fence counters is off by as much.
	Skew func(c int) time.Duration
	// Scale multiplies the profile's time per scenario (0: 1).
	Scale float64
	// Measure, when set, runs the scenario instead of the Do loop and the
	// fault schedule: it counts events and compares them with targets.
	Measure func(ctx context.Context, p Profile, e *Env) (*Measured, error)
}

// Env is what a fault schedule acts on.
type Env struct {
	Cluster *redistest.Cluster
	Net     *Network
	Clock   *Clock
	TTL     time.Duration
	Key     string // the lock's key on the nodes (prefix included)

	longAt atomic.Int64 // when the latest long critical section began

	mu      sync.Mutex
	windows []Window
}

// awaitHolder waits (at most 4 TTL) until a long critical section has just
// begun, so that a fault injected next hits a holder that needs to extend.
func (e *Env) awaitHolder(ctx context.Context) {
	deadline := time.Now().Add(4 * e.TTL)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if at := time.Duration(e.longAt.Load()); at > 0 && e.Clock.Now()-at < e.TTL/5 {
			return
		}
		sleepCtx(ctx, 2*time.Millisecond)
	}
}

// Window is a span of the timeline during which a fault was active.
type Window struct {
	Fault string        `json:"fault"`
	From  time.Duration `json:"from_ns"`
	To    time.Duration `json:"to_ns"`
	// NoQuorum: no client could reach a majority of the nodes.
	NoQuorum bool `json:"no_quorum,omitempty"`
}

// fault runs on() now, keeps the fault for d (or until ctx ends), then runs
// off(), and records the window.
func (e *Env) fault(ctx context.Context, name string, noQuorum bool, d time.Duration, on, off func() error) error {
	err := on()
	from := e.Clock.Now() // after on(): the fault is complete from here
	if err == nil {
		sleepCtx(ctx, d)
	}
	to := e.Clock.Now()
	if off != nil {
		if oerr := off(); oerr != nil && err == nil {
			err = oerr
		}
	}
	e.mu.Lock()
	e.windows = append(e.windows, Window{Fault: name, From: from, To: to, NoQuorum: noQuorum})
	e.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// Windows returns the recorded fault windows.
func (e *Env) Windows() []Window {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Window(nil), e.windows...)
}

func (e *Env) node(i int) *redistest.Node { return e.Cluster.Nodes()[i] }

// cycle repeats fault, then a quiet gap, until ctx ends. A first gap lets
// the clients warm up.
func cycle(ctx context.Context, gap time.Duration, fault func() error) error {
	sleepCtx(ctx, gap)
	for ctx.Err() == nil {
		if err := fault(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		sleepCtx(ctx, gap)
	}
	return nil
}

// restartAll brings killed nodes back (empty) and resumes paused ones.
func restartAll(ctx context.Context, e *Env, idx ...int) error {
	for _, i := range idx {
		if err := e.node(i).Restart(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Scenarios returns every scenario. T is the lock's TTL; fault durations are
// multiples of it.
func Scenarios() []Scenario {
	return []Scenario{
		{
			Name: "baseline", Expect: ExpectSafe, Clients: 3, LongEvery: 12,
			What:   "no fault: contention between three clients only",
			Inject: func(ctx context.Context, e *Env) error { <-ctx.Done(); return nil },
		},
		{
			Name: "kill-minority", Expect: ExpectSafe, Clients: 3, LongEvery: 8,
			What: "kill 2 of 5 nodes (SIGKILL) for 4 TTL, restart them empty afterwards",
			Inject: func(ctx context.Context, e *Env) error {
				return cycle(ctx, 2*e.TTL, func() error {
					return e.fault(ctx, "kill nodes 3,4", false, 4*e.TTL,
						func() error { return firstErr(e.node(3).Kill(), e.node(4).Kill()) },
						func() error { return restartAll(context.Background(), e, 3, 4) })
				})
			},
		},
		{
			Name: "restart-delayed", Expect: ExpectSafe, Clients: 3, LongEvery: 8,
			What: "kill node 0 and restart it empty only after 2 TTL (the delayed-restart rule)",
			Inject: func(ctx context.Context, e *Env) error {
				return cycle(ctx, 2*e.TTL, func() error {
					return e.fault(ctx, "node 0 down, delayed restart", false, 2*e.TTL,
						func() error { return e.node(0).Kill() },
						func() error { return e.node(0).Restart(context.Background()) })
				})
			},
		},
		{
			Name: "restart-immediate", Expect: ExpectUnsafe, Clients: 2, LongEvery: 0.01,
			What: "client A sees nodes 0-2, B sees 2-4; node 2 restarts empty at once while the lock is held (documented unsafe)",
			Inject: func(ctx context.Context, e *Env) error {
				if err := firstErr(e.Net.View(0, []int{0, 1, 2}), e.Net.View(1, []int{2, 3, 4})); err != nil {
					return err
				}
				return cycle(ctx, 3*e.TTL, func() error {
					return e.fault(ctx, "node 2 restarted empty at once", false, e.TTL/2,
						func() error { return e.node(2).Restart(ctx) }, nil)
				})
			},
		},
		restartAtOnce(false),
		restartAtOnce(true),
		{
			Name: "pause", Expect: ExpectSafe, Clients: 3, LongEvery: 8,
			What: "SIGSTOP node 1 for 3 TTL, then SIGCONT",
			Inject: func(ctx context.Context, e *Env) error {
				return cycle(ctx, 2*e.TTL, func() error {
					return e.fault(ctx, "node 1 paused", false, 3*e.TTL,
						func() error { return e.node(1).Pause() },
						func() error { return e.node(1).Resume() })
				})
			},
		},
		{
			Name: "partition", Expect: ExpectSafe, Clients: 3, LongEvery: 8,
			What: "client A sees nodes 0-2, B sees 2-4, C sees all, for 4 TTL, then heal",
			Inject: func(ctx context.Context, e *Env) error {
				return cycle(ctx, 2*e.TTL, func() error {
					return e.fault(ctx, "partition A{0,1,2} B{2,3,4}", false, 4*e.TTL,
						func() error { return firstErr(e.Net.View(0, []int{0, 1, 2}), e.Net.View(1, []int{2, 3, 4})) },
						e.Net.Heal)
				})
			},
		},
		{
			Name: "latency-reset", Expect: ExpectSafe, Clients: 3, LongEvery: 8,
			What: "toward node 3: latency above the node timeout for 3 TTL, then connection resets for 3 TTL",
			Inject: func(ctx context.Context, e *Env) error {
				lat := fmt.Sprintf(`{"type":"latency","attributes":{"latency":%d,"jitter":%d}}`, (e.TTL / 4).Milliseconds(), (e.TTL / 10).Milliseconds())
				return cycle(ctx, 2*e.TTL, func() error {
					if err := e.fault(ctx, "latency toward node 3", false, 3*e.TTL,
						func() error { return e.Net.AddToxic(3, "lat", lat) }, e.Net.Heal); err != nil {
						return err
					}
					return e.fault(ctx, "resets toward node 3", false, 3*e.TTL,
						func() error {
							return e.Net.AddToxic(3, "reset", `{"type":"reset_peer","toxicity":0.5,"attributes":{"timeout":0}}`)
						}, e.Net.Heal)
				})
			},
		},
		{
			Name: "clock-jump", Expect: ExpectUnsafe, Clients: 3, LongEvery: 6,
			What: "node 0's clock jumps ahead: its lock keys' remaining TTL is cut to 1 ms, every TTL/5 for 4 TTL (documented unsafe)",
			Inject: func(ctx context.Context, e *Env) error {
				return cycle(ctx, 2*e.TTL, func() error {
					jctx, cancel := context.WithCancel(ctx)
					defer cancel()
					return e.fault(ctx, "clock jump on node 0", false, 4*e.TTL,
						func() error { go jumpClock(jctx, e, 0); return nil },
						func() error { cancel(); return nil })
				})
			},
		},
		{
			Name: "gc-pause", Expect: ExpectFenced, Clients: 3, LongEvery: 12, GCPause: true,
			What: "client 0 freezes (GC pause) between its validity check and its write, past its TTL",
			Inject: func(ctx context.Context, e *Env) error {
				<-ctx.Done()
				return nil
			},
		},
		{
			Name: "majority-loss", Expect: ExpectNoQuorum, Clients: 3, LongEvery: 4,
			What: "SIGSTOP 3 of 5 nodes for 4 TTL (no majority reachable), then SIGCONT",
			Inject: func(ctx context.Context, e *Env) error {
				return cycle(ctx, 2*e.TTL, func() error {
					e.awaitHolder(ctx)
					return e.fault(ctx, "nodes 0,1,2 paused", true, 4*e.TTL,
						func() error { return firstErr(e.node(0).Pause(), e.node(1).Pause(), e.node(2).Pause()) },
						func() error { return firstErr(e.node(0).Resume(), e.node(1).Resume(), e.node(2).Resume()) })
				})
			},
		},
		{
			Name: "majority-restart", Expect: ExpectFenceLoss, Clients: 3, LongEvery: 6,
			What: "kill 3 of 5 nodes, restart them empty after 4 TTL: the lock stays safe, fences keep growing from the clock",
			Inject: func(ctx context.Context, e *Env) error {
				return cycle(ctx, 3*e.TTL, func() error {
					return e.fault(ctx, "nodes 0,1,2 down, delayed restart", true, 4*e.TTL,
						func() error { return firstErr(e.node(0).Kill(), e.node(1).Kill(), e.node(2).Kill()) },
						func() error { return restartAll(context.Background(), e, 0, 1, 2) })
				})
			},
		},
		{
			Name: "clock-skew", Expect: ExpectSkewLoss, Clients: 3, LongEvery: 6, Scale: 2,
			What:   "client wall clocks +60 s, 0, -60 s; nodes wiped again and again (3 of 5, then all 5, restarted after 2 TTL; after a 3-node wipe the 2 others stop for a TTL so the wiped ones decide)",
			Skew:   skewOf,
			Inject: injectWipes,
		},
		{
			Name: "split-vote", Expect: ExpectTargets,
			What: "3 replicas call TryAcquire on a fresh key at the same instant, round after round; exactly one must run each round; then a writer and a reader of rwlock race in a 2-2 split (node 4 cut off): exactly one runs, the other is told it is held",
			Measure: func(ctx context.Context, p Profile, e *Env) (*Measured, error) {
				return runSplitVote(ctx, p, e, false)
			},
		},
		{
			Name: "exact-quorum", Expect: ExpectTargets,
			What:    "4 clients x 8 goroutines Acquire one key on 5 nodes, then with 2 killed (3 up = exactly a quorum): at least half the rate, no second without an acquisition",
			Measure: runExactQuorum,
		},
		{
			Name: "silent-node", Expect: ExpectTargets,
			What:    "key held elsewhere (TTL 10 s); contended TryAcquire with node 4 stopped (SIGSTOP) vs 5 healthy nodes: p99 within 2x",
			Measure: runSilentNode,
		},
		{
			Name: "election", Expect: ExpectTargets,
			What:    "3 replicas campaign (package election) and write a fenced register as leader; faults cycle: the leader cut off from a majority, 2 nodes killed, a node paused, a delayed restart; former leaders write late",
			Measure: runElection,
		},
		{
			Name: "semaphore", Expect: ExpectTargets,
			What:    "4 clients x 3 goroutines take permits of a 3-permit semaphore while node 4 is killed (restarted empty after 2 TTL) and node 3 paused, in turn: never more than 3 permits valid at once, each slot a fenced mutex",
			Measure: runSemaphore,
		},
		{
			Name: "multilock", Expect: ExpectTargets,
			What:    "4 clients x 2 goroutines lock random overlapping sets of 2-3 of 5 keys (multilock) under the same faults: no two holders of one key, a set completed every second (no deadlock)",
			Measure: runMultilock,
		},
		{
			Name: "rwlock", Expect: ExpectTargets,
			What: "read-write lock: 4 readers back to back and 2 writers on one key, under kills, a pause and a delayed restart: never a reader with a writer or two writers, fences never go back, a waiting writer sees a bounded number of reader turns",
			Measure: func(ctx context.Context, p Profile, e *Env) (*Measured, error) {
				return runRWLock(ctx, p, e, false)
			},
		},
		{
			Name: "broken-client", Expect: ExpectCaught, Clients: 3, LongEvery: 12, Broken: true,
			What:   "deliberately broken client: each uses 2 of the 5 nodes as its quorum, no drift, unfenced resource",
			Inject: func(ctx context.Context, e *Env) error { <-ctx.Done(); return nil },
		},
		{
			Name: "broken-split-vote", Expect: ExpectCaught,
			What: "split-vote rounds with the broken client (2 of 5 nodes as its quorum): the round counter must find two holders at once",
			Measure: func(ctx context.Context, p Profile, e *Env) (*Measured, error) {
				return runSplitVote(ctx, p, e, true)
			},
		},
		{
			Name: "broken-rwlock", Expect: ExpectCaught,
			What: "the rwlock workload with a broken client (2 of 5 nodes as its quorum, no drift): the checker must find a reader with a writer",
			Measure: func(ctx context.Context, p Profile, e *Env) (*Measured, error) {
				return runRWLock(ctx, p, e, true)
			},
		},
	}
}

// skewOf puts client 0's wall clock 60 s ahead and client 2's 60 s behind
// (client 1 keeps the real one).
func skewOf(c int) time.Duration {
	return []time.Duration{60 * time.Second, 0, -60 * time.Second}[c%3]
}

// injectWipes wipes nodes following the delayed-restart rule, alternately
// three of five (a rotating majority; then the other two stop for a TTL, so
// that the next acquisitions are decided by wiped nodes alone: their fence
// counters start from a seed) and all five.
func injectWipes(ctx context.Context, e *Env) error {
	majorities := [][]int{{0, 1, 2}, {2, 3, 4}, {0, 3, 4}, {1, 2, 4}, {0, 1, 3}}
	k := 0
	return cycle(ctx, 3*e.TTL, func() error {
		k++
		if k%2 == 0 {
			all := []int{0, 1, 2, 3, 4}
			return e.fault(ctx, "all 5 nodes down, delayed restart", true, 2*e.TTL,
				func() error { return killAll(e, all...) },
				func() error { return restartAll(context.Background(), e, all...) })
		}
		maj := majorities[(k/2)%len(majorities)]
		var rest []int
		for i := range 5 {
			if !slices.Contains(maj, i) {
				rest = append(rest, i)
			}
		}
		if err := e.fault(ctx, fmt.Sprintf("nodes %v down, delayed restart", maj), true, 2*e.TTL,
			func() error { return killAll(e, maj...) },
			func() error {
				// Stop the others before the wiped ones come back.
				for _, i := range rest {
					if err := e.node(i).Pause(); err != nil {
						return err
					}
				}
				return restartAll(context.Background(), e, maj...)
			}); err != nil {
			return err
		}
		return e.fault(ctx, fmt.Sprintf("nodes %v stopped: wiped nodes %v decide", rest, maj), false, e.TTL,
			func() error { return nil },
			func() error {
				for _, i := range rest {
					if err := e.node(i).Resume(); err != nil {
						return err
					}
				}
				return nil
			})
	})
}

func killAll(e *Env, idx ...int) error {
	for _, i := range idx {
		if err := e.node(i).Kill(); err != nil {
			return err
		}
	}
	return nil
}

// jumpClock simulates node i's clock jumping forward: it ends the hold
// that every lock key's record on that node names (its end, by the
// server's clock, set long past; the counter stays), and cuts the remaining
// TTL of the other keys to 1 ms, over and over. (faketime cannot move the
// clock of Debian's redis-server, see the README.)
func jumpClock(ctx context.Context, e *Env, i int) {
	cl := e.node(i).Client()
	for ctx.Err() == nil {
		keys, err := cl.Keys(ctx, e.Key+"*").Result()
		if err == nil {
			for _, k := range keys {
				switch {
				case strings.HasSuffix(k, ":fence"):
				case strings.HasSuffix(k, "}"):
					cl.Eval(ctx, endHold, []string{k})
				default:
					cl.PExpire(ctx, k, time.Millisecond)
				}
			}
		}
		sleepCtx(ctx, e.TTL/5)
	}
}

// endHold sets the end of the hold a lock key's record names to long past.
const endHold = `local v = redis.call('GET', KEYS[1])
local c, f, rest = string.match(v or '', '^(%d+) (%d+) %d+ (.*)$')
if c then redis.call('SET', KEYS[1], c .. ' ' .. f .. ' 1 ' .. rest, 'KEEPTTL') end
return 0`

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// recoveryTTLs is the clients' recovery period in TTLs: at least one TTL
// (the rule), short enough that nodes back from a data loss serve again
// within a scenario.
const recoveryTTLs = 2

// fenced reports whether the scenario's register refuses stale fences.
func (s Scenario) fenced() bool { return !s.Broken && !s.NoRecovery }

// restartAtOnce is a node of the holder's majority restarted empty with no
// delay, while the lock is held: client A sees nodes 0-2, B sees 2-4, so
// that node 2 would give B a majority. The clients sit node 2 out for their
// recovery period, by which time the holder re-asserted its key there or
// let it go: no overlap. Without recovery (the broken variant), B takes the
// lock while A holds it.
func restartAtOnce(broken bool) Scenario {
	s := Scenario{
		Name: "restart-at-once", Expect: ExpectFenceLoss, Clients: 2, LongEvery: 0.01,
		What: "client A sees nodes 0-2, B sees 2-4; node 2 restarts empty at once while the lock is held; the clients sit it out for their recovery period",
		Inject: func(ctx context.Context, e *Env) error {
			if err := firstErr(e.Net.View(0, []int{0, 1, 2}), e.Net.View(1, []int{2, 3, 4})); err != nil {
				return err
			}
			return cycle(ctx, 3*e.TTL, func() error {
				e.awaitHolder(ctx)
				return e.fault(ctx, "node 2 restarted empty at once", false, e.TTL/2,
					func() error { return e.node(2).Restart(ctx) }, nil)
			})
		},
	}
	if broken {
		s.Name, s.Expect, s.NoRecovery = "broken-restart-at-once", ExpectCaught, true
		s.What = "restart-at-once with recovery off (WithRecoveryPeriod(0)) and an unfenced register: the checker must find B holding with A"
	}
	return s
}

package sim

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/chaos"
	"github.com/quorumlock/quorumlock/internal/defaults"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
)

// key is the one lock every client of a schedule contends for.
const key = "k"

// world is one schedule being run: servers, links, clients and what they
// recorded. It lives inside one testing/synctest bubble.
type world struct {
	s       *Schedule
	servers []*server
	links   [][]*link // [client][node]
	truth   *truth
	clients []*redlock.Client
	clock   *chaos.Clock
	reg     *chaos.Register
	rec     recorder
	start   time.Time
	trace   *traceLog // nil unless SIM_TRACE is set

	inflight sync.WaitGroup // requests travelling
	counts   struct{ requests, lost atomic.Int64 }

	mu     sync.Mutex
	downs  []int // per node: down-faults active (up again when 0)
	pauses []int
	wiped  []bool            // per node: wiped while down, not up since
	empty  [][]time.Duration // per node: when it came back up empty
	faults []window          // fault windows actually applied
	pauseC []atomic.Bool     // per client: freeze before the next write
	idents [][]time.Duration // per client: when it sent an identify request
}

func (w *world) noteIdentify(c int) {
	w.mu.Lock()
	w.idents[c] = append(w.idents[c], w.at())
	w.mu.Unlock()
}

type window struct {
	Kind     FaultKind
	From, To time.Duration
}

// Run plays s and returns what happened. It must run inside a
// testing/synctest bubble (synctest.Test): the schedule's minutes of
// timeouts and TTLs pass on the bubble's fake clock.
func Run(s *Schedule) (*Outcome, error) {
	w := &world{s: s, truth: newTruth(s.Nodes), trace: newTraceLog(), clock: chaos.NewClock(), start: time.Now(),
		downs: make([]int, s.Nodes), pauses: make([]int, s.Nodes), wiped: make([]bool, s.Nodes), empty: make([][]time.Duration, s.Nodes), pauseC: make([]atomic.Bool, s.Clients), idents: make([][]time.Duration, s.Clients)}
	w.reg = chaos.NewRegister(w.clock, s.Bug != BugNoQuorum)
	for i := range s.Nodes {
		w.servers = append(w.servers, &server{idx: i, mem: memnode.New(fmt.Sprintf("n%d", i)), bug: s.Bug, truth: w.truth, tr: w.tr})
	}
	w.links = make([][]*link, s.Clients)
	w.clients = make([]*redlock.Client, s.Clients)
	w.rec.obs = make([][]obsEvent, s.Clients)
	w.rec.cur = make([]atomic.Pointer[tracked], s.Clients)
	for c := range s.Clients {
		nodes := make([]node.Node, s.Nodes)
		acquiring := new(atomic.Int32)
		for n := range s.Nodes {
			l := &link{w: w, client: c, srv: w.servers[n], base: s.LinkBase[c][n], skew: s.Skew[c],
				r: rng(s.Seed, 1, uint64(c), uint64(n)), acquiring: acquiring}
			w.links[c] = append(w.links[c], l)
			nodes[n] = l
		}
		opts := []redlock.Option{redlock.WithObserver(w.observer(c)), redlock.WithRecoveryPeriod(s.Recovery)}
		if s.Bug == BugNoQuorum { // a minority of the nodes, its own for each client
			k := s.Nodes / 2
			nodes = append([]node.Node(nil), nodes[(c*k)%s.Nodes:]...)[:min(k, s.Nodes-(c*k)%s.Nodes)]
			opts = append(opts, redlock.WithDriftFactor(0))
		}
		cl, err := redlock.New(nodes, opts...)
		if err != nil {
			return nil, err
		}
		w.clients[c] = cl
	}

	ctx, cancel := context.WithTimeout(context.Background(), s.Duration)
	defer cancel()
	var faults sync.WaitGroup
	for _, f := range s.Faults {
		faults.Go(func() { w.inject(ctx, f) })
	}
	var workers sync.WaitGroup
	for c := range s.Clients {
		workers.Go(func() { w.work(ctx, c) })
	}
	workers.Wait()
	faults.Wait()
	for _, cl := range w.clients {
		_ = cl.Close()
	}
	w.inflight.Wait()
	// Every lock has ended; once the longest TTL has passed, no key may be
	// left on any node.
	time.Sleep(s.TTL + time.Millisecond)
	return w.outcome(), nil
}

func (w *world) at() time.Duration { return w.clock.Now() }

// observer is client c's Observer: the recorder's, and the trace's.
func (w *world) observer(c int) observe.Observer {
	rec := w.rec.observer(c, w.clock)
	if w.trace == nil {
		return rec
	}
	return observe.Func(func(e observe.Event) {
		if e.Kind == observe.Node {
			w.tr("c%d observes node %s: %s %s, err %v", c, e.Node, e.Op, e.Reason, e.Err)
		} else {
			w.tr("c%d observes %s %s: attempts %d, fence %d, err %v", c, e.Kind, e.Reason, e.Attempts, e.Fence, e.Err)
		}
		rec.Observe(e)
	})
}

// inject applies one fault at its time and reverts it after its duration.
func (w *world) inject(ctx context.Context, f Fault) {
	time.Sleep(f.At)
	from := w.at()
	w.tr("fault starts: %s", f)
	defer w.tr("fault %s ends", f.Kind)
	defer func() {
		w.mu.Lock()
		w.faults = append(w.faults, window{f.Kind, from, w.at()})
		w.mu.Unlock()
	}()
	switch f.Kind {
	case FaultPauseNode:
		w.nodePause(f.Node, true)
		time.Sleep(f.For)
		w.nodePause(f.Node, false)
	case FaultCrashNode:
		w.nodeDown(f.Node, true, false)
		time.Sleep(f.For)
		w.nodeDown(f.Node, false, false)
	case FaultRestartDelayed, FaultRestartNow:
		w.nodeDown(f.Node, true, true)
		time.Sleep(f.For)
		w.nodeDown(f.Node, false, false)
	case FaultWipeAll:
		for n := range w.servers {
			w.nodeDown(n, true, true)
		}
		time.Sleep(f.For)
		for n := range w.servers {
			w.nodeDown(n, false, false)
		}
	case FaultEvict:
		w.servers[f.Node].evict(redlockName())
	case FaultPartition:
		for _, n := range f.Nodes {
			w.links[f.Client][n].cut.Add(1)
		}
		time.Sleep(f.For)
		for _, n := range f.Nodes {
			w.links[f.Client][n].cut.Add(-1)
		}
	case FaultBlackhole:
		w.links[f.Client][f.Node].hole.Add(1)
		time.Sleep(f.For)
		w.links[f.Client][f.Node].hole.Add(-1)
	case FaultPauseClient:
		w.pauseC[f.Client].Store(true)
	}
}

// nodeDown counts down-faults per node: a node is up again only when none
// is active (an overlapping crash must not end a delayed restart early).
func (w *world) nodeDown(n int, down, wipe bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if down {
		w.downs[n]++
		w.wiped[n] = w.wiped[n] || wipe
		w.servers[n].setDown(true, wipe)
		return
	}
	if w.downs[n]--; w.downs[n] == 0 {
		w.servers[n].setDown(false, false)
		if w.wiped[n] {
			w.wiped[n] = false
			w.empty[n] = append(w.empty[n], w.at())
		}
	}
}

func (w *world) nodePause(n int, pause bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if pause {
		w.pauses[n]++
		w.servers[n].pause()
		return
	}
	if w.pauses[n]--; w.pauses[n] == 0 {
		w.servers[n].resume()
	}
}

// redlockName is the key's name on the nodes with the client's default
// prefix.
func redlockName() string { return defaults.KeyPrefix + "{" + key + "}" }

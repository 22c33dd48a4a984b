package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// FaultKind names one kind of fault a schedule injects.
type FaultKind string

// The faults. Those marked "outside the rules" break an assumption the
// README states (noeviction; the delayed-restart rule when the clients do
// not enforce it, see Schedule.Recovery): a schedule with one may overlap,
// and fencing must contain it.
const (
	FaultPauseNode      FaultKind = "pause-node"      // SIGSTOP: requests wait, applied on resume
	FaultCrashNode      FaultKind = "crash-node"      // refuses connections, keeps its data
	FaultRestartDelayed FaultKind = "restart-delayed" // wiped, back no sooner than the TTL
	FaultWipeAll        FaultKind = "wipe-all"        // every node wiped at once, back after the TTL
	FaultRestartNow     FaultKind = "restart-now"     // wiped, back before the TTL: outside the rules without recovery
	FaultEvict          FaultKind = "evict"           // the lock key dropped: outside the rules
	FaultPartition      FaultKind = "partition"       // one client cut from some nodes
	FaultBlackhole      FaultKind = "blackhole"       // one client's requests to a node vanish
	FaultPauseClient    FaultKind = "pause-client"    // a holder frozen past its TTL before a write
)

// faultKinds is the order of the summary table.
var faultKinds = []FaultKind{FaultPauseNode, FaultCrashNode, FaultRestartDelayed, FaultWipeAll,
	FaultRestartNow, FaultEvict, FaultPartition, FaultBlackhole, FaultPauseClient}

// Fault is one fault of a schedule, at At on the schedule's timeline, for For.
type Fault struct {
	Kind   FaultKind
	At     time.Duration
	For    time.Duration
	Node   int   // node faults, blackhole
	Client int   // partition, blackhole, pause-client
	Nodes  []int // partition: the nodes the client cannot reach
}

func (f Fault) String() string {
	switch f.Kind {
	case FaultPartition:
		return fmt.Sprintf("%s client %d from nodes %v at %s for %s", f.Kind, f.Client, f.Nodes, f.At, f.For)
	case FaultBlackhole:
		return fmt.Sprintf("%s client %d -> node %d at %s for %s", f.Kind, f.Client, f.Node, f.At, f.For)
	case FaultPauseClient:
		return fmt.Sprintf("%s client %d at %s", f.Kind, f.Client, f.At)
	case FaultWipeAll:
		return fmt.Sprintf("%s at %s for %s", f.Kind, f.At, f.For)
	}
	return fmt.Sprintf("%s node %d at %s for %s", f.Kind, f.Node, f.At, f.For)
}

// Workload is what the clients of a schedule do.
type Workload string

const (
	// WorkDo: each client loops Client.Do (Acquire, auto-extension, Release)
	// around a critical section, and now and then Acquire with a manual
	// Extend and Release.
	WorkDo Workload = "do"
	// WorkCron: every client calls TryDo at the same instants (a cron tick
	// on every replica), as in the split-vote case.
	WorkCron Workload = "cron"
)

// Schedule is one simulated run, drawn from Seed. The same seed gives the
// same Schedule (see Generate).
type Schedule struct {
	Seed     uint64
	Nodes    int
	Clients  int
	Work     Workload
	TTL      time.Duration
	Duration time.Duration // faults happen in the first part; the last part is healthy
	Healthy  time.Duration // the fault-free tail of Duration, for the liveness check

	// Network: per-request one-way delay = LinkBase[c][n] * (0.5 + Exp(1)),
	// and with probability SpikeProb a spike of up to SpikeMax; requests
	// are lost with probability DropProb each way.
	LinkBase  [][]time.Duration
	SpikeProb float64
	SpikeMax  time.Duration
	DropProb  float64

	Skew []time.Duration // per client: its wall clock's offset (fence seeds)
	// Recovery is the clients' recovery period (redlock.WithRecoveryPeriod):
	// the TTL, the shortest the rule allows. With it, a node restarted
	// empty at once is within the rules. 0: off.
	Recovery time.Duration
	Faults   []Fault
	Bug      Bug // a re-introduced fault of the code before core v2 (BugNone on main)
}

// OutsideRules reports whether the schedule breaks a rule the README states
// (eviction; restart before the TTL without recovery): then overlaps are expected and only
// fencing must hold.
func (s *Schedule) OutsideRules() bool {
	for _, f := range s.Faults {
		if (f.Kind == FaultRestartNow && s.Recovery == 0) || f.Kind == FaultEvict {
			return true
		}
	}
	return false
}

func (s *Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d nodes, %d clients, work %s, ttl %s, %s (healthy tail %s), drop %.3f, spikes %.3f up to %s, skew %v",
		s.Seed, s.Nodes, s.Clients, s.Work, s.TTL, s.Duration, s.Healthy, s.DropProb, s.SpikeProb, s.SpikeMax, s.Skew)
	if s.Bug != BugNone {
		fmt.Fprintf(&b, ", bug %s", s.Bug)
	}
	for _, f := range s.Faults {
		fmt.Fprintf(&b, "\n  %s", f)
	}
	return b.String()
}

// rng is the PCG of one purpose (a link, a client, the generator) derived
// from the schedule's seed, so that draws of one goroutine do not shift
// another's.
func rng(seed uint64, stream ...uint64) *rand.Rand {
	s2 := uint64(0x9e3779b97f4a7c15)
	for _, x := range stream {
		s2 = s2*0x100000001b3 ^ (x + 1)
	}
	return rand.New(rand.NewPCG(seed, s2))
}

// Generate draws the schedule of seed. bug is kept in the schedule.
func Generate(seed uint64, bug Bug) *Schedule {
	r := rng(seed, 0)
	s := &Schedule{Seed: seed, Bug: bug}
	s.Nodes = []int{3, 3, 5, 5, 5, 5, 5, 7}[r.IntN(8)]
	s.Clients = 2 + r.IntN(2)
	s.Work = WorkDo
	if r.IntN(4) == 0 {
		s.Work = WorkCron
	}
	s.TTL = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}[r.IntN(3)]
	s.Duration = time.Duration(6+r.IntN(4)) * s.TTL
	s.Healthy = 3 * s.TTL
	s.Recovery = s.TTL

	// Network: most links near (0.1-1 ms), some far (1-5 ms).
	s.LinkBase = make([][]time.Duration, s.Clients)
	spread := r.IntN(2) == 0 // replicas in different zones: each near other nodes
	for c := range s.LinkBase {
		s.LinkBase[c] = make([]time.Duration, s.Nodes)
		for n := range s.LinkBase[c] {
			base := time.Duration(100+r.IntN(900)) * time.Microsecond
			if spread {
				base = time.Duration(((n-2*c)%s.Nodes+s.Nodes)%s.Nodes) * 250 * time.Microsecond
				base += time.Duration(r.IntN(50)) * time.Microsecond
			} else if r.IntN(5) == 0 {
				base = time.Duration(1+r.IntN(4)) * time.Millisecond
			}
			s.LinkBase[c][n] = base
		}
	}
	if r.IntN(2) == 0 {
		s.SpikeProb = []float64{0.001, 0.01, 0.05}[r.IntN(3)]
		s.SpikeMax = s.TTL / time.Duration(2+r.IntN(4)) // beyond the node timeout, within the TTL
	}
	if r.IntN(3) == 0 {
		s.DropProb = []float64{0.001, 0.01, 0.03}[r.IntN(3)]
	}

	s.Skew = make([]time.Duration, s.Clients)
	for c := range s.Skew {
		switch r.IntN(6) {
		case 0:
			s.Skew[c] = time.Minute
		case 1:
			s.Skew[c] = -time.Minute
		case 2:
			s.Skew[c] = time.Duration(r.IntN(61)-30) * time.Millisecond
		}
	}

	faultEnd := s.Duration - s.Healthy
	nFaults := r.IntN(4)
	for range nFaults {
		f := Fault{At: time.Duration(r.Int64N(int64(faultEnd)))}
		f.Node, f.Client = r.IntN(s.Nodes), r.IntN(s.Clients)
		switch k := r.IntN(100); {
		case k < 15:
			f.Kind, f.For = FaultPauseNode, s.TTL/4+time.Duration(r.Int64N(int64(2*s.TTL)))
		case k < 27:
			f.Kind, f.For = FaultCrashNode, s.TTL/4+time.Duration(r.Int64N(int64(2*s.TTL)))
		case k < 42:
			f.Kind, f.For = FaultRestartDelayed, s.TTL+time.Duration(r.Int64N(int64(s.TTL)))
		case k < 50:
			f.Kind, f.For = FaultWipeAll, s.TTL+time.Duration(r.Int64N(int64(s.TTL)))
		case k < 55:
			f.Kind, f.For = FaultRestartNow, 30*time.Millisecond+time.Duration(r.Int64N(int64(s.TTL/2)))
		case k < 58:
			f.Kind = FaultEvict
		case k < 75:
			f.Kind, f.For = FaultPartition, s.TTL/4+time.Duration(r.Int64N(int64(2*s.TTL)))
			f.Nodes = r.Perm(s.Nodes)[:1+r.IntN(s.Nodes)]
		case k < 85:
			f.Kind, f.For = FaultBlackhole, s.TTL/4+time.Duration(r.Int64N(int64(2*s.TTL)))
		default:
			f.Kind = FaultPauseClient
		}
		if f.At+f.For > faultEnd { // every fault ends before the healthy tail
			f.At = max(0, faultEnd-f.For)
		}
		s.Faults = append(s.Faults, f)
	}
	return s
}

// Package sim is the deterministic-simulation side of the chaos runs: many
// seeded fault schedules, each played on testing/synctest's fake clock in
// milliseconds, and checked by the chaos checker (package chaos) plus checks
// that need the nodes' ground truth.
//
// # The world
//
// A schedule (Generate) is drawn from one seed with math/rand/v2's PCG: 3, 5
// or 7 memnode.Node servers, 2 or 3 clients (each a redlock.Client of its
// own), a TTL of 0.5, 1 or 2 s, a workload, the network and the faults. Each
// client reaches each server over a link (net.go) that implements node.Node:
// a request travels for a delay drawn per link (a base of 0.1-5 ms, or
// spread by zone as in the chaos split-vote scenario, times 0.5+Exp(1), plus
// rare spikes past the node timeout), may be lost before the server applies
// it or after (the reply is lost), and is applied whatever the client's
// context says, so requests that a client gave up on land late and may
// overtake later ones. Node faults: pause (SIGSTOP: requests wait and are
// applied on resume), crash (refused, data kept), restart empty after the
// TTL (the delayed-restart rule), all nodes wiped at once, restart empty
// before the TTL and eviction of the lock key (both outside the README's
// rules: overlaps are then allowed, and only fencing must hold). Network
// faults per client: partition (refused at once) and blackhole (requests and
// replies vanish). Client faults: a holder frozen past its TTL before a
// write (auto-extension stops, as in a stop-the-world pause), and a wall
// clock off by up to a minute for the fence seeds it sends. Every fault ends
// before the schedule's healthy tail (3 TTL), which has no drops or spikes.
//
// Workloads: Client.Do with auto-extension, Acquire or TryAcquire with
// manual Extend and Release, and "cron" (every client calls TryAcquire at
// the same instants), around critical sections on the chaos Register
// (fenced reads and writes).
//
// # The checks
//
// Verdict runs chaos.Check (mutual exclusion while believed valid, fence
// order, fenced writes, linearizability with porcupine, loss signalled
// before validity end) and adds: liveness (an acquisition in the healthy
// tail once a TTL passed, and no ErrQuorumUnreachable there); no key created
// by a request of a token on a node after that node processed the token's
// release, within the tombstone (the late-request rule); no key left on any
// node after every client closed and a TTL passed (orphans); no call
// reported "held by another" when no token held a majority of the nodes
// during the call, each node at some moment of it (split votes; a quorum
// read is no atomic snapshot); no waiter asleep (between a lost
// attempt and the next) while a majority of the nodes held no key for
// longer than 100 ms, outside faults and a TTL after them, in schedules
// without drops or spikes; no attempt longer than three times the node
// timeout plus 50 ms, plus 10 ms (its round, the fence settle and a split's
// last look). An overlap that begins with a majority of the nodes back up
// empty after a restart before the TTL is the limit the library states
// for recovery, counted apart (beyond-recovery-limit). The ground truth is
// recorded by the servers as they apply requests (truth.go). Violations
// that are instances of a finding on main already reported (knownFindings;
// none is open, its one entry is recovery's limit) are counted apart and
// fail no profile; each finding has a reproducer test, skipped until it is
// fixed (SIM_KNOWN=1); the reproducers of findings since fixed run as
// regression tests.
//
// Bug re-introduces, at the servers and links, each fixed review finding,
// to show that the checks find it.
//
// # Profiles
//
// The simulation test runs SIM_SCHEDULES schedules from SIM_FROM on every
// core: 10,000 by default (100 under -race); make sim runs 1,000,000 with
// progress. A failing schedule is printed with its seed, a one-command
// replay and a porcupine timeline (Timeline).
//
// # Replay
//
// What a seed fixes exactly: the schedule, each link's sequence of delays
// and losses, and each client's sequence of workload choices. What it does not: the library draws its tokens from
// crypto/rand (the replay fixes them with testing/cryptotest) and its retry
// and split jitter from math/rand/v2's global source, which no test can
// seed; and goroutines runnable at the same fake instant run in the order
// Go's scheduler picks. So two runs of one seed face the same faults at the
// same instants, but may interleave differently. In practice a failing seed
// fails again on most reruns (the README lists the measured rates), and
// the replay reruns a seed N times with SIM_RUNS=N.
package sim

// Package chaos runs the Redlock client of github.com/quorumlock/quorumlock
// against five real redis-server nodes while injecting faults, and checks
// what the lock guarantees under each fault.
//
// Every client has its own view of the network: one in-process toxiproxy
// proxy per node (github.com/Shopify/toxiproxy/v2), so that partitions,
// latency and connection resets can differ per client. The clients loop:
// acquire one lock with auto-extension, run a critical section that reads
// and writes a protected Register with the lock's fence, release. Every
// critical section is recorded on one monotonic timeline together with what
// the client believed about its lock's validity.
//
// The checker then verifies, per scenario:
//
//   - mutual exclusion: no two critical sections overlap while both
//     holders believed their lock valid;
//   - fences: an acquisition that began after another one ended has a
//     strictly greater fence;
//   - fencing: the Register's history is linearizable for a fenced
//     counter (checked with github.com/anishathalye/porcupine), i.e. no
//     update was lost, and every late write (one made after a newer fence
//     touched the Register) was refused;
//   - loss: a holder that lost its lock was told before its validity ended;
//   - liveness: acquisitions per second during each fault; progress
//     continues while a majority of nodes is reachable.
//
// Each Scenario carries its expected outcome: the safe ones must show no
// violation, "restart empty without delay" is Redlock's documented unsafe
// case (an overlap may happen, and fencing must contain it), and a
// deliberately broken client (no quorum, no drift) must be caught.
//
// The measuring scenarios of core v2 (split-vote, exact-quorum,
// silent-node) run their own load instead of the Do loop, bounded by counts
// of events, and are judged on Figures: counts, or ratios of two
// measurements of the same run, never a wall-clock bound. clock-skew runs
// the Do loop with skewed client wall clocks while nodes are wiped.
package chaos

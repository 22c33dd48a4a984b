// Package retry holds the retry policies of quorumlock: how many times a
// blocked acquisition tries again, and how long it waits in between.
//
// A Policy is a value that is safe to share between goroutines and clients;
// each acquisition asks it for a fresh run of Delays, so no state leaks from
// one acquisition into the next. Exponential is built on
// github.com/cenkalti/backoff/v4, which stays out of this package's API.
//
//   - Constant(count, delay, jitter): count retries, each after delay plus a
//     random extra in [0, jitter). Constant(10, 200ms, 100ms) is the default of
//     redlock.Client, as in node-redlock.
//   - Exponential(initial, max, count): doubling delays with ±50% jitter,
//     count retries; no delay exceeds max, jitter included.
//   - Never(): one attempt, no retry.
//
// Jitter matters: clients that retry in lock-step keep splitting the votes of
// the nodes between them, and none reaches a majority.
package retry

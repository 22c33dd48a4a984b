// Package defaults holds the defaults of redlock's options that the tools
// around the client (the command line, the test kits, chaos) must agree
// with: one place, so that they cannot drift apart.
package defaults

import "time"

// KeyPrefix is the prefix of every key on the nodes unless
// redlock.WithKeyPrefix says otherwise.
const KeyPrefix = "lock:"

// RecoveryPeriod is how long a node that lost its lock data sits out of
// each key unless redlock.WithRecoveryPeriod says otherwise: longer than the
// TTLs locks usually take (the keep-alive holds a lock longer with a short
// TTL); a node back from a data loss serves each key again within it, where
// the delayed-restart rule kept it down for as long.
const RecoveryPeriod = 10 * time.Minute

package main

import (
	"flag"
	"time"

	"github.com/quorumlock/quorumlock/internal/defaults"
)

// recoveryFlag adds --recovery-period, the client's
// redlock.WithRecoveryPeriod, to a command that takes locks.
func recoveryFlag(fs *flag.FlagSet, d *time.Duration) {
	durationFlag(fs, d, "recovery-period", defaults.RecoveryPeriod,
		"how long a node that lost its data sits out of the keys it lost (0: off); at least --ttl and --min-hold, the same on every client of these nodes")
}

// checkRecovery refuses a TTL or a hold that the recovery period does not
// cover: a node that restarted empty counts again after the period, and
// would grant a key still held, or held on purpose, elsewhere.
func checkRecovery(cmd string, period, ttl, hold time.Duration) error {
	switch {
	case period < 0:
		return usageErr(cmd, "--recovery-period %s is negative (0 turns recovery off)", period)
	case period == 0:
		return nil
	case ttl > period:
		return usageErr(cmd, "--ttl %s is longer than --recovery-period %s: raise --recovery-period (on every client of these nodes) or lower --ttl", ttl, period)
	case hold > period:
		return usageErr(cmd, "--min-hold %s is longer than --recovery-period %s: a node that lost its data counts again after the period, and a later run could start before the hold ends; raise --recovery-period (on every client of these nodes) or lower --min-hold", hold, period)
	}
	return nil
}

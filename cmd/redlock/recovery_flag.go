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
		"how long a node that lost its data sits out (0: off), or the longest --min-hold or tick --retention if longer; at least --ttl, the same on every client of these nodes")
}

// checkRecovery refuses a TTL that the recovery period does not cover: a
// node that restarted empty counts again after the period, and would grant
// a key still held elsewhere. (A longer hold is told to the nodes, and a
// node that restarted empty sits it out.)
func checkRecovery(cmd string, period, ttl time.Duration) error {
	switch {
	case period < 0:
		return usageErr(cmd, "--recovery-period %s is negative (0 turns recovery off)", period)
	case period == 0:
		return nil
	case ttl > period:
		return usageErr(cmd, "--ttl %s is longer than --recovery-period %s: raise --recovery-period (on every client of these nodes) or lower --ttl", ttl, period)
	}
	return nil
}

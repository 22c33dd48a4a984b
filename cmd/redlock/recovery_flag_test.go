package main

import (
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// A TTL longer than the recovery period is a usage error that names
// --recovery-period, before any node is dialled.
func TestExecRefusesWhatTheRecoveryPeriodDoesNotCover(t *testing.T) {
	nodes := []string{"127.0.0.1:1"} // never dialled: usage is checked first
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--ttl", "20m"}, "--ttl 20m0s is longer than --recovery-period 10m0s"},
		{[]string{"--ttl", "2m", "--recovery-period", "1m"}, "--ttl 2m0s is longer than --recovery-period 1m0s"},
		{[]string{"--once-per", "1h", "--ttl", "20m"}, "--ttl 20m0s is longer than --recovery-period 10m0s"},
		{[]string{"--recovery-period", "-1s"}, "--recovery-period -1s is negative"},
	} {
		args := append(append([]string{"exec"}, c.args...), "k", "--", "true")
		r := runBin(t, nodes, args...)
		if r.code != exitUsage {
			t.Errorf("%v: exit %d, want 2", c.args, r.code)
		}
		oneLine(t, r.stderr, c.says)
		if strings.Contains(r.stderr, "WithRecoveryPeriod") {
			t.Errorf("%v: %q names the Go option, not the flag", c.args, r.stderr)
		}
	}
}

// --recovery-period reaches the client: a TTL over the default period runs
// with a longer period, or with recovery off, in every mode; a hold over
// the period runs with the default one (the nodes are told of it).
func TestExecRecoveryPeriodAllowsLongerTTLs(t *testing.T) {
	c := redistest.StartT(t, 3)
	for _, args := range [][]string{
		{"--ttl", "20m", "--recovery-period", "30m", "-n", "job:long"},
		{"--ttl", "20m", "--recovery-period", "0", "-n", "job:off"},
		{"--min-hold", "20m", "job:held"},
		{"--ttl", "20m", "--recovery-period", "30m", "--slots", "2", "job:slots"},
		{"--ttl", "20m", "--recovery-period", "30m", "--exclusive", "job:rw"},
		{"--once-per", "1h", "--ttl", "20m", "--recovery-period", "30m", "job:tick"},
	} {
		r := runBin(t, c.Addrs(), append(append([]string{"exec"}, args...), "--", "sh", "-c", "echo ran")...)
		if r.code != 0 || strings.TrimSpace(r.stdout) != "ran" {
			t.Errorf("%v: exit %d, stdout %q; want 0 and the command run", args, r.code, r.stdout)
		}
	}
	// The hold of 20m is on the nodes: a second run finds the key held.
	r := runBin(t, c.Addrs(), "exec", "-n", "--recovery-period", "30m", "job:held", "--", "true")
	if r.code != 1 {
		t.Errorf("a run during the 20m hold: exit %d, want 1", r.code)
	}
}

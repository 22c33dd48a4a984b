package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/quorumlock/quorumlock/internal/defaults"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/tick"
)

const usageTick = `Usage: redlock tick reset [--yes] [flags] JOB TICK

Forget the tick TICK of the job JOB (as exec --once-per or --tick names
them; ls --ticks lists them), so that the next replica that asks runs it:
to rerun a tick that failed, or one left "claimed, not finished" by a
runner that died (at most once, the default, never reruns it by itself).
It shows the tick's records and asks for confirmation on a terminal;
without a terminal it refuses unless --yes is given. It refuses while the
tick runs (its claim is held): wait for the run, or evict the runner with
unlock --force tick:JOB@TICK first. The records are force-released as
unlock --force releases a lock, so their fences stay below the next run's.

Flags:
  --yes          do not ask for confirmation
  --prefix P     key prefix on the nodes (default "lock:")
  --nodes LIST   host:port,host:port,... (default $REDLOCK_NODES; required)
  --nodes-file F the node list from file F (one node per line, # comments):
                 keeps passwords off the command line, which ps shows;
                 a file that others may read gets a warning
  --single-node  allow a list of one node (quorum 1: it must never fail);
                 without it, one node is a usage error

Exit codes: 0 reset; 1 nothing to reset, the tick is running, or not
confirmed; 2 usage (also: no terminal and no --yes); 3 nodes unreachable.
`

func runTick(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "reset" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprint(stdout, usageTick)
			return nil
		}
		return usageErr("tick", "want: tick reset JOB TICK")
	}
	fs := newFlagSet("tick reset")
	yes := fs.Bool("yes", false, "do not ask for confirmation")
	prefix := fs.String("prefix", defaults.KeyPrefix, "key prefix on the nodes")
	nodes := nodesFlags(fs, new(nodeArgs))
	if err := parse(fs, "tick", usageTick, args[1:], stdout); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usageErr("tick", "want JOB and TICK, got %d arguments", fs.NArg())
	}
	job, name := fs.Arg(0), fs.Arg(1)
	keys := tick.Keys(job, name)
	if _, ok := tick.ParseKey(keys[0], ""); !ok {
		return usageErr("tick", "%q and %q are not a job and a tick (no spaces or { } * ? [ ] \\ @ #)", job, name)
	}
	if !*yes && !stdinIsTerminal() {
		return usageErr("tick", "refusing to reset a tick without confirmation: stdin is not a terminal; pass --yes")
	}
	c, closeAll, err := adminClient(ctx, "tick", *nodes, *prefix)
	if err != nil {
		return err
	}
	defer closeAll()
	claim, err := c.Inspect(ctx, keys[0])
	if err != nil {
		return adminErr("tick", err)
	}
	if held(claim) {
		return exitf(exitConflict, "redlock tick: job %s tick %s is running (claim held by %s): wait for it, or evict it with redlock unlock --force %s",
			job, name, orDash(claim.Owner), keys[0])
	}
	found, err := heldRecords(ctx, c, keys[1:])
	if err != nil {
		return adminErr("tick", err)
	}
	if len(found) == 0 {
		return exitf(exitConflict, "redlock tick: job %s tick %s has no record: nothing to reset (a tick named by --once-per is the scheduled time rounded to the period, in UTC)", job, name)
	}
	for _, info := range found {
		d, _ := tick.Describe(info.Key, ownerOf(info))
		fmt.Fprintln(stdout, d)
	}
	if !*yes && !confirmed(stdout, fmt.Sprintf("Reset job %s tick %s, so that the next replica that asks runs it?", job, name)) {
		return exitf(exitConflict, "redlock tick: not confirmed; job %s tick %s is unchanged", job, name)
	}
	for _, info := range found {
		if _, err := c.ForceRelease(ctx, info.Key, ""); err != nil {
			if errors.Is(err, redlock.ErrLockLost) {
				return exitf(exitConflict, "redlock tick: %s: held on too few nodes to release; it expires by itself: %v", info.Key, err)
			}
			return adminErr("tick", err)
		}
	}
	fmt.Fprintf(stdout, "reset job %s tick %s: the next replica that asks runs it (at %s)\n", job, name, time.Now().UTC().Format(time.RFC3339))
	return nil
}

// heldRecords is the Info of each of keys that some answering node holds.
func heldRecords(ctx context.Context, c *redlock.Client, keys []string) ([]redlock.Info, error) {
	var found []redlock.Info
	for _, key := range keys {
		info, err := c.Inspect(ctx, key)
		if err != nil {
			return nil, err
		}
		if held(info) {
			found = append(found, info)
		}
	}
	return found, nil
}

// held says whether any answering node holds the key: a tick's record
// turns replicas away when any node of a majority has it.
func held(info redlock.Info) bool {
	if info.Held {
		return true
	}
	for _, n := range info.Nodes {
		if n.Err == nil && n.Held {
			return true
		}
	}
	return false
}

// ownerOf is the key's owner: the majority's, or that of a node holding it.
func ownerOf(info redlock.Info) string {
	if info.Owner != "" {
		return info.Owner
	}
	for _, n := range info.Nodes {
		if n.Err == nil && n.Held {
			return n.Owner
		}
	}
	return ""
}

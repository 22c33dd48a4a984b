package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/internal/defaults"
)

const usageUnlock = `Usage: redlock unlock --force [--yes] [flags] KEY

Evict the holder of KEY (without the prefix): for a holder that is gone or
stuck. It shows the holder (as redlock inspect) and asks for confirmation
on a terminal; without a terminal it refuses unless --yes is given. Then it
deletes the lock on a majority of the nodes, but only if the holder is
still the one shown, and raises the fence counter above the evicted
holder's fence: the next holder gets a larger fence, so a store that
refuses older fences refuses the evicted holder's late writes. The evicted
holder learns of the loss at its next extension.

Flags:
  --force        required: a lock is normally released by its holder
  --yes          do not ask for confirmation
  --prefix P     key prefix on the nodes (default "lock:")
  --nodes LIST   host:port,host:port,... (default $REDLOCK_NODES; required)
  --nodes-file F the node list from file F (one node per line, # comments):
                 keeps passwords off the command line, which ps shows;
                 a file that others may read gets a warning
  --single-node  allow a list of one node (quorum 1: it must never fail);
                 without it, one node is a usage error

Exit codes: 0 released; 1 not held, held by another holder than the one
shown, or not confirmed; 2 usage (also: no terminal and no --yes); 3 nodes
unreachable.
`

// confirmInput is where the confirmation is read; stdinIsTerminal says
// whether to ask at all. Tests replace them.
var (
	confirmInput    io.Reader = os.Stdin
	stdinIsTerminal           = func() bool { return isTTY(int(os.Stdin.Fd())) }
)

func runUnlock(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("unlock")
	force := fs.Bool("force", false, "evict the holder")
	yes := fs.Bool("yes", false, "do not ask for confirmation")
	prefix := fs.String("prefix", defaults.KeyPrefix, "key prefix on the nodes")
	nodes := nodesFlags(fs, new(nodeArgs))
	if err := parse(fs, "unlock", usageUnlock, args, stdout); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErr("unlock", "want one KEY, got %d arguments", fs.NArg())
	}
	if !*force {
		return usageErr("unlock", "a lock is released by its holder; --force evicts the holder")
	}
	if !*yes && !stdinIsTerminal() {
		return usageErr("unlock", "refusing to force-release without confirmation: stdin is not a terminal; pass --yes")
	}
	key := fs.Arg(0)
	c, closeAll, err := adminClient(ctx, "unlock", *nodes, *prefix)
	if err != nil {
		return err
	}
	defer closeAll()
	info, err := c.Inspect(ctx, key)
	if err != nil {
		return adminErr("unlock", err)
	}
	if !info.Held {
		printInfo(stdout, info, time.Now())
		return exitf(exitConflict, "redlock unlock: %q is not held on a majority of the nodes: nothing to release", key)
	}
	if !*yes {
		printInfo(stdout, info, time.Now())
		if !confirmed(stdout, fmt.Sprintf("Force-release %q held by %s (fence %d)?", key, orDash(info.Owner), info.Fence)) {
			return exitf(exitConflict, "redlock unlock: not confirmed; %q is still held", key)
		}
	}
	evicted, err := c.ForceRelease(ctx, key, info.Holder)
	if err != nil {
		return adminErr("unlock", err)
	}
	fmt.Fprintf(stdout, "force-released %q: evicted %s (holder %s, fence %d, acquired %s); the next holder gets a fence above %d\n",
		key, orDash(evicted.Owner), evicted.Holder, evicted.Fence, when(evicted.AcquiredAt, time.Now()), evicted.Fence)
	return nil
}

// confirmed asks question on stdout and says whether confirmInput answered
// y or yes.
func confirmed(stdout io.Writer, question string) bool {
	fmt.Fprintf(stdout, "\n%s [y/N] ", question)
	line, _ := bufio.NewReader(confirmInput).ReadString('\n')
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}

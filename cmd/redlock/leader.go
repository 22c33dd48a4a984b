package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/quorumlock/quorumlock/election"
	"github.com/quorumlock/quorumlock/internal/defaults"
)

const usageLeader = `Usage: redlock leader [flags] NAME

Print the current leader of the election NAME, as a majority of the nodes
says, in one line of three tab-separated fields: its value (what elect
--value or Campaign set), the largest fence counter the nodes report, and
when its term began (RFC 3339, by the leader's clock). Changes nothing.

That fence is not the leader's own (its REDLOCK_FENCE): once elect has
started the leader's CMD it is at least that, and larger when the nodes'
counters drifted apart; a look that races the term's start can read less.
Write with REDLOCK_FENCE, never with this one.

Flags:
  --prefix P     key prefix on the nodes (default "lock:")
  --nodes LIST   host:port,host:port,... (default $REDLOCK_NODES; required)
  --nodes-file F the node list from file F (one node per line, # comments):
                 keeps passwords off the command line, which ps shows;
                 a file that others may read gets a warning
  --single-node  allow a list of one node (quorum 1: it must never fail);
                 without it, one node is a usage error

Exit codes: 0 a leader was printed; 1 no leader (nothing printed on
stdout); 2 usage; 3 too few nodes reachable.
`

func runLeader(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("leader")
	prefix := fs.String("prefix", defaults.KeyPrefix, "key prefix on the nodes")
	nodes := nodesFlags(fs, new(nodeArgs))
	if err := parse(fs, "leader", usageLeader, args, stdout); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErr("leader", "want one NAME, got %d arguments", fs.NArg())
	}
	c, closeAll, err := adminClient(ctx, "leader", *nodes, *prefix)
	if err != nil {
		return err
	}
	defer closeAll()
	e, err := election.New(c, fs.Arg(0))
	if err != nil {
		return usageErr("leader", "%v", err)
	}
	l, err := e.Leader(ctx)
	switch {
	case errors.Is(err, election.ErrNoLeader):
		return exitf(exitNoLeader, "redlock leader: %q has no leader", fs.Arg(0))
	case err != nil:
		return adminErr("leader", err)
	}
	fmt.Fprintf(stdout, "%s\t%d\t%s\n", l.Value, l.Fence, l.Since.UTC().Format(time.RFC3339Nano))
	return nil
}

// exitNoLeader is leader's exit code when nobody leads.
const exitNoLeader = 1

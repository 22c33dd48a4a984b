package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/quorumlock/quorumlock/internal/defaults"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/tick"
)

const usageInspect = `Usage: redlock inspect [flags] KEY

Show who holds KEY (without the prefix), as a majority of the nodes says:
held or free, the holder's owner (host/pid/program unless it set another),
when it was acquired, the largest fence counter the nodes report, how long
a majority keeps it, whether all nodes agree, and what each node says,
including how long it has kept data for KEY (DATA AGE) and, for a node that
lost its data, until when it sits out of KEY (RECOVERING; clients with the
default recovery period). Changes nothing.

That fence is not the holder's own (its REDLOCK_FENCE): once the holder's
acquisition has returned it is at least that, and larger when the nodes'
counters drifted apart; a look that races the acquisition can read less.
The next holder's fence is larger than every earlier holder's, not
necessarily than this counter (unlock --force raises it on a majority).

Flags:
  --prefix P     key prefix on the nodes (default "lock:")
  --nodes LIST   host:port,host:port,... (default $REDLOCK_NODES; required)
  --nodes-file F the node list from file F (one node per line, # comments):
                 keeps passwords off the command line, which ps shows;
                 a file that others may read gets a warning
  --single-node  allow a list of one node (quorum 1: it must never fail);
                 without it, one node is a usage error

Exit codes: 0 shown (held or free); 2 usage; 3 nodes unreachable.
`

func runInspect(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("inspect")
	prefix := fs.String("prefix", defaults.KeyPrefix, "key prefix on the nodes")
	nodes := nodesFlags(fs, new(nodeArgs))
	if err := parse(fs, "inspect", usageInspect, args, stdout); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErr("inspect", "want one KEY, got %d arguments", fs.NArg())
	}
	c, closeAll, err := adminClient(ctx, "inspect", *nodes, *prefix)
	if err != nil {
		return err
	}
	defer closeAll()
	info, err := c.Inspect(ctx, fs.Arg(0))
	if err != nil {
		return adminErr("inspect", err)
	}
	printInfo(stdout, info, time.Now())
	return nil
}

// adminClient connects to the nodes and makes a lock client over them for
// inspect and unlock.
func adminClient(ctx context.Context, cmd string, nodes nodeArgs, prefix string) (*redlock.Client, func(), error) {
	r, err := connect(ctx, cmd, nodes)
	if err != nil {
		return nil, nil, err
	}
	c, err := redlock.New(r.nodes, redlock.WithKeyPrefix(prefix)) // notifications on: unlock announces the release to waiters
	if err != nil {
		r.Close()
		return nil, nil, usageErr(cmd, "%v", err)
	}
	return c, func() { _ = c.Close(); r.Close() }, nil
}

// adminErr maps a library error to redlock's exit codes.
func adminErr(cmd string, err error) error {
	switch {
	case errors.Is(err, redlock.ErrInvalidArgument):
		return usageErr(cmd, "%v", err)
	case errors.Is(err, redlock.ErrQuorumUnreachable):
		return exitf(exitUnreachable, "redlock %s: %v", cmd, err)
	}
	return exitf(exitConflict, "redlock %s: %v", cmd, err)
}

// printInfo prints an Inspect result: the majority's view, then each node's.
func printInfo(w io.Writer, info redlock.Info, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	agree := "nodes agree"
	if !info.Agree {
		agree = "nodes disagree"
	}
	fmt.Fprintf(tw, "key\t%s\n", info.Key)
	if !info.Held {
		fmt.Fprintf(tw, "held\tno (%s)\n", agree)
		fmt.Fprintf(tw, "fence\t%d (the largest counter read)\n", info.Fence)
	} else {
		fmt.Fprintf(tw, "held\tyes (%s)\n", agree)
		fmt.Fprintf(tw, "owner\t%s\n", orDash(ownerWords(info.Key, info.Owner)))
		if d, ok := tick.Describe(info.Key, info.Owner); ok {
			fmt.Fprintf(tw, "tick\t%s\n", d)
		}
		fmt.Fprintf(tw, "acquired\t%s\n", when(info.AcquiredAt, now))
		fmt.Fprintf(tw, "fence\t%d (the largest counter read, not the holder's fence)\n", info.Fence)
		fmt.Fprintf(tw, "remaining\t%s on a majority\n", info.Remaining.Round(time.Millisecond))
		fmt.Fprintf(tw, "holder\t%s\n", info.Holder)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tHELD\tHOLDER\tOWNER\tTTL\tFENCE\tRECOVERING")
	for _, n := range info.Nodes {
		if n.Err != nil {
			fmt.Fprintf(tw, "%s\terror\t-\t-\t-\t%s\n", n.Node, strings.ReplaceAll(n.Err.Error(), "\n", "; "))
			continue
		}
		held, ttl := "no", "-"
		if n.Held {
			held, ttl = "yes", n.Remaining.Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", n.Node, held, orDash(n.Holder), orDash(ownerWords(info.Key, n.Owner)), ttl, n.Fence,
			recoveringUntil(n.Recovering, now))
	}
	_ = tw.Flush()
}

// ownerWords is a key's owner as a person reads it: for a record of a
// tick, the runner rather than the record's encoding.
func ownerWords(key, owner string) string {
	if k, ok := tick.ParseKey(key, owner); ok {
		return k.Record.Runner
	}
	return owner
}

// recoveringUntil says until when a node sits out of the key: "no" when it
// counts. The node measured the time left on its clock; the end is put on
// ours.
func recoveringUntil(left time.Duration, now time.Time) string {
	if left <= 0 {
		return "no"
	}
	return fmt.Sprintf("until %s (%s more)", now.Add(left).UTC().Format(time.TimeOnly), left.Round(time.Second))
}

func when(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339Nano), now.Sub(t).Round(time.Millisecond))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

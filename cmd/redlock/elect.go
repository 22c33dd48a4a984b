package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/quorumlock/quorumlock/election"
	"github.com/quorumlock/quorumlock/internal/defaults"
	"github.com/quorumlock/quorumlock/redlock"
)

const usageElect = `Usage: redlock elect [flags] NAME -- CMD [ARGS...]

Campaign in the election NAME, waiting as long as it takes; once leader, run
CMD while leading, and resign when CMD exits (so that another candidate
leads at once). CMD gets REDLOCK_KEY (NAME), REDLOCK_FENCE (the term's
fence: larger than every earlier leader's; send it with CMD's writes) and
REDLOCK_OWNER (the value) in its environment. The term is extended while CMD
runs.

If leadership is lost while CMD runs (too many nodes unreachable, or they
forgot it), CMD and everything it started get SIGTERM, then SIGKILL after
--grace, and redlock exits 4: run elect in a loop (a service manager's
restart) to campaign again. If redlock dies, CMD's unit is ended the same
way, and another candidate leads once the term's TTL has passed. SIGINT,
SIGTERM and SIGHUP abort the campaign (exit 128+N) or are passed on to CMD.

Flags:
  --value S      what redlock leader NAME shows while this term lasts
                 (default host/PID/elect CMD; at most 256 bytes of UTF-8,
                 no control characters)
  --ttl D        term's lock time to live (default 10s): how long others
                 wait for a leader that died
  --grace D      time between SIGTERM and SIGKILL (default 5s; keep it below --ttl)
  --prefix P     key prefix on the nodes (default "lock:")
  --nodes LIST   host:port,host:port,... (default $REDLOCK_NODES; required)
  --nodes-file F the node list from file F (one node per line, # comments):
                 keeps passwords off the command line, which ps shows;
                 a file that others may read gets a warning
  --single-node  allow a list of one node (quorum 1: it must never fail);
                 without it, one node is a usage error

Exit codes: CMD's own status when it exits while leading (128+N when killed
by signal N); 2 usage; 3 too few nodes reachable; 4 leadership lost while
CMD ran; 126/127 CMD not executable / not found; 128+N a signal while
campaigning.
`

func runElect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	a := &execArgs{}
	fs := newFlagSet("elect")
	durationFlag(fs, &a.ttl, "ttl", election.DefaultTTL, "term's lock time to live")
	durationFlag(fs, &a.grace, "grace", 5*time.Second, "time between SIGTERM and SIGKILL")
	fs.StringVar(&a.prefix, "prefix", defaults.KeyPrefix, "key prefix on the nodes")
	nodesFlags(fs, &a.nodes)
	fs.StringVar(&a.owner, "value", "", "the leader's value")
	name, argv, err := parseAroundKey(fs, "elect", usageElect, args, stdout)
	if err != nil {
		return err
	}
	a.key, a.argv = name, argv
	if err := checkElectArgs(a); err != nil {
		return err
	}
	path, err := exec.LookPath(a.argv[0])
	if err != nil {
		code := exitCannotExec
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = exitNotFound
		}
		return exitf(code, "redlock elect: %s: %v", a.argv[0], unwrapExecErr(err))
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	r, err := connect(ctx, "elect", a.nodes)
	if err != nil {
		return err
	}
	defer r.Close()
	client, err := redlock.New(r.nodes, redlock.WithKeyPrefix(a.prefix))
	if err != nil {
		return usageErr("elect", "%v", err)
	}
	defer client.Close()
	e, err := election.New(client, a.key, election.WithTTL(a.ttl))
	if err != nil {
		return usageErr("elect", "%v", err)
	}
	term, err := campaign(ctx, e, a.owner, sigs)
	if err != nil {
		return err
	}
	err = runLocked(ctx, term.Lock(), a, path, sigs, stderr)
	var ee *exitError
	if errors.As(err, &ee) { // runLocked speaks for exec
		ee.msg = strings.Replace(ee.msg, "redlock exec: lock ", "redlock elect: leadership of ", 1)
		ee.msg = strings.Replace(ee.msg, "redlock exec:", "redlock elect:", 1)
	}
	return err
}

// campaign waits for leadership, aborting on a signal.
func campaign(ctx context.Context, e *election.Election, value string, sigs <-chan os.Signal) (*election.Term, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var got os.Signal
	sigDone := make(chan struct{})
	go func() {
		defer close(sigDone)
		select {
		case got = <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	term, err := e.Campaign(ctx, value)
	cancel()
	<-sigDone
	switch {
	case got != nil:
		if term != nil { // a signal raced with the win
			releaseQuietly(term.Lock())
		}
		return nil, signalExit(got, "redlock elect: %s while campaigning in %q", got, e.Name())
	case err == nil:
		return term, nil
	case errors.Is(err, redlock.ErrInvalidArgument):
		return nil, usageErr("elect", "%v", err)
	default:
		return nil, exitf(exitUnreachable, "redlock elect: %v", err)
	}
}

// checkElectArgs checks elect's arguments and fills in the default value.
func checkElectArgs(a *execArgs) error {
	switch {
	case a.key == "" || a.key == "--":
		return usageErr("elect", "missing NAME")
	case len(a.argv) == 0:
		return usageErr("elect", "missing CMD after NAME %q", a.key)
	case a.ttl <= 0:
		return usageErr("elect", "--ttl %s is not positive", a.ttl)
	case a.grace < 0:
		return usageErr("elect", "--grace %s is negative (0 sends SIGKILL at once)", a.grace)
	}
	if a.owner == "" {
		a.owner = strings.Replace(execOwner(a.argv[0]), "/exec ", "/elect ", 1)
	}
	return nil
}

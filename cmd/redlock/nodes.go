package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/nodelist"
	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
)

// nodesEnv names the environment variable read when --nodes is not given.
const nodesEnv = nodelist.Env

// pingTimeout bounds the PING of every node at connect time.
const pingTimeout = 2 * time.Second

// nodeArgs are the node flags of a command: the list (--nodes or
// --nodes-file; REDLOCK_NODES when empty) and whether a one-node list is
// allowed (--single-node).
type nodeArgs struct {
	list   string
	single bool
}

// warnOut is where warnings about the node list go.
var warnOut io.Writer = os.Stderr

// nodesFlags registers --nodes LIST and --nodes-file FILE, which both set
// n.list (at most one of them may be given), and --single-node, and
// returns n. A file keeps passwords off the command line, where ps shows
// them to every user.
func nodesFlags(fs *flag.FlagSet, n *nodeArgs) *nodeArgs {
	given := false
	set := func(value string) error {
		if given {
			return errNodesTwice
		}
		given, n.list = true, value
		return nil
	}
	fs.Func("nodes", "host:port,host:port,...", set)
	fs.Func("nodes-file", "a file of nodes, one per line or comma-separated", func(path string) error {
		v, err := readNodesFile(path, fs.Name())
		if err != nil {
			return err
		}
		return set(v)
	})
	fs.BoolVar(&n.single, "single-node", false, "allow a list of one node (quorum 1: no node may fail)")
	return n
}

// errNodesTwice: --nodes or --nodes-file given twice. The flag package
// quotes the value in its message, which may hold a password: parse
// replaces that message with this one.
var errNodesTwice = errors.New("give the nodes once: --nodes or --nodes-file")

// readNodesFile reads a node list (see nodelist.ReadFile). A file that
// holds a password and that other users may read gets a warning, as cmd
// (e.g. "redlock exec") on warnOut.
func readNodesFile(path, cmd string) (string, error) {
	list, err := nodelist.ReadFile(path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 && nodelist.HasUserinfo(list) {
		fmt.Fprintf(warnOut, "%s: warning: %s holds a password and other users may read it (mode %04o): chmod 600 %s\n",
			cmd, path, fi.Mode().Perm(), path)
	}
	return list, nil
}

// nodeSpec returns the node list of --nodes, or of REDLOCK_NODES when the
// flag is empty.
func nodeSpec(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return os.Getenv(nodesEnv)
}

// parseNodes turns "host:port,host:port" (or redis:// URLs) into go-redis
// options, one per node, with the settings of a lock node's client
// (bounded replies, no retries of go-redis's own, context deadlines
// honoured; see nodelist.Safe). Nodes must be distinct, and the list has
// no empty entry.
func parseNodes(spec string) ([]*redis.Options, error) { return nodelist.Parse(spec) }

// nodeOptions reads the node list of n for cmd: from n.list or
// REDLOCK_NODES, parsed, and refused when it names one node without
// --single-node. A one-node list that is allowed gets a warning.
func nodeOptions(cmd string, n nodeArgs) ([]*redis.Options, error) {
	spec := nodeSpec(n.list)
	if spec == "" {
		return nil, usageErr(cmd, "no nodes: pass --nodes host:port,... or --nodes-file FILE, or set %s", nodesEnv)
	}
	opts, err := parseNodes(spec)
	if err != nil {
		return nil, usageErr(cmd, "%v", err)
	}
	if len(opts) == 1 {
		if !n.single {
			return nil, usageErr(cmd, "only one node (%s): a quorum of 1 does not survive that node's failure or restart; list 3 or 5 nodes, or pass --single-node to use one node anyway", opts[0].Addr)
		}
		fmt.Fprintf(warnOut, "redlock %s: warning: one node (%s), quorum 1: the lock does not survive that node's failure or restart\n", cmd, opts[0].Addr)
	}
	return opts, nil
}

// nodeErrText is why a node did not answer, in words: a refused password
// is not a node that is down.
func nodeErrText(err error) string {
	msg := err.Error()
	for _, p := range []string{"WRONGPASS", "NOAUTH", "ERR invalid password", "ERR AUTH", "ERR Client sent AUTH"} {
		if strings.HasPrefix(msg, p) {
			return "authentication failed (" + msg + ")"
		}
	}
	return msg
}

// remote is a set of connected Redis nodes.
type remote struct {
	clients []*redis.Client
	nodes   []node.Node
	up      []bool  // answered PING at connect time
	errs    []error // why a node is not up
}

func (r *remote) Close() {
	for _, c := range r.clients {
		_ = c.Close()
	}
}

func (r *remote) upCount() int {
	n := 0
	for _, u := range r.up {
		if u {
			n++
		}
	}
	return n
}

// connect builds one client per node and pings them all at once. It fails
// with exitUnreachable when fewer than a majority answer.
func connect(ctx context.Context, cmd string, n nodeArgs) (*remote, error) {
	opts, err := nodeOptions(cmd, n)
	if err != nil {
		return nil, err
	}
	redis.SetLogger(quietLogger{}) // go-redis prints every failed dial otherwise
	r := &remote{up: make([]bool, len(opts)), errs: make([]error, len(opts))}
	for _, o := range opts {
		c := redis.NewClient(o)
		r.clients = append(r.clients, c)
		r.nodes = append(r.nodes, redisnode.NewNamed(o.Addr, c))
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, c := range r.clients {
		wg.Go(func() {
			r.errs[i] = c.Ping(pctx).Err()
			r.up[i] = r.errs[i] == nil
		})
	}
	wg.Wait()
	if q := quorum.Of(len(opts)); r.upCount() < q {
		var why []string
		for i, e := range r.errs {
			if e != nil {
				why = append(why, fmt.Sprintf("%s: %s", opts[i].Addr, nodeErrText(e)))
			}
		}
		r.Close()
		return nil, exitf(exitUnreachable, "redlock %s: only %d of %d nodes reachable, need %d: %s",
			cmd, len(opts)-len(why), len(opts), q, strings.Join(why, "; "))
	}
	return r, nil
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/nodelist"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
)

// nodesEnv names the environment variable read when --nodes is not given.
const nodesEnv = nodelist.Env

// pingTimeout bounds the PING of every node at connect time.
const pingTimeout = 2 * time.Second

// nodesFlags registers --nodes LIST and --nodes-file FILE, which both set
// *list (at most one of them may be given), and returns list. A file keeps
// passwords off the command line, where ps shows them to every user.
func nodesFlags(fs *flag.FlagSet, list *string) *string {
	given := false
	set := func(value string) error {
		if given {
			return errNodesTwice
		}
		given, *list = true, value
		return nil
	}
	fs.Func("nodes", "host:port,host:port,...", set)
	fs.Func("nodes-file", "a file of nodes, one per line or comma-separated", func(path string) error {
		v, err := readNodesFile(path)
		if err != nil {
			return err
		}
		return set(v)
	})
	return list
}

// errNodesTwice: --nodes or --nodes-file given twice. The flag package
// quotes the value in its message, which may hold a password: parse
// replaces that message with this one.
var errNodesTwice = errors.New("give the nodes once: --nodes or --nodes-file")

// readNodesFile reads a node list file (see nodelist.ReadFile).
func readNodesFile(path string) (string, error) { return nodelist.ReadFile(path) }

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
// honoured; see nodelist.Safe). Nodes must be distinct.
func parseNodes(spec string) ([]*redis.Options, error) { return nodelist.Parse(spec) }

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
func connect(ctx context.Context, cmd, flagValue string) (*remote, error) {
	spec := nodeSpec(flagValue)
	if spec == "" {
		return nil, usageErr(cmd, "no nodes: pass --nodes host:port,... or --nodes-file FILE, or set %s", nodesEnv)
	}
	opts, err := parseNodes(spec)
	if err != nil {
		return nil, usageErr(cmd, "%v", err)
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
	if q := len(opts)/2 + 1; r.upCount() < q {
		var why []string
		for i, e := range r.errs {
			if e != nil {
				why = append(why, fmt.Sprintf("%s: %v", opts[i].Addr, e))
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

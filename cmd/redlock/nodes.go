package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
)

// nodesEnv names the environment variable read when --nodes is not given.
const nodesEnv = "REDLOCK_NODES"

// Timeouts of the go-redis clients: a dead node must fail fast, since the
// lock only needs a majority.
const (
	dialTimeout = time.Second
	ioTimeout   = time.Second
	pingTimeout = 2 * time.Second
)

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

// readNodesFile reads a node list: nodes separated by commas or newlines;
// blank lines and lines starting with '#' are skipped.
func readNodesFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var nodes []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			nodes = append(nodes, line)
		}
	}
	if len(nodes) == 0 {
		return "", fmt.Errorf("%s lists no nodes", path)
	}
	return strings.Join(nodes, ","), nil
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
// options, one per node. Nodes must be distinct.
func parseNodes(spec string) ([]*redis.Options, error) {
	var out []*redis.Options
	seen := map[string]bool{}
	for _, s := range strings.Split(spec, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		var opt *redis.Options
		if strings.Contains(s, "://") {
			o, err := redis.ParseURL(s)
			if err != nil {
				return nil, fmt.Errorf("node %q: %s", redactNode(s), parseErrorText(s, err))
			}
			opt = o
		} else {
			if strings.Contains(s, "@") { // a password would reach messages as the address
				return nil, fmt.Errorf("node %q: a user or password needs a URL, redis://user:password@host:port", redactNode(s))
			}
			host, port, err := net.SplitHostPort(s)
			if err != nil || host == "" || port == "" {
				return nil, fmt.Errorf("node %q is not host:port", redactNode(s))
			}
			opt = &redis.Options{Addr: s}
		}
		if seen[opt.Addr] {
			return nil, fmt.Errorf("node %s is listed twice; a quorum needs independent nodes", opt.Addr)
		}
		seen[opt.Addr] = true
		opt.DialTimeout = dialTimeout
		opt.ReadTimeout = ioTimeout
		opt.WriteTimeout = ioTimeout
		opt.DialerRetries = 1
		opt.MaxRetries = 1
		// Per-node timeouts of the lock client cut slow calls short.
		opt.ContextTimeoutEnabled = true
		out = append(out, opt)
	}
	if len(out) == 0 {
		return nil, errors.New("no nodes given")
	}
	return out, nil
}

// redactedUserinfo replaces a node address's user and password wherever
// redlock prints the address: a password on the command line or in
// REDLOCK_NODES must not reach logs.
const redactedUserinfo = "xxxxx"

// redactNode hides the userinfo of a node address ("redis://user:pw@h:p",
// or "user:pw@h:p" without a scheme): everything between the scheme and the
// last '@', as URL parsers take it.
func redactNode(s string) string {
	start, at := userinfoSpan(s)
	if at < 0 {
		return s
	}
	return s[:start] + redactedUserinfo + s[at:]
}

// userinfoSpan is where the userinfo of s starts and the index of the '@'
// that ends it; at is -1 when s has none.
func userinfoSpan(s string) (start, at int) {
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + len("://")
	}
	at = strings.LastIndex(s, "@")
	if at < start {
		return start, -1
	}
	return start, at
}

// parseErrorText is the parser's complaint about node s, without the URL
// it echoes, and replaced by a generic one when it still shows a piece of
// the userinfo (a password with a '/' in it, say, is misread as a host).
func parseErrorText(s string, err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	start, at := userinfoSpan(s)
	if at < 0 {
		return msg
	}
	for _, part := range strings.FieldsFunc(s[start:at], func(r rune) bool { return r == ':' || r == '/' }) {
		quoted := strconv.Quote(part)
		if strings.Contains(msg, part) || strings.Contains(msg, quoted[1:len(quoted)-1]) {
			return "not a valid redis:// URL (the parser's message would show the password)"
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
	if q := quorum.Of(len(opts)); r.upCount() < q {
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

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

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

// readNodesFile reads a node list: nodes separated by commas or newlines;
// blank lines and lines starting with '#' are skipped. A file that holds a
// password and that other users may read gets a warning, as cmd (e.g.
// "redlock exec") on warnOut.
func readNodesFile(path, cmd string) (string, error) {
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
	list := strings.Join(nodes, ",")
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 && hasUserinfo(list) {
		fmt.Fprintf(warnOut, "%s: warning: %s holds a password and other users may read it (mode %04o): chmod 600 %s\n",
			cmd, path, fi.Mode().Perm(), path)
	}
	return list, nil
}

// hasUserinfo says whether a node of list carries a user or password.
func hasUserinfo(list string) bool {
	for _, s := range strings.Split(list, ",") {
		if _, at := userinfoSpan(strings.TrimSpace(s)); at >= 0 {
			return true
		}
	}
	return false
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
// options, one per node. Nodes must be distinct, and the list has no empty
// entry: a stray comma is more likely a node left out than a style.
func parseNodes(spec string) ([]*redis.Options, error) {
	var out []*redis.Options
	seen := map[string]bool{}
	entries := strings.Split(spec, ",")
	for i, s := range entries {
		s = strings.TrimSpace(s)
		if s == "" {
			if strings.TrimSpace(spec) == "" {
				break // "no nodes given" below
			}
			return nil, fmt.Errorf("the node list has an empty entry (entry %d of %d): remove the stray comma", i+1, len(entries))
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
			opt = &redis.Options{Addr: s}
		}
		if err := checkAddr(opt.Addr); err != nil {
			return nil, fmt.Errorf("node %q %v", redactNode(s), err)
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

// checkAddr says what is wrong with a node's host:port, as the end of a
// sentence that starts with the node: a malformed address is the user's
// typing, not a node that is down.
func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	switch {
	case err != nil:
		return errors.New("is not host:port")
	case host == "":
		return errors.New("has no host (want host:port)")
	case strings.ContainsAny(host, " \t/"):
		return fmt.Errorf("has a malformed host %q", host)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return fmt.Errorf("has a malformed port %q (want a number from 1 to 65535)", port)
	}
	return nil
}

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
	if q := len(opts)/2 + 1; r.upCount() < q {
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

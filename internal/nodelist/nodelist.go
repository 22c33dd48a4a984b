// Package nodelist parses lists of Redis lock nodes ("host:port,..." or
// redis:// URLs, from a flag, a file or the environment) into go-redis
// options with the settings a lock node needs. The redlock command and
// redisnode.Dial share it.
package nodelist

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/wire"
)

// Env names the environment variable that holds a node list.
const Env = "REDLOCK_NODES"

// Timeouts of a node's client: a dead node must fail fast, since the lock
// only needs a majority. The lock's per-node timeouts (through the
// context) cut calls shorter still.
const (
	DialTimeout = time.Second
	IOTimeout   = time.Second
)

// Kinds of error. An error of Parse or ReadFile wraps one of them; its
// message is the detail alone, without the kind's text.
var (
	ErrNoNodes    = errors.New("no nodes")
	ErrBadAddress = errors.New("bad node address")
)

// Error is a parse error of one kind, whose message is its detail.
type Error struct {
	Kind error
	Msg  string
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

func fail(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// ReadFile reads a node list: nodes separated by commas or newlines; blank
// lines and lines starting with '#' are skipped. It returns the nodes
// joined by commas.
func ReadFile(path string) (string, error) {
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
		return "", fail(ErrNoNodes, "%s lists no nodes", path)
	}
	return strings.Join(nodes, ","), nil
}

// Parse turns "host:port,host:port" (or redis:// and rediss:// URLs) into
// go-redis options, one per node, with Safe applied. Nodes must be
// distinct. Messages never show a password.
func Parse(spec string) ([]*redis.Options, error) {
	var out []*redis.Options
	seen := map[string]bool{}
	entries := strings.Split(spec, ",")
	for i, s := range entries {
		s = strings.TrimSpace(s)
		if s == "" {
			if strings.Trim(spec, ", \t\n") == "" {
				break // only separators: "no nodes given" below
			}
			// A stray comma is more likely a node left out than a style.
			return nil, fail(ErrBadAddress, "the node list has an empty entry (entry %d of %d): remove the stray comma", i+1, len(entries))
		}
		var opt *redis.Options
		if strings.Contains(s, "://") {
			o, err := redis.ParseURL(s)
			if err != nil {
				return nil, fail(ErrBadAddress, "node %q: %s", Redact(s), parseErrorText(s, err))
			}
			opt = o
		} else {
			if strings.Contains(s, "@") { // a password would reach messages as the address
				return nil, fail(ErrBadAddress, "node %q: a user or password needs a URL, redis://user:password@host:port", Redact(s))
			}
			opt = &redis.Options{Addr: s}
		}
		if err := checkAddr(opt.Addr); err != nil {
			return nil, fail(ErrBadAddress, "node %q %v", Redact(s), err)
		}
		if seen[opt.Addr] {
			return nil, fail(ErrBadAddress, "node %s is listed twice; a quorum needs independent nodes", opt.Addr)
		}
		seen[opt.Addr] = true
		Safe(opt)
		out = append(out, opt)
	}
	if len(out) == 0 {
		return nil, fail(ErrNoNodes, "no nodes given")
	}
	return out, nil
}

// checkAddr says what is wrong with a host:port, or nil.
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

// HasUserinfo says whether a node of list (comma-separated) carries a user
// or password.
func HasUserinfo(list string) bool {
	for _, s := range strings.Split(list, ",") {
		if _, at := userinfoSpan(strings.TrimSpace(s)); at >= 0 {
			return true
		}
	}
	return false
}

// Safe sets the options a lock node's client needs:
//   - replies bounded by wire.BoundedDialer (over TLS with o.TLSConfig when
//     set), so that a node announcing a huge reply fails alone instead of
//     killing the process;
//   - no retries of go-redis's own (MaxRetries -1, one dial attempt per
//     connection): the lock retries per its own policy, and retries below it
//     multiply its delays;
//   - the context's deadline honoured (ContextTimeoutEnabled), so that the
//     lock's per-node timeout bounds every call;
//   - dial, read and write timeouts of DialTimeout and IOTimeout.
func Safe(o *redis.Options) {
	o.Dialer = wire.BoundedDialer(&net.Dialer{Timeout: DialTimeout}, o.TLSConfig)
	o.DialTimeout = DialTimeout
	o.ReadTimeout = IOTimeout
	o.WriteTimeout = IOTimeout
	o.MaxRetries = -1
	o.DialerRetries = 1
	o.ContextTimeoutEnabled = true
}

// redacted replaces a node address's user and password wherever it is
// shown: a password in a flag or in REDLOCK_NODES must not reach logs.
const redacted = "xxxxx"

// Redact hides the userinfo of a node address ("redis://user:pw@h:p", or
// "user:pw@h:p" without a scheme): everything between the scheme and the
// last '@', as URL parsers take it.
func Redact(s string) string {
	start, at := userinfoSpan(s)
	if at < 0 {
		return s
	}
	return s[:start] + redacted + s[at:]
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

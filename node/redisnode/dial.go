package redisnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/nodelist"
	"github.com/quorumlock/quorumlock/node"
)

// Nodes are the nodes built by Dial, DialFile or DialEnv, one per server,
// in the order listed. Pass them to redlock.New, and Close them after the
// redlock.Client.
type Nodes []node.Node

// Close closes the go-redis clients of the nodes. Call it after closing
// the redlock.Client that uses them.
func (ns Nodes) Close() error {
	var errs []error
	for _, n := range ns {
		if rn, ok := n.(*Node); ok {
			if c, ok := rn.client.(io.Closer); ok {
				errs = append(errs, c.Close())
			}
		}
	}
	return errors.Join(errs...)
}

// DialOption configures Dial, DialFile and DialEnv.
type DialOption func(*dialConfig)

type dialConfig struct {
	single bool
	onDial func(addr string) // tests count dials with it
}

// AllowSingleNode accepts a list of one node. Default: refused with
// ErrSingleNode, since one server is no quorum: when it fails or loses
// its data, the lock fails open or closed. Use it for development only.
func AllowSingleNode() DialOption { return func(c *dialConfig) { c.single = true } }

// Dial returns one node per server of list: "host:port,host:port,..." or
// redis:// and rediss:// URLs (for a password, a database or TLS), separated
// by commas. It does no I/O: connections open on first use.
//
// Each node's go-redis client has the settings a lock node needs, which a
// plain redis.NewClient lacks:
//   - replies bounded by BoundedDialer (over TLS for rediss:// URLs), so
//     that a node that announces a huge reply fails alone instead of
//     killing the process;
//   - no retries of go-redis's own (MaxRetries -1, one dial attempt): the
//     lock retries per its own policy, and retries below it multiply its
//     delays;
//   - the context's deadline honoured (ContextTimeoutEnabled), so that the
//     lock's per-node timeout bounds every call; dial, read and write
//     timeouts of 1 s.
//
// It fails with an error wrapping ErrNoNodes (an empty list), ErrBadAddress
// (a node that does not parse, or one listed twice) or ErrSingleNode (one
// node, without AllowSingleNode). Messages never show a password.
func Dial(list string, opts ...DialOption) (Nodes, error) {
	var c dialConfig
	for _, o := range opts {
		o(&c)
	}
	ros, err := nodelist.Parse(list)
	if err != nil {
		return nil, exported(err)
	}
	if len(ros) == 1 && !c.single {
		return nil, fmt.Errorf("%w: %s is the only node listed (AllowSingleNode accepts it)", ErrSingleNode, ros[0].Addr)
	}
	ns := make(Nodes, 0, len(ros))
	for _, o := range ros {
		if c.onDial != nil {
			dial, hook := o.Dialer, c.onDial
			o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
				hook(addr)
				return dial(ctx, network, addr)
			}
		}
		ns = append(ns, NewNamed(o.Addr, redis.NewClient(o)))
	}
	return ns, nil
}

// DialFile is Dial on the nodes listed in the file at path: separated by
// commas or newlines; blank lines and lines starting with '#' are
// skipped. Keep passwords there rather than on a command line. It fails
// like Dial, or with the error of reading the file.
func DialFile(path string, opts ...DialOption) (Nodes, error) {
	list, err := nodelist.ReadFile(path)
	if err != nil {
		return nil, exported(err)
	}
	return Dial(list, opts...)
}

// DialEnv is Dial on the nodes of the environment variable REDLOCK_NODES,
// which the redlock command reads too. It fails with an error wrapping
// ErrNoNodes when the variable is unset or empty, and otherwise like Dial.
func DialEnv(opts ...DialOption) (Nodes, error) {
	list := os.Getenv(nodelist.Env)
	if list == "" {
		return nil, fmt.Errorf("%w: %s is not set (host:port,host:port,...)", ErrNoNodes, nodelist.Env)
	}
	return Dial(list, opts...)
}

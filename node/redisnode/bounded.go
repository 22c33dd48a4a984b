package redisnode

import (
	"context"
	"crypto/tls"
	"net"

	"github.com/quorumlock/quorumlock/internal/respguard"
)

// replyLimits are BoundConn's, over one reply with all it nests: 8 MiB of
// strings, 131072 elements (two per map pair). A lock's replies are far
// below them; nesting is bounded too, since each level counts.
var replyLimits = respguard.Limits{Bulk: 8 << 20, Elements: 1 << 17}

// BoundConn wraps a connection to a node so that a reply announcing more
// than 8 MiB of strings or 131072 elements, all nested levels counted,
// fails the read with ErrReplyTooLong. Redis clients allocate an announced length before
// reading it: without the bound, a node (or anything at its address) that
// sends "$100000000000000" makes go-redis ask for 100 TB, a fatal error
// that no recover catches. Use it, through BoundedDialer, for the clients
// of lock nodes, not for clients that fetch larger values.
func BoundConn(c net.Conn) net.Conn { return respguard.New(c, replyLimits) }

// BoundedDialer is a go-redis Options.Dialer whose connections are bound
// by BoundConn: it dials with d (a zero Dialer when nil) and, when
// tlsConfig is not nil, over TLS with it (a custom Dialer replaces
// go-redis's own TLS dialing, so pass Options.TLSConfig here too).
func BoundedDialer(d *net.Dialer, tlsConfig *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if d == nil {
		d = &net.Dialer{}
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		var err error
		if tlsConfig != nil {
			c, err = (&tls.Dialer{NetDialer: d, Config: tlsConfig}).DialContext(ctx, network, addr)
		} else {
			c, err = d.DialContext(ctx, network, addr)
		}
		if err != nil {
			return nil, err
		}
		return BoundConn(c), nil
	}
}

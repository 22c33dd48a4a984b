package wire

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

// BoundConn bounds the replies read from c by replyLimits (see
// redisnode.BoundConn, which documents the bound for users).
func BoundConn(c net.Conn) net.Conn { return respguard.New(c, replyLimits) }

// BoundedDialer dials with d (a zero Dialer when nil), over TLS when
// tlsConfig is not nil, and bounds the connection by BoundConn: the dialer
// of redisnode.BoundedDialer and rueidisnode.BoundedDial.
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

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
// of redisnode.BoundedDialer.
func BoundedDialer(d *net.Dialer, tlsConfig *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return dialer(d, tlsConfig, BoundConn)
}

// OrderedBoundConn bounds c as BoundConn does, and also fails the read of
// a reply that no command written on c asked for: rueidis panics on its
// own goroutine on one, out of any caller's reach.
func OrderedBoundConn(c net.Conn) net.Conn { return respguard.NewOrdered(c, replyLimits) }

// OrderedBoundedDialer is BoundedDialer with OrderedBoundConn: the dialer
// of rueidisnode.BoundedDial.
func OrderedBoundedDialer(d *net.Dialer, tlsConfig *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return dialer(d, tlsConfig, OrderedBoundConn)
}

func dialer(d *net.Dialer, tlsConfig *tls.Config, bound func(net.Conn) net.Conn) func(ctx context.Context, network, addr string) (net.Conn, error) {
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
		return bound(c), nil
	}
}

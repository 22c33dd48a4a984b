package redisnode

import (
	"context"
	"crypto/tls"
	"net"

	"github.com/quorumlock/quorumlock/internal/wire"
)

// BoundConn wraps a connection to a node so that a reply announcing more
// than 8 MiB of strings or 131072 elements, all nested levels counted,
// fails the read with ErrReplyTooLong. Redis clients allocate an announced length before
// reading it: without the bound, a node (or anything at its address) that
// sends "$100000000000000" makes go-redis ask for 100 TB, a fatal error
// that no recover catches. Use it, through BoundedDialer, for the clients
// of lock nodes, not for clients that fetch larger values.
func BoundConn(c net.Conn) net.Conn { return wire.BoundConn(c) }

// BoundedDialer is a go-redis Options.Dialer whose connections are bound
// by BoundConn: it dials with d (a zero Dialer when nil) and, when
// tlsConfig is not nil, over TLS with it (a custom Dialer replaces
// go-redis's own TLS dialing, so pass Options.TLSConfig here too).
func BoundedDialer(d *net.Dialer, tlsConfig *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return wire.BoundedDialer(d, tlsConfig)
}

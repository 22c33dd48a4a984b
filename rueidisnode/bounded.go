package rueidisnode

import (
	"context"
	"crypto/tls"
	"net"

	"github.com/quorumlock/quorumlock/internal/wire"
)

// BoundedDial is a rueidis ClientOption.DialCtxFn whose connections are
// bound by redisnode.BoundConn: a reply that announces more than 8 MiB of
// strings or 131072 elements, nested levels counted, fails with
// node.ErrReplyTooLong
// instead of being allocated (rueidis would panic on its own goroutine,
// out of any caller's reach, or run out of memory). A reply that no
// command asked for (a server answering a command twice) closes the
// connection too, as rueidis would panic on it the same way: the node's
// commands on that connection fail, and only them. It dials with d, over
// TLS when tlsConfig is not nil.
func BoundedDial(ctx context.Context, dst string, d *net.Dialer, tlsConfig *tls.Config) (net.Conn, error) {
	return wire.OrderedBoundedDialer(d, tlsConfig)(ctx, "tcp", dst)
}

package rueidisnode_test

import (
	"net"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/nodetest"
	"github.com/quorumlock/quorumlock/rueidisnode"
)

// Whatever a server answers, each operation of the rueidis node over a
// client dialing with BoundedDial returns, and no panic is raised, in
// rueidis or in this package. (Without the bound, rueidis panics on its
// reader goroutine on a length it cannot allocate, and on a reply nobody
// asked for, which BoundedDial refuses too.) The server sends all the
// fuzzed bytes, several replies among them, as the go-redis fuzz does.
func FuzzRueidisReplies(f *testing.F) {
	nodetest.FuzzReplies(f, func(t testing.TB, addr string) node.Node {
		rc, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress:       []string{addr},
			ForceSingleClient: true,
			DisableCache:      true,
			DisableRetry:      true,
			Dialer:            net.Dialer{Timeout: 5 * time.Second},
			DialCtxFn:         rueidisnode.BoundedDial,
		})
		if err != nil {
			t.Skipf("no client: %v", err)
		}
		t.Cleanup(rc.Close)
		return rueidisnode.New(rc)
	}, func(string) bool { return false }, false)
}

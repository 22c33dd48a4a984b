package rueidisnode_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/nodetest"
	"github.com/quorumlock/quorumlock/rueidisnode"
)

// Whatever a server answers, each operation of the rueidis node returns,
// and no panic is raised, in rueidis or in this package.
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
	}, func(stack string) bool {
		return strings.HasPrefix(nodetest.PanicSite(stack), "github.com/redis/rueidis")
	})
}

package rueidisnode_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/rueidisnode"
)

// A node over one Redis server; the quorum client takes one such node per
// independent server. (No Output: it needs the server.)
func Example() {
	rc, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{"10.0.0.1:6379"},
		ForceSingleClient: true,
		DisableCache:      true,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	var n node.Node = rueidisnode.New(rc)

	ctx := context.Background()
	r, err := n.Acquire(ctx, node.AcquireArgs{Name: "lock:{report}", Token: "random-128-bit-token", TTL: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("acquired:", r.Acquired, "fence:", r.Fence)
}

package rueidisnode_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/rueidisnode"
)

// A Client over five independent Redis servers, each reached through its
// own rueidis client. (No Output: it needs the servers.)
func Example() {
	addrs := []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379", "10.0.0.4:6379", "10.0.0.5:6379"}
	var nodes []redlock.Node
	for _, addr := range addrs {
		rc, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress:       []string{addr},
			ForceSingleClient: true,
			DisableCache:      true,
		})
		if err != nil {
			log.Fatal(err)
		}
		defer rc.Close()
		nodes = append(nodes, rueidisnode.New(rc))
	}
	locks, err := redlock.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()

	ctx := context.Background()
	lock, err := locks.Acquire(ctx, "report:daily", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = lock.Release(ctx) }()
	fmt.Println("holding", lock.Key(), "with fence", lock.Fence())
}

package redisnode_test

import (
	"context"
	"log"
	"time"

	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
)

// The nodes of REDLOCK_NODES (host:port,host:port,...), with bounded
// replies and no retries below the lock's own.
func ExampleDialEnv() {
	nodes, err := redisnode.DialEnv() // or Dial("h1:6379,h2:6379,h3:6379"), DialFile(path)
	if err != nil {
		log.Fatal(err) // ErrNoNodes, ErrBadAddress, ErrSingleNode
	}
	defer nodes.Close()
	locks, err := redlock.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()

	err = locks.Do(context.Background(), "report", 10*time.Second, func(ctx context.Context) error {
		return nil // the work
	})
	if err != nil {
		log.Fatal(err)
	}
}

package main

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
)

// serverCalls sums the commands the nodes have executed, as INFO
// commandstats counts them: commands run inside scripts included, the
// harness's own INFO left out. The delta over a batch divided by its cycles
// is the server's commands per cycle.
func serverCalls(ctx context.Context, nodes []*redis.Client) (int64, error) {
	var total int64
	for i, c := range nodes {
		info, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			return 0, fmt.Errorf("node %d: INFO commandstats: %w", i, err)
		}
		total += harness.CommandCalls(info, "info")
	}
	return total, nil
}

// Command cron is seed system 000: a job scheduled on every replica of a
// service runs on exactly one of them per tick, however short the job.
// Three replicas' schedulers fire 100 times with an instant job: two at the
// same moment, the third once they are done (-late=false: all together).
// Each claims the tick with package tick.
//
//	go run ./cron                  # 3 replicas x 100 ticks on 5 redis-server nodes it starts
//	go run ./cron -plain-lock      # broken on purpose: a lock released at the end, no tick record
//	go run ./cron -nodes 0         # no nodes configured: the single-instance mode, logged
//	go run ./cron -addrs h1:6379,h2:6379,h3:6379   # on nodes of your own
//
// It starts its own nodes, as make example says: an exported REDLOCK_NODES
// is not read (it names the nodes of redlock, the command line tool, and a
// test of this example must not run on a deployment's nodes by accident).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/quorumlock/quorumlock/examples/internal/seed"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/redis/go-redis/v9"
)

func main() {
	replicas := flag.Int("replicas", 3, "replicas (schedulers)")
	ticks := flag.Int("ticks", 100, "ticks")
	nodes := flag.Int("nodes", 5, "redis-server nodes to start when -addrs is not given; 0: none configured")
	addrs := flag.String("addrs", "", "host:port,host:port,...: run on these nodes instead of starting its own")
	late := flag.Bool("late", true, "the last replica fires after the others are done")
	plain := flag.Bool("plain-lock", false, "broken on purpose: a plain lock released at the end, no tick record")
	flag.Parse()
	run := strategy(oncePerTick)
	if *plain {
		run = plainLock
	}
	if os.Getenv("REDLOCK_NODES") != "" && *addrs == "" {
		fmt.Println("cron: REDLOCK_NODES ignored; pass -addrs to run on nodes of your own")
	}
	if err := runCron(*replicas, *ticks, *nodes, *addrs, *late, run); err != nil {
		fmt.Fprintln(os.Stderr, "cron:", err)
		os.Exit(1)
	}
}

func runCron(nReplicas, ticks, nNodes int, addrs string, late bool, run strategy) error {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var newNodes func() []node.Node
	switch {
	case addrs != "":
		newNodes = func() []node.Node {
			var ns []node.Node
			for _, a := range strings.Split(addrs, ",") {
				ns = append(ns, redisnode.New(redis.NewClient(&redis.Options{Addr: a, ContextTimeoutEnabled: true})))
			}
			return ns
		}
		fmt.Printf("cron: %d replicas on the nodes %s\n", nReplicas, addrs)
	case nNodes > 0:
		env, err := seed.Start(ctx, nNodes, false)
		if err != nil {
			return err
		}
		defer env.Close()
		newNodes = env.Nodes
		fmt.Printf("cron: %d replicas, %d redis-server nodes started on %v\n", nReplicas, nNodes, env.Redis.Addrs())
	default:
		newNodes = func() []node.Node { return nil }
	}
	var rs []replica
	for i := range nReplicas {
		name := fmt.Sprintf("replica-%d", i+1)
		c, single, err := newLockClient(newNodes(), name, logger)
		if err != nil {
			return err
		}
		defer c.Close()
		if single {
			fmt.Printf("cron: %s runs in single-instance mode: every replica runs every tick\n", name)
		}
		rs = append(rs, replica{name: name, client: c})
	}
	res := runSchedulers(ctx, rs, ticks, "penalties", late, run)
	fmt.Println("cron:", res)
	for name, err := range res.Errors {
		fmt.Printf("cron: %s: %v\n", name, err)
	}
	if res.exactlyOnce() != ticks || len(res.Errors) > 0 {
		return fmt.Errorf("not exactly one run per tick, or errors")
	}
	return nil
}

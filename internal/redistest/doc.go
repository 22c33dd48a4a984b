// Package redistest starts real, independent redis-server nodes for tests,
// benchmarks and chaos runs of the Redlock implementation.
//
// Every node is a separate server (no replication, no cluster mode) on its
// own free loopback port, started with persistence disabled, so a restarted
// node always comes back empty — exactly the failure Redlock has to survive.
//
// StartShardedT (and StartSharded) is the exception: a real Redis Cluster
// of masters, one per shard, with the slots split evenly among them; its
// RestartEmpty brings a shard back empty but still serving its slots.
//
// In a test:
//
//	c := redistest.StartT(t, 5) // skipped if redis-server is missing
//	clients := c.Clients()
//	c.Nodes()[0].Kill()
//
// Programs (benchmarks, chaos runs) use Start and must call Cluster.Close:
//
//	c, err := redistest.Start(ctx, 5, redistest.Options{})
//	if err != nil { ... }
//	defer c.Close()
//
// Node methods (Kill, Restart, RestartAfter, Pause, Resume, ...) are safe for
// concurrent use, so chaos goroutines can inject faults while workers run.
// Clients returned by Node.Client and Cluster.Clients are long-lived: they
// reconnect after a restart and are closed by Cluster.Close. They honour
// context deadlines (ContextTimeoutEnabled), so per-call timeouts work even
// against a paused node. They dial once per attempt (DialerRetries=1) so a
// killed node fails in milliseconds; MaxRetries keeps the go-redis default.
//
// go-redis opens a per-client circuit breaker after PoolSize failed dials and
// then re-probes only once a second. Restart therefore waits until the node's
// client (if one was handed out) answers PING again, so "Restart returned"
// means both the server and Node.Client work. go-redis logs every failed dial
// to stderr: StartT routes its logger into a buffer whose lines a failing test
// shows (RedisLogsOnFailure); call CaptureRedisLogs before the tests run to keep them
// off the output of tests that use no cluster, and DiscardRedisLogs in a
// chaos or bench program. redis-server log tails, too, are shown only for a
// failing test.
//
// Environment variables:
//
//   - REDLOCK_TEST_BACKEND: "process" (default) runs redis-server binaries
//     directly; "docker" runs one redis:7-alpine container per node, when the
//     container backend (the module internal/redistest/docker, kept out of
//     the library's go.mod) is linked into the binary with a blank import.
//     Used when Options.Backend is empty.
//   - REDIS_SERVER: path to the redis-server binary, used when
//     Options.RedisServer is empty; otherwise redis-server is looked up in PATH.
//   - CI: when "true", StartT fails the test instead of skipping it if
//     redis-server is missing, so CI can never silently skip the suite.
//
// Install the binary on Debian/Ubuntu with: apt-get install -y redis-server.
package redistest

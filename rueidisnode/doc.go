// Package rueidisnode is a node.Node over github.com/redis/rueidis, the
// Redis organisation's client that pipelines concurrent commands to a
// server into one write and allocates little per command.
//
// It is a module of its own (github.com/quorumlock/quorumlock/rueidisnode),
// so that rueidis never reaches users of the root module who do not use it.
//
// A Node runs the very same Lua scripts as the go-redis redisnode.Node
// (same text, same SHA-1 on the server, same semantics), by
// EVALSHA with an EVAL fallback when the server answers NOSCRIPT (it
// restarted and lost its script cache). Locks taken through one kind of
// node can be extended, released and inspected through the other, so a
// deployment can mix them. Extend sends all ops of a batch in one DoMulti
// (one pipelined write). It implements node.ReadWriter (package rwlock)
// with the same read-write scripts, one script call per extension. Subscribe listens on a dedicated connection of the
// client (Client.Dedicate, Pub/Sub hooks), pings it when idle, reports each
// break and restoration, and subscribes again after a break.
//
// Give each Node a client to one independent server, made with
// rueidis.ClientOption{InitAddress: []string{addr}}; ForceSingleClient
// spares the client a cluster probe, and DisableCache is needed for servers
// without RESP3 client tracking. The caller owns the clients and closes
// them after the quorum client. Every call ends when its context does
// (rueidis honours deadlines), so per-node timeouts apply.
//
// Client options measured on a 2-core machine (bench/ qlbench):
// AlwaysPipelining: true costs less CPU per acquire + release than
// rueidis's default, which writes synchronously until requests overlap on
// a connection (a quorum client's fan-out makes them overlap sooner or
// later anyway). MaxFlushDelay (e.g. 20µs) lets many goroutines' commands
// share one write: +25-40 % cycles/s with 16 goroutines, about -10 % for a
// single goroutine.
//
// Scripts are sent without rueidis's retries (rueidis.NewLuaScript): a
// command whose connection broke fails at once and the quorum client
// counts the node as failed for that call.
package rueidisnode

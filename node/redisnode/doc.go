// Package redisnode is the node.Node of one independent Redis server,
// reached through a go-redis client the caller owns: each call is one Lua
// script (the sources are shared with the rueidis node, so a lock taken
// through one is seen by the other), sent by EVALSHA with EVAL after
// NOSCRIPT. It implements every optional capability of package node.
// BoundedDialer keeps a lying server's reply lengths from exhausting the
// client's memory. Dial, DialFile and DialEnv build the nodes of a list of
// servers ("host:port,..." or redis:// URLs, as the redlock command reads
// them) with BoundedDialer and the other settings a lock node's client
// needs.
package redisnode

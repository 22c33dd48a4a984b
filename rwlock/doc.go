// Package rwlock is a read-write lock over a quorum of independent nodes:
// any number of readers (shared holders) or one writer (the exclusive
// holder) per key, with writer preference, fences, loss signals and
// automatic extension.
//
//	c, err := rwlock.New(nodes)           // redisnode.Node, memnode.Node or rueidisnode nodes
//	err = c.RDo(ctx, "schema", ttl, read)  // as a reader
//	err = c.Do(ctx, "schema", ttl, write)  // as the writer
//	l, err := c.RLock(ctx, "schema", ttl)  // or hold a *redlock.Lock yourself
//
// It is redlock's quorum client run on the nodes' read-write calls
// (node.ReadWriter), so readers and writers follow the mutex's rules:
// each attempt is one quorum round with a random token, and a lock is
// valid for ttl minus the time the attempt took and the clock drift;
// extension needs a majority that still holds the token; Release deletes
// only that token; every handle is a *redlock.Lock with its own expiry,
// Extend, KeepAlive, Done, Err and Release. The options are redlock's.
//
// # A writer never overlaps a reader
//
// While a writer holds the lock, no reader and no other writer does: each
// node refuses a reader while a writer's key is there and a writer while a
// reader's entry is there, and any two majorities share a node
// (docs/design.md gives the argument). The limits are the mutex's: a node
// that restarts without its data forgets the readers and writers it
// recorded, and can then hand the lock to the other side. Restart nodes no
// sooner than the largest TTL in use, or run them with persistence. A
// holder paused past its validity (a GC pause) can still act late: use the
// fences.
//
// # Writer preference
//
// A writer refused because readers hold the lock leaves an intent on
// those nodes, for the ttl of its attempt, and nodes refuse new readers
// while it is there; readers already in keep their lock and extensions.
// Once the intent is on a majority no new reader can get in, so a writer
// waits for the readers in at that moment, not for a stream of them. A
// writer that gives up keeps new readers out for at most the ttl of its
// last attempt. Waiting writers among themselves are not ordered. A writer
// and a reader that split the nodes resolve it as two writers do.
//
// # Fences
//
// A writer's Fence is greater than every earlier writer's and every
// earlier reader's (writers count on the key's fence counter, the one the
// mutex of the same key uses). A reader's Fence is at least the fence of
// every writer that held the lock before the reader, and below the fence
// of every writer after it, also after data loss under redlock's
// conditions for fences. It is not necessarily the last writer's own
// fence: use it to order a reader among the writers, not to name the last
// writer.
//
// # Limits
//
// The read-write lock of a key and the mutex (package redlock) of the
// same key are two locks: they do not exclude each other. Lock.TookOver
// always reports false (read-write locks leave no trail), and `redlock ls`
// does not list them. A release wakes one waiter per key and Client, as
// for the mutex: other readers of the same Client waiting for a writer
// try again on their retry delay or the writer's expiry.
package rwlock

// Package rwlock is a read-write lock over a quorum of independent nodes:
// any number of readers (shared holders) or one writer (the exclusive
// holder) per key, with writer preference, fences, loss signals and
// automatic extension.
//
//	c, err := rwlock.New(nodes)           // node.Redis, node.Memory or rueidisnode nodes
//	err = c.RDo(ctx, "schema", ttl, read)  // as a reader
//	err = c.Do(ctx, "schema", ttl, write)  // as the writer
//	l, err := c.RLock(ctx, "schema", ttl)  // or hold a *redlock.Lock yourself
//
// It is redlock's quorum client run on the nodes' read-write calls
// (node.ReadWriter), so readers and writers follow the mutex's rules:
// each attempt is one quorum round with a random token, and a lock is
// valid for ttl minus the time the attempt took and the clock drift; extension needs a majority
// that still holds the token; Release deletes only that token; every
// handle is a *redlock.Lock with its own expiry, Extend, KeepAlive, Done,
// Err and Release. The options are redlock's.
//
// # Why a writer never overlaps a reader
//
// A reader holds the lock when a majority of nodes recorded its token
// among the readers, each node refusing it while a writer's key is there;
// a writer holds it when a majority set its key, each node refusing it
// while a reader's entry is there. Two majorities of the same nodes share
// at least one node, and each node decides atomically, so on that node
// whichever came second was refused. Both keep the lock only while their
// validity lasts, which ends before their entries expire on the nodes (the
// drift), and an extension counts only on nodes that still hold the token.
// Writers exclude each other by the same argument. TestNoReaderMeetsWriter
// checks it on real nodes; the chaos scenario rwlock checks it under
// killed, paused and restarted nodes.
//
// The limits are the mutex's: a node that restarts without its data
// forgets the readers and writers it recorded, and can then hand the lock
// to the other side. Restart nodes no sooner than the largest TTL in use,
// or run them with persistence. The chaos scenario rwlock restarts nodes
// only that late; what an immediate restart does to the mutex is shown by
// the chaos scenario restart-immediate, and it is not run for this lock.
// A holder paused past its validity (a GC pause) can still act late:
// use the fences.
//
// # Writer preference
//
// A writer refused because readers hold the lock leaves an intent on
// those nodes, for the ttl of its attempt, and nodes refuse new readers
// while it is there; readers already in keep their lock and extensions.
// Once the intent is on a majority no new reader can get in, so a writer
// waits for the readers in at that moment, not for a stream of them. The
// intent stays until it expires or a writer gets in on the node: a failed
// attempt's cleanup leaves it, and a reader not yet in is refused by it,
// also when asking again after a split-vote round. A writer that gives up
// keeps new readers out for at most the ttl of its last attempt. Waiting
// writers among themselves are not ordered. A writer and a reader that
// split the nodes compare the same two ids (the writer is told of the
// smallest reader's), so exactly one keeps its nodes, as between writers.
//
// # Fences
//
// Writers count on the key's fence counter (the one the mutex of the same
// key uses): a writer's Fence is greater than every earlier writer's and
// every earlier reader's. A reader's Fence is the counter as its majority
// saw it: at least the fence of every writer that held the lock before the
// reader, and below the fence of every writer after it
// (TestNoReaderMeetsWriter and TestFences check both). A reader that finds
// no counter (a new key, or data lost) starts it from the clock as a
// writer does, so the bound holds after data loss under redlock's
// conditions for fences. It is often the last writer's fence, and larger
// when a writer's failed attempt counted on some nodes in between or a
// node that answered the writer late counted higher, so use it to order a
// reader among the writers, not to name the last writer.
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

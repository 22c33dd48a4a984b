// Package multilock locks several keys as one, all or nothing, over the
// same quorum of independent Redis nodes as package redlock: a file set and
// its documents, two accounts of a transfer, the rows of a batch.
//
//	err := multilock.Do(ctx, locks, []string{"account:7", "account:3"}, 10*time.Second,
//		func(ctx context.Context) error {
//			set, _ := multilock.FromContext(ctx)
//			return transfer(ctx, set.Fence("account:3"), set.Fence("account:7"))
//		})
//
// # How
//
// A set is one redlock mutex per key. Acquire sorts the keys (byte order)
// and drops duplicates, then takes them one after the other with the
// client's Acquire, which waits per the client's retry policy and wakes on
// release notifications. Each key is kept alive by the client's watchdog
// from the moment it is taken until Release, so the first key does not
// expire while the last is awaited; a key lost meanwhile ends the
// acquisition with redlock.ErrLockLost. If a key cannot be taken, the keys
// already taken are released and Acquire returns that key's error. Each key
// has its own fence (Lock.Fence). Extend extends every key at once and
// returns nil only when all were extended. Losing any key ends the whole
// set: Done closes, Err and the cause of Context wrap redlock.ErrLockLost
// and name the key, and the other keys are released at once.
//
// Keys are written per key, one quorum round each, even when they share a
// Redis Cluster slot: a set of k keys costs k sequential acquire rounds and
// k parallel release (or Extend) rounds.
//
// # Overlapping sets cannot deadlock
//
// Every client takes its keys in the same total order and waits only for a
// key larger than every key it holds, so waits cannot form a cycle: two sets
// that overlap, whatever order their keys are given in, cannot deadlock.
// Nor livelock: a client does not give up a key because another wants it;
// keys are released only by Release, by a loss, or when an Acquire gives up
// after its retry policy is used up. (docs/design.md gives the argument.)
//
// # Limits
//
// A set is held while each of its locks is: the set's validity is the
// earliest of theirs (ValidUntil). Within one Client, waiters queue per key
// in arrival order; across clients there is no global queue, so a set
// waiting for a hot key can wait as long as the retry policy allows and
// then fail with redlock.ErrNotAcquired, releasing what it took.
package multilock

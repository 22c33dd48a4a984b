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
// from the moment it is taken (so that the first key does not expire while
// the last is awaited: TestEarlierKeyKeptWhileWaiting) until Release; a key
// lost meanwhile ends the acquisition with redlock.ErrLockLost
// (TestEarlierKeyLostWhileWaiting). If a key cannot be taken, the keys
// already taken are released and Acquire returns that key's error. Each key
// has its own fence (Lock.Fence). Losing any key ends the whole set: Done
// closes, Err and the cause of Context wrap redlock.ErrLockLost and name the
// key, and the other keys are released at once.
//
// Keys are written per key, one quorum round each: the keys of a set are
// not batched into one script call per node even when they share a Redis
// Cluster slot (the issue allowed it; it is not done). A set of k keys
// costs k sequential acquire rounds and k parallel release rounds.
//
// # Why two overlapping sets cannot deadlock
//
// Every client takes its keys in the same total order and waits only for
// the next key of its set, which is larger than every key it holds. Draw an
// edge from each waiting client to the holder of the key it waits for: the
// holder holds that key, so the key it waits for itself (if any) is larger
// still. Along any path the awaited keys strictly increase, so there is no
// cycle: some client at the end of every path waits for nobody, and it
// either completes its set or takes its next key. Its keys do not expire
// under it (they are kept alive), so it is never pushed back.
//
// Nor livelock: a client does not give up a key because another wants it
// (no back-off and retry from scratch, which is where livelock comes from
// with try-lock-all schemes); keys are released only by Release, by a
// loss, or when an Acquire gives up after its retry policy is used up.
// Waiters of one Client for one key are woken in arrival order, and split
// votes between clients on one key are resolved by the client (see
// "Split votes" in package redlock), so no pair of clients can keep
// trading a key without either holding it.
//
// Shown by: TestOverlappingSetsMakeProgress (9 goroutines in 3 clients on
// real redis-server nodes lock the sets {a,b}, {b,c}, {c,a}, given in that
// cyclic order, 30 times each: every round completes and no key ever has
// two holders whose validity windows overlap; with the sort removed, the
// same test deadlocks until its hang guard), the chaos scenario multilock
// (progress in every second under faults), TestLossOfOneKeyEndsTheSet and
// TestAllOrNothing.
//
// # Limits
//
// A set is held while each of its locks is: the set's validity is the
// earliest of theirs (ValidUntil). Within one Client, waiters queue per key
// in arrival order; across clients there is no global queue, so a set
// waiting for a hot key can wait as long as the retry policy allows and
// then fail with redlock.ErrNotAcquired, releasing what it took.
package multilock

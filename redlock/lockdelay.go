package redlock

import "time"

// Lock-delay: a holder that vanished (crashed, partitioned, killed) may
// still be finishing its work when its lock expires. With a lock-delay, its
// key is not granted again until d after the holder's lock expired: the
// nodes keep the key d longer than the lock's TTL (acquisitions,
// extensions and re-assertions ask for TTL+d), while the holder's own
// validity still counts from its TTL alone. A release deletes the key, so
// a clean release frees it at once; the trail is untouched, so the next
// holder still learns it took over (Lock.TookOver). The delay is the
// holder's: a key is delayed by the lock-delay of the client that held it.

// nodeTTL is how long the nodes keep a lock of ttl: its TTL and the delay.
func (c *config) nodeTTL(ttl time.Duration) time.Duration { return ttl + c.lockDelay }

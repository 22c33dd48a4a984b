// Package extend is the watchdog that keeps held leases alive while work
// runs.
//
// A Watchdog watches leases (anything with a ValidUntil and a TTL, such as a
// *redlock.Lock) and renews each one when its remaining validity falls under
// a threshold. All leases due within the same tick are handed to the renew function
// in one call, so a process holding thousands of locks makes one round per
// tick (the redlock client turns that round into one pipelined request per
// node) instead of running one timer and one round trip per lock.
//
// The watchdog orders the leases by when each next needs a look (its
// renewal, its loss instant, its max-hold cap), so a wake-up looks only at
// the leases whose time has come: keeping n leases one at a time costs
// O(n log n), not a look at every kept lease per Keep.
//
// A failed renewal is retried quickly while validity remains. When a lease
// cannot be renewed, the watchdog declares it lost a safety margin before
// its validity ends, never after, by calling the onLost function given to
// Keep exactly once. An optional cap on the total hold time (WithMaxHold)
// ends a lease even when it could still be renewed.
//
// The package does not know about Redis or redlock: redlock imports it and
// supplies the renew function. Its timing is tested with testing/synctest and a fake
// renew function.
//
// # Defaults
//
// For a lease of time to live ttl:
//
//	threshold    = max(500ms, ttl/3), at most ttl/2     (WithThreshold)
//	safety margin = max(10ms, ttl/10), at most threshold/2 (WithSafetyMargin)
//	retry interval = max(10ms, threshold/5)              (WithRetryInterval)
//	tick         = 50ms                                 (WithTick)
//	max hold     = none                                 (WithMaxHold)
package extend

// Package lockdesc names locks by what they protect: a Descriptor of kind
// (exclusive, shared), subject (what), predicate (the action) and resources
// (which), turned into a key and parsed back,
//
//	exclusive:consolidation-job:triggering:fs-abc123:VA-IRRL-LIN
//
// and a Manager that checks policies before acquiring (a maximum TTL per
// subject and predicate, the kinds a subject may use), finds held locks by
// descriptor pattern and counts them by subject, through redlock's
// Client.Locks and Inspect.
//
// # Keys
//
// Parts are joined with ':'. Inside a part, '%', ':' and the glob
// characters '*', '?', '[', ']', '\' are written %XX (percent-encoding), so a
// key never holds a glob character and a part never splits: Parse(Key(d)) is
// d for every valid d, an empty Kind read back as Exclusive. Parts must not
// be empty; a bad key or descriptor is ErrInvalidArgument.
//
// # Patterns
//
// A Pattern fixes some fields and leaves the others open: "all consolidation
// locks" is Pattern{Subject: "consolidation-job"}, "all locks of file set
// fs-abc123" is Pattern{Resource: "fs-abc123"} (at any position) or
// Pattern{Resources: []string{"fs-abc123"}} (first). Glob is a Redis glob
// that every matching key matches; Match decides exactly, and Manager.Find
// uses both.
//
// # Shared locks
//
// An exclusive lock is a redlock mutex on the descriptor's key. Shared locks
// need a read-write lock: without one (WithRWLocker; *rwlock.Client is one) a
// shared descriptor is ErrKindUnsupported. With one, both kinds of a resource
// go through it, on the key without the kind (Descriptor.Resource), so that a
// shared and an exclusive lock of the same resource exclude each other.
// Find and Metrics list only the mutex's keys: Client.Locks does not show
// read-write locks.
package lockdesc

package rwlock

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
)

// Client takes read-write locks on a quorum of nodes. It is safe for
// concurrent use; create one per process, share it, and Close it when done.
type Client struct {
	readers, writers *redlock.Client
}

// New returns a Client over nodes, which must implement node.ReadWriter
// (redisnode.Node, memnode.Node and rueidisnode's node do): otherwise it returns
// an error wrapping node.ErrReadWriteUnsupported and
// redlock.ErrInvalidArgument. The options are those of redlock.New, with
// the same defaults (key prefix, retry policy, drift, node timeout,
// keep-alive, logger, observer, owner); the rules for the nodes are the
// same too.
func New(nodes []node.Node, opts ...redlock.Option) (*Client, error) {
	side := func(mode node.Mode) ([]node.Node, error) {
		out := make([]node.Node, len(nodes))
		for i, n := range nodes {
			rw, ok := n.(node.ReadWriter)
			if !ok || isNil(n) {
				if n == nil || isNil(n) {
					return nil, fmt.Errorf("%w: rwlock: node %d is nil", redlock.ErrInvalidArgument, i)
				}
				return nil, fmt.Errorf("%w: rwlock: node %d (%s): %w", redlock.ErrInvalidArgument, i, n.Name(), node.ErrReadWriteUnsupported)
			}
			out[i] = modeNode{Node: n, rw: rw, mode: mode}
		}
		return out, nil
	}
	rnodes, err := side(node.Shared)
	if err != nil {
		return nil, err
	}
	wnodes, err := side(node.Exclusive)
	if err != nil {
		return nil, err
	}
	// Both sides are checked by redlock.New (no nodes, duplicate names,
	// bad options) before either is used.
	readers, err := redlock.New(rnodes, opts...)
	if err != nil {
		return nil, err
	}
	writers, err := redlock.New(wnodes, opts...)
	if err != nil {
		_ = readers.Close()
		return nil, err
	}
	return &Client{readers: readers, writers: writers}, nil
}

// RLock takes the lock named key as a reader (shared with other readers,
// never with a writer) for ttl, retrying per the client's retry policy
// while a writer holds the lock or waits for it. The *redlock.Lock it
// returns is the reader's own: its Fence is at least that of every writer
// that held the lock before it and below that of every writer after it
// (see Fences in the package doc; also after every node lost its data),
// and its Extend, KeepAlive, Release, Done and Err work as for a mutex
// (TookOver always reports false). Errors are those of
// redlock.Client.Acquire.
func (c *Client) RLock(ctx context.Context, key string, ttl time.Duration) (*redlock.Lock, error) {
	return c.readers.Acquire(ctx, key, ttl)
}

// TryRLock is RLock with a single attempt: it returns an error wrapping
// redlock.ErrNotAcquired when a writer holds the lock or waits for it.
func (c *Client) TryRLock(ctx context.Context, key string, ttl time.Duration) (*redlock.Lock, error) {
	return c.readers.TryAcquire(ctx, key, ttl)
}

// Lock takes the lock named key as the writer (excluding readers and other
// writers) for ttl, retrying per the client's retry policy while readers or
// another writer hold it. While readers hold it, each refused attempt
// leaves an intent that keeps new readers out for the attempt's ttl, so
// that a stream of readers cannot starve the writer. The returned lock's
// Fence is greater than that of every writer and reader whose acquisition
// returned before Lock was called.
func (c *Client) Lock(ctx context.Context, key string, ttl time.Duration) (*redlock.Lock, error) {
	return c.writers.Acquire(ctx, key, ttl)
}

// TryLock is Lock with a single attempt: it returns an error wrapping
// redlock.ErrNotAcquired when readers or another writer hold the lock.
// Refused by readers, it still leaves its intent for ttl on the nodes
// where readers refused it, also on those whose refusal came after the
// attempt was decided: a failed attempt's cleanup never removes an intent.
func (c *Client) TryLock(ctx context.Context, key string, ttl time.Duration) (*redlock.Lock, error) {
	return c.writers.TryAcquire(ctx, key, ttl)
}

// RDo runs fn holding the lock named key as a reader, as redlock's
// Client.Do does: acquire (RLock), keep alive while fn runs, release when
// it returns or panics; fn's ctx is cancelled with a cause wrapping
// redlock.ErrLockLost a safety margin before the lock could be lost.
func (c *Client) RDo(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error) error {
	return c.readers.Do(ctx, key, ttl, fn)
}

// Do runs fn holding the lock named key as the writer, as RDo does for a
// reader.
func (c *Client) Do(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error) error {
	return c.writers.Do(ctx, key, ttl, fn)
}

// TryRDo is RDo with a single attempt: (false, nil) when a writer holds or
// waits for the lock.
func (c *Client) TryRDo(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error) (ran bool, err error) {
	return c.readers.TryDo(ctx, key, ttl, fn)
}

// TryDo is Do with a single attempt: (false, nil) when readers or another
// writer hold the lock.
func (c *Client) TryDo(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error) (ran bool, err error) {
	return c.writers.TryDo(ctx, key, ttl, fn)
}

// Close waits for the client's requests in flight and background cleanup,
// as redlock's Client.Close does. It does not release held locks.
func (c *Client) Close() error {
	return errors.Join(c.readers.Close(), c.writers.Close())
}

// isNil catches an interface holding a nil pointer, which redlock.New
// cannot see behind modeNode.
func isNil(n node.Node) bool {
	v := reflect.ValueOf(n)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

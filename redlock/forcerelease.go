package redlock

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// forceTombstoneMargin is how much longer than the evicted key's largest
// TTL its token stays refused: the holder may send extensions until its
// validity ends, which is before its keys' TTLs run out, and they may take
// up to a node timeout to land.
const forceTombstoneMargin = time.Minute

// ForceRelease evicts the holder of key, for an operator who knows it is
// gone or stuck. holder is the Info.Holder the operator inspected and
// means to evict; "" evicts whoever holds the key. It inspects the key (as
// Inspect), and when one token holds it on a majority (the one named by
// holder, if given), it sends every node, in one round, an atomic
// Node.ForceRelease of that token: delete the key if that token still
// holds it, raise the fence counter to at least the largest fence seen,
// leave a tombstone of the token (for its largest TTL plus a minute), and
// announce the release so that waiters wake. It returns the Info it acted
// on (the evicted holder) once a majority has done so.
//
// Fencing stays sound: every later acquisition's majority meets a node
// whose counter was raised, so it gets a fence larger than the evicted
// holder's, and a resource that refuses older fences refuses the evicted
// holder's late writes once the new holder has written.
// The evicted holder learns of the loss at its next extension (manual or
// KeepAlive): a majority refuses its token, so Extend returns ErrLockLost
// and Done closes with a cause that wraps it (Do's work context ends, and
// Do returns ErrLockLost). A waiter of another client is woken by the
// announcement. Its next acquisition reports TookOver with the evicted
// holder.
//
// Errors: ErrLockLost when no token holds the key on a majority, or
// another holder than holder does (nothing was changed; the Info says who
// holds it); ErrQuorumUnreachable when too many nodes failed (the
// eviction may have reached some; try again); ErrInvalidArgument for a bad
// key; ctx's error.
func (c *Client) ForceRelease(ctx context.Context, key, holder string) (Info, error) {
	if err := checkKey(ctx, key); err != nil {
		return Info{}, err
	}
	timeout := c.adminTimeout()
	info, token, err := c.inspect(ctx, key, timeout)
	if err != nil {
		return Info{}, err
	}
	if token == "" {
		return info, fmt.Errorf("%w: force release %q: no holder on a majority of the nodes", ErrLockLost, key)
	}
	if holder != "" && info.Holder != holder {
		return info, fmt.Errorf("%w: force release %q: held by %s (owner %q) now, not by %s", ErrLockLost, key, info.Holder, info.Owner, holder)
	}
	var longest time.Duration
	for _, ni := range info.Nodes {
		longest = max(longest, ni.Remaining)
	}
	name := c.keyName(key)
	args := node.ForceReleaseArgs{Name: name, Token: token, Fence: info.Fence,
		Tombstone: longest + forceTombstoneMargin, Retention: c.cfg.retention}
	if !c.cfg.noNotify {
		args.Channel = c.releaseChannel
	}
	r := startRound(c, ctx, "force release", key, nil, timeout, func(ctx context.Context, nd node.Node) (bool, error) {
		fr, ok := nd.(node.ForceReleaser)
		if !ok {
			return false, unsupported(nd, "force release")
		}
		return fr.ForceRelease(ctx, args)
	})
	defer r.close()
	t := c.newTally()
	for a, ok := r.next(); ok; a, ok = r.next() {
		if a.err != nil {
			t.fail(a.err)
			continue
		}
		t.yes++
	}
	if !t.won() {
		if ctx.Err() != nil {
			return info, fmt.Errorf("redlock: force release %q: %w", key, context.Cause(ctx))
		}
		return info, t.err(fmt.Sprintf("force release %q", key))
	}
	c.releasedLocally(name, token)
	if c.logger.Enabled(ctx, slog.LevelInfo) {
		c.logger.InfoContext(ctx, "redlock: force-released", "key", key, "owner", info.Owner, "fence", info.Fence)
	}
	return info, nil
}

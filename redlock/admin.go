package redlock

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/internal/identity"
	"github.com/quorumlock/quorumlock/internal/keyname"
	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/internal/recovery"
	"github.com/quorumlock/quorumlock/node"
)

// Inspect reports who holds key, changing nothing. Errors:
// ErrInvalidArgument, ErrQuorumUnreachable, ctx's error.
func (c *Client) Inspect(ctx context.Context, key string) (Info, error) {
	if err := checkKey(ctx, key); err != nil {
		return Info{}, err
	}
	info, _, err := c.inspect(ctx, key, c.cfg.adminTimeout())
	return info, err
}

// inspect is Inspect that also returns the holder's token.
func (c *Client) inspect(ctx context.Context, key string, timeout time.Duration) (Info, string, error) {
	if err := c.ident.Ready(ctx, timeout); err != nil {
		return Info{}, "", err
	}
	name := c.cfg.keyName(key)
	r := startRound(&c.rounds, ctx, "inspect", key, nil, timeout, func(ctx context.Context, nd node.Node) (node.Holding, error) {
		in, ok := nd.(node.Inspector)
		if !ok {
			return node.Holding{}, unsupported(nd, "inspect")
		}
		return in.Inspect(ctx, name)
	})
	defer r.Close()
	holdings := make([]node.Holding, len(c.nodes))
	info := Info{Key: key, Nodes: make([]Info, len(c.nodes))}
	t := quorum.NewTally(len(c.nodes))
	// The nodes left once only failing ones are (see health.go) and a
	// majority answered are not waited for, a node timeout each.
	err := r.Collect(&t, quorum.Rules{}, func(a quorum.Answer[node.Holding]) error {
		ni := &info.Nodes[a.Node]
		ni.Key = key
		return c.inspected(ctx, &t, ni, &holdings[a.Node], a, timeout)
	})
	if err != nil {
		return Info{}, "", err
	}
	for i := range info.Nodes {
		if ni := &info.Nodes[i]; ni.Node == "" { // presumed failing
			ni.Key, ni.Node = key, c.nodes[i].Name()
			ni.Err = &NodeError{Node: ni.Node, Op: "inspect", Err: quorum.ErrFailing}
		}
	}
	if t.Unreachable() {
		if ctx.Err() != nil {
			return Info{}, "", fmt.Errorf("redlock: inspect %q: %w", key, context.Cause(ctx))
		}
		return Info{}, "", errUnreachable(&t, fmt.Sprintf("inspect %q", key))
	}
	c.cfg.markRecovering(info.Nodes, holdings)
	token := c.summarize(&info, holdings)
	return info, token, nil
}

// inspected records node a.Node's answer in ni and h, and tallies it. An
// unidentified node is identified now, as an attempt does, rather than
// called unreadable; a configuration error found meanwhile is returned.
func (c *Client) inspected(ctx context.Context, t *quorum.Tally, ni *Info, h *node.Holding, a quorum.Answer[node.Holding], timeout time.Duration) error {
	ni.Node = c.nodes[a.Node].Name()
	if a.Err == nil && !c.ident.Counts(a.Node) {
		ok, err := c.ident.Now(ctx, a.Node, timeout)
		if err != nil {
			return err
		}
		if !ok {
			a.Err = &NodeError{Node: ni.Node, Op: "inspect", Err: identity.Unidentified(ni.Node)}
		}
	}
	if a.Err != nil {
		ni.Err = a.Err
		t.Fail(a.Err)
		return nil
	}
	*h = a.Val
	ni.Held, ni.Owner, ni.AcquiredAt, ni.Fence, ni.Remaining = h.Token != "", h.Owner, h.AcquiredAt, h.Fence, h.TTL
	if ni.Held {
		ni.Holder = node.ReleaseID(h.Token)
	}
	return nil
}

// summarize fills the quorum view of info from its per-node Infos and
// holdings, and returns the majority holder's token ("" when none).
func (c *Client) summarize(info *Info, holdings []node.Holding) string {
	votes := map[string]int{}
	info.Agree = true
	for i, ni := range info.Nodes {
		info.Fence = max(info.Fence, ni.Fence)
		if ni.Err != nil || holdings[i].Token != holdings[0].Token {
			info.Agree = false
		}
		if ni.Held {
			votes[holdings[i].Token]++
		}
	}
	var token string
	for t, v := range votes {
		if quorum.Reached(len(c.nodes), v) {
			token = t
		}
	}
	if token == "" {
		return ""
	}
	var ttls []time.Duration
	for i, ni := range info.Nodes {
		if holdings[i].Token != token {
			continue
		}
		ttls = append(ttls, ni.Remaining)
		if info.Owner == "" {
			info.Holder, info.Owner, info.AcquiredAt = ni.Holder, ni.Owner, ni.AcquiredAt
		}
	}
	info.Held, info.Holder = true, node.ReleaseID(token)
	slices.Sort(ttls)
	info.Remaining = ttls[len(ttls)-c.quorum] // the quorum-th largest
	return token
}

// unsupported is the error of a call that needs an optional capability
// (see package node) that nd lacks.
func unsupported(nd node.Node, call string) error {
	return fmt.Errorf("redlock: node %s cannot %s: %w", nd.Name(), call, errors.ErrUnsupported)
}

// Locks iterates over the majority-held locks whose keys match the Redis
// glob pattern, by SCAN (never KEYS), listing a lock held throughout once.
// A bad pattern (ErrInvalidArgument), ErrQuorumUnreachable or ctx's error
// ends it, one key's error does not. Memory grows with the matches.
func (c *Client) Locks(ctx context.Context, pattern string) iter.Seq2[Info, error] {
	return func(yield func(Info, error) bool) {
		if ctx == nil {
			yield(Info{}, invalidArg("nil context"))
			return
		}
		if err := checkGlob(pattern); err != nil {
			yield(Info{}, err)
			return
		}
		timeout := c.cfg.adminTimeout()
		if err := c.ident.Ready(ctx, timeout); err != nil {
			yield(Info{}, err)
			return
		}
		c.listHeld(ctx, pattern, timeout, yield)
	}
}

// listHeld is Locks once its arguments are checked: scan rounds until every
// node's scan ended, each followed by an Inspect of the keys it found.
func (c *Client) listHeld(ctx context.Context, pattern string, timeout time.Duration, yield func(Info, error) bool) {
	s := scan{match: keyname.Of(escapeGlob(c.cfg.prefix), pattern), cursors: make(map[string]string, len(c.nodes)), t: quorum.NewTally(len(c.nodes))}
	active := append([]int(nil), c.all...)
	seen := map[string]bool{}
	for len(active) > 0 {
		var pages []node.ScanPage
		pages, active = c.scanStep(ctx, pattern, timeout, &s, active)
		if s.t.MissesAMajority() { // a held lock may be on none of the nodes scanned
			yield(Info{}, errUnreachable(&s.t, fmt.Sprintf("list %q", pattern)))
			return
		}
		if err := ctx.Err(); err != nil {
			yield(Info{}, fmt.Errorf("redlock: list %q: %w", pattern, context.Cause(ctx)))
			return
		}
		for _, p := range pages {
			for _, name := range p.Names {
				key, ok := keyname.Key(c.cfg.prefix, name)
				if !ok || key == "" || seen[key] {
					continue
				}
				seen[key] = true
				info, _, err := c.inspect(ctx, key, timeout)
				if err == nil && !info.Held {
					continue
				}
				if !yield(info, err) {
					return
				}
			}
		}
	}
}

// scan is the state of a listing across its scan rounds: every node's
// cursor and the tally of the nodes that failed.
type scan struct {
	match   string
	cursors map[string]string // by node name
	t       quorum.Tally
}

// scanStep is one scan round to the active nodes: the pages they returned
// and the nodes whose scan goes on.
func (c *Client) scanStep(ctx context.Context, pattern string, timeout time.Duration, s *scan, active []int) ([]node.ScanPage, []int) {
	args := make(map[string]node.ScanArgs, len(active)) // this round's, never written again
	for _, i := range active {
		args[c.nodes[i].Name()] = node.ScanArgs{Cursor: s.cursors[c.nodes[i].Name()], Match: s.match}
	}
	r := startRound(&c.rounds, ctx, "scan", pattern, active, timeout, func(ctx context.Context, nd node.Node) (node.ScanPage, error) {
		in, ok := nd.(node.Inspector)
		if !ok {
			return node.ScanPage{}, unsupported(nd, "scan")
		}
		return in.Scan(ctx, args[nd.Name()])
	})
	defer r.Close()
	var pages []node.ScanPage
	var next []int
	for a, ok := r.Next(); ok; a, ok = r.Next() {
		if a.Err != nil {
			s.t.Fail(a.Err)
			continue
		}
		pages = append(pages, a.Val)
		if a.Val.Cursor != "" {
			next = append(next, a.Node)
		}
		s.cursors[c.nodes[a.Node].Name()] = a.Val.Cursor
	}
	return pages, next
}

// checkGlob refuses patterns Redis would read in a way nobody meant: empty,
// an unclosed '[', a trailing lone '\'.
func checkGlob(p string) error {
	if p == "" {
		return invalidArg("empty pattern")
	}
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			if i++; i == len(p) {
				return invalidArg("pattern %q ends in a lone '\\'", p)
			}
		case '[':
			j := i + 1
			if j < len(p) && p[j] == '^' {
				j++
			}
			for ; j < len(p) && p[j] != ']'; j++ {
				if p[j] == '\\' {
					j++
				}
			}
			if j >= len(p) {
				return invalidArg("pattern %q has an unclosed '['", p)
			}
			i = j
		}
	}
	return nil
}

// escapeGlob makes s match itself in a Redis glob.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// forceTombstoneMargin is how much longer than the evicted key's largest
// TTL its token stays refused: the holder may send extensions until its
// validity ends, which is before its keys' TTLs run out, and they may take
// up to a node timeout to land.
const forceTombstoneMargin = time.Minute

// ForceRelease evicts the holder of key (holder: the Info.Holder seen, or ""
// for anyone) and returns its Info. Later fences are larger, the evicted
// holder's next extension fails with ErrLockLost, and waiters wake. Errors:
// ErrLockLost when another or no holder has it (nothing changed);
// ErrQuorumUnreachable (retry); ErrInvalidArgument; ctx's error.
func (c *Client) ForceRelease(ctx context.Context, key, holder string) (Info, error) {
	if err := checkKey(ctx, key); err != nil {
		return Info{}, err
	}
	timeout := c.cfg.adminTimeout()
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
	name := c.cfg.keyName(key)
	args := node.ForceReleaseArgs{Name: name, Token: token, Fence: info.Fence,
		Tombstone: longest + forceTombstoneMargin, Retention: c.cfg.retention}
	if !c.cfg.noNotify {
		args.Channel = c.releaseChannel
	}
	r := startRound(&c.rounds, ctx, "force release", key, nil, timeout, func(ctx context.Context, nd node.Node) (bool, error) {
		fr, ok := nd.(node.ForceReleaser)
		if !ok {
			return false, unsupported(nd, "force release")
		}
		return fr.ForceRelease(ctx, args)
	})
	defer r.Close()
	t := quorum.NewTally(len(c.nodes))
	for a, ok := r.Next(); ok; a, ok = r.Next() {
		if a.Err != nil {
			t.Fail(a.Err)
			continue
		}
		t.Granted++
	}
	if !t.Won() {
		if ctx.Err() != nil {
			return info, fmt.Errorf("redlock: force release %q: %w", key, context.Cause(ctx))
		}
		return info, errUnreachable(&t, fmt.Sprintf("force release %q", key))
	}
	c.notify.ReleasedLocally(name, token)
	if c.logger.Enabled(ctx, slog.LevelInfo) {
		c.logger.InfoContext(ctx, "redlock: force-released", "key", key, "owner", info.Owner, "fence", info.Fence)
	}
	return info, nil
}

// Released returns a channel that receives, until ctx ends, when a release
// of key that a waiting Acquire found held is announced: a hint, to pair
// with polling (expiries are not announced). Error: ErrInvalidArgument.
func (c *Client) Released(ctx context.Context, key string) (<-chan struct{}, error) {
	if err := checkKey(ctx, key); err != nil {
		return nil, err
	}
	return c.notify.Watch(ctx, c.cfg.keyName(key)), nil
}

// markRecovering sets the Recovering of each node's Info: how long it
// still sits out (zero when it counts), by the acquire rounds' own rule
// (quorum.Votes.WithLearners), as if every learner had said yes.
func (c *config) markRecovering(nodes []Info, holdings []node.Holding) {
	if c.recovery <= 0 {
		return
	}
	v, learners, earlier := quorum.Votes{N: len(nodes)}, 0, false
	for i, h := range holdings {
		switch {
		case nodes[i].Err != nil:
			v.Failed++
		case recovery.Learning(h.Standing):
			learners++
			earlier = earlier || h.Standing.Hold > 0 // told of a hold: an earlier deployment's
		default:
			v.Refused++ // an answer; yes or no does not matter here
			earlier = true
		}
	}
	if v.WithLearners(learners, earlier).Out == 0 {
		return // none, or a new deployment's: they count
	}
	for i, h := range holdings {
		if nodes[i].Err == nil && recovery.Learning(h.Standing) {
			nodes[i].Recovering = max(h.Standing.Remaining(c.recovery), time.Millisecond)
		}
	}
}

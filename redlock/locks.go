package redlock

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// Locks iterates over the locks whose keys match the glob pattern (Redis's
// glob: * ? [abc] [^a-z], \ escapes) and that a majority of the nodes
// holds, as Inspect describes them.
// It never uses KEYS: each step is one round of Node.Scan (SCAN MATCH
// COUNT 100 on Redis) to every node still scanning, then one Inspect
// round per key not seen before, so the cost of a step is bounded by the
// scan's count whatever the number of keys. A lock held on a majority the
// whole time is listed once (a majority holds it, so some node that
// finished its scan has it); one taken or released meanwhile may or may
// not be. The keys seen are remembered to list each once: memory grows
// with the number of matching keys.
//
// Errors are yielded with an empty Info: ErrInvalidArgument for a bad
// pattern (empty, an unclosed '[', a trailing '\') and the iteration ends;
// ErrQuorumUnreachable when more nodes failed than a majority allows, and
// the iteration ends; an Inspect's error for one key, and it goes on.
// ctx's error ends it. Nodes that cannot scan (a go-redis Ring) fail.
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
		timeout := c.adminTimeout()
		if err := c.ready(ctx, timeout); err != nil {
			yield(Info{}, err)
			return
		}
		c.listHeld(ctx, pattern, timeout, yield)
	}
}

// listHeld is Locks once its arguments are checked: scan rounds until every
// node's scan ended, each followed by an Inspect of the keys it found.
func (c *Client) listHeld(ctx context.Context, pattern string, timeout time.Duration, yield func(Info, error) bool) {
	lead := c.cfg.prefix + "{"
	s := scan{match: escapeGlob(lead) + pattern + "}", cursors: make(map[string]string, len(c.nodes)), t: c.newTally()}
	active := append([]int(nil), c.all...)
	seen := map[string]bool{}
	for len(active) > 0 {
		var pages []node.ScanPage
		pages, active = c.scanStep(ctx, pattern, timeout, &s, active)
		if s.t.missesAMajority() { // a held lock may be on none of the nodes scanned
			yield(Info{}, s.t.err(fmt.Sprintf("list %q", pattern)))
			return
		}
		if err := ctx.Err(); err != nil {
			yield(Info{}, fmt.Errorf("redlock: list %q: %w", pattern, context.Cause(ctx)))
			return
		}
		for _, p := range pages {
			for _, name := range p.Names {
				key, ok := strings.CutPrefix(name, lead)
				key, ok2 := strings.CutSuffix(key, "}")
				if !ok || !ok2 || key == "" || seen[key] {
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
	t       tally
}

// scanStep is one scan round to the active nodes: the pages they returned
// and the nodes whose scan goes on.
func (c *Client) scanStep(ctx context.Context, pattern string, timeout time.Duration, s *scan, active []int) ([]node.ScanPage, []int) {
	args := make(map[string]node.ScanArgs, len(active)) // this round's, never written again
	for _, i := range active {
		args[c.nodes[i].Name()] = node.ScanArgs{Cursor: s.cursors[c.nodes[i].Name()], Match: s.match}
	}
	r := startRound(c, ctx, "scan", pattern, active, timeout, func(ctx context.Context, nd node.Node) (node.ScanPage, error) {
		in, ok := nd.(node.Inspector)
		if !ok {
			return node.ScanPage{}, unsupported(nd, "scan")
		}
		return in.Scan(ctx, args[nd.Name()])
	})
	defer r.close()
	var pages []node.ScanPage
	var next []int
	for a, ok := r.next(); ok; a, ok = r.next() {
		if a.err != nil {
			s.t.fail(a.err)
			continue
		}
		pages = append(pages, a.val)
		if a.val.Cursor != "" {
			next = append(next, a.node)
		}
		s.cursors[c.nodes[a.node].Name()] = a.val.Cursor
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

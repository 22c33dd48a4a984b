package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
)

func runLs(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("ls")
	prefix := fs.String("prefix", redlock.DefaultKeyPrefix, "key prefix on the nodes")
	nodes := fs.String("nodes", "", "host:port,host:port,...")
	if err := parse(fs, "ls", usageLs, args, stdout); err != nil {
		return err
	}
	pattern := "*"
	switch fs.NArg() {
	case 0:
	case 1:
		pattern = fs.Arg(0)
	default:
		return usageErr("ls", "want at most one PATTERN, got %d arguments", fs.NArg())
	}
	r, err := connect(ctx, "ls", *nodes)
	if err != nil {
		return err
	}
	defer r.Close()
	keys, err := scanKeys(ctx, r, *prefix, pattern)
	if err != nil {
		return exitf(exitUnreachable, "redlock ls: %v", err)
	}
	rows := inspectKeys(ctx, r, *prefix, keys)
	printLocks(stdout, r, rows)
	return nil
}

// scanKeys returns the lock keys (without prefix) matching pattern on any
// reachable node, fence counters left out, sorted.
func scanKeys(ctx context.Context, r *remote, prefix, pattern string) ([]string, error) {
	// Lock keys are prefix{key}: counters and tombstones beside them do
	// not end with "}".
	match := globEscape(prefix+"{") + pattern + globEscape("}")
	var (
		mu   sync.Mutex
		set  = map[string]bool{}
		errs = make([]error, len(r.clients))
		wg   sync.WaitGroup
	)
	for i, c := range r.clients {
		if !r.up[i] {
			continue
		}
		wg.Go(func() {
			it := c.Scan(ctx, 0, match, 256).Iterator()
			for it.Next(ctx) {
				k := it.Val()
				if !strings.HasSuffix(k, "}") || !strings.HasPrefix(k, prefix+"{") {
					continue
				}
				mu.Lock()
				set[k[len(prefix)+1:len(k)-1]] = true
				mu.Unlock()
			}
			if err := it.Err(); err != nil {
				errs[i] = fmt.Errorf("scan %s: %w", r.nodes[i].Name(), err)
				r.up[i] = false
			}
		})
	}
	wg.Wait()
	if up := r.upCount(); up < len(r.nodes)/2+1 {
		return nil, fmt.Errorf("only %d of %d nodes answered: %v", up, len(r.nodes), joinErrs(errs))
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, nil
}

// globEscape quotes the glob characters of Redis' MATCH in s.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]{}\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func joinErrs(errs []error) string {
	var s []string
	for _, e := range errs {
		if e != nil {
			s = append(s, e.Error())
		}
	}
	return strings.Join(s, "; ")
}

// lockRow is one key as seen by every node.
type lockRow struct {
	key      string
	holdings []*node.Holding // nil: node down or failed
	token    string          // the token most nodes hold
	votes    int             // how many nodes hold token
	fence    uint64          // the largest fence counter
}

func inspectKeys(ctx context.Context, r *remote, prefix string, keys []string) []lockRow {
	rows := make([]lockRow, len(keys))
	var wg sync.WaitGroup
	for k, key := range keys {
		rows[k] = lockRow{key: key, holdings: make([]*node.Holding, len(r.nodes))}
		for i, n := range r.nodes {
			if !r.up[i] {
				continue
			}
			wg.Go(func() {
				if h, err := n.Inspect(ctx, prefix+"{"+key+"}"); err == nil {
					rows[k].holdings[i] = &h
				}
			})
		}
	}
	wg.Wait()
	for k := range rows {
		row := &rows[k]
		votes := map[string]int{}
		for _, h := range row.holdings {
			if h == nil {
				continue
			}
			row.fence = max(row.fence, h.Fence)
			if h.Token != "" {
				votes[h.Token]++
			}
		}
		for tok, v := range votes {
			if v > row.votes || v == row.votes && tok < row.token {
				row.token, row.votes = tok, v
			}
		}
	}
	return rows
}

func printLocks(w io.Writer, r *remote, rows []lockRow) {
	quorum := len(r.nodes)/2 + 1
	var names []string
	for i, n := range r.nodes {
		state := ""
		if !r.up[i] {
			state = " (down)"
		}
		names = append(names, fmt.Sprintf("n%d=%s%s", i+1, n.Name(), state))
	}
	fmt.Fprintf(w, "nodes: %s; quorum %d\n", strings.Join(names, " "), quorum)
	held := rows[:0:0]
	for _, row := range rows {
		if row.votes > 0 {
			held = append(held, row)
		}
	}
	if len(held) == 0 {
		fmt.Fprintln(w, "no locks held")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := []string{"KEY", "HOLDER", "FENCE"}
	for i := range r.nodes {
		header = append(header, fmt.Sprintf("TTL n%d", i+1))
	}
	header = append(header, "MAJORITY")
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, row := range held {
		cells := []string{row.key, shortToken(row.token), fmt.Sprint(row.fence)}
		for _, h := range row.holdings {
			cells = append(cells, ttlCell(h, row.token))
		}
		majority := "no"
		if row.votes >= quorum {
			majority = "yes"
		}
		cells = append(cells, fmt.Sprintf("%s (%d/%d)", majority, row.votes, len(r.nodes)))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	_ = tw.Flush()
}

// ttlCell shows one node's view of a key: the holder's remaining TTL, "-"
// when free, "down" when the node did not answer, and the other token's
// prefix when another holder has it there.
func ttlCell(h *node.Holding, token string) string {
	switch {
	case h == nil:
		return "down"
	case h.Token == "":
		return "-"
	case h.Token != token:
		return shortToken(h.Token) + ":" + fmtTTL(h.TTL)
	}
	return fmtTTL(h.TTL)
}

func fmtTTL(d time.Duration) string {
	if d <= 0 {
		return "no-expiry"
	}
	return d.Round(10 * time.Millisecond).String()
}

// shortToken is the first 6 characters of a token: enough to tell holders
// apart, not enough to release their lock.
func shortToken(t string) string {
	if len(t) > 6 {
		return t[:6]
	}
	return t
}

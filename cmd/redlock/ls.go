package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
)

func runLs(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("ls")
	prefix := fs.String("prefix", redlock.DefaultKeyPrefix, "key prefix on the nodes")
	nodes := fs.String("nodes", "", "host:port,host:port,...")
	output := fs.String("o", "table", "output format: table or json")
	if err := parse(fs, "ls", usageLs, args, stdout); err != nil {
		return err
	}
	if *output != "table" && *output != "json" {
		return usageErr("ls", "-o %q: want table or json", *output)
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
	keys := scanKeys(ctx, r, *prefix, pattern)
	rows := inspectKeys(ctx, r, *prefix, keys)
	if readable, q := r.upCount(), len(r.nodes)/2+1; readable < q {
		// Locks held on the unread nodes could be missing or wrongly
		// judged: no answer is better than a wrong one.
		return exitf(exitUnreachable, "redlock ls: only %d of %d nodes readable, need %d to judge a lock: %s",
			readable, len(r.nodes), q, unreadableList(r))
	}
	held := rows[:0:0]
	for _, row := range rows {
		if row.Votes > 0 {
			held = append(held, row)
		}
	}
	if *output == "json" {
		return printJSON(stdout, held)
	}
	printTable(stdout, r, held)
	return nil
}

func unreadableList(r *remote) string {
	var s []string
	for i, n := range r.nodes {
		if !r.up[i] {
			s = append(s, fmt.Sprintf("n%d=%s: %v", i+1, n.Name(), r.errs[i]))
		}
	}
	return strings.Join(s, "; ")
}

// scanKeys returns the lock keys (without prefix) matching pattern on any
// reachable node, fence counters left out, sorted.
func scanKeys(ctx context.Context, r *remote, prefix, pattern string) []string {
	// Lock keys are prefix{key}: counters and tombstones beside them do
	// not end with "}".
	match := globEscape(prefix+"{") + pattern + globEscape("}")
	var (
		mu  sync.Mutex
		set = map[string]bool{}
		wg  sync.WaitGroup
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
				r.errs[i], r.up[i] = fmt.Errorf("scan: %w", err), false
			}
		})
	}
	wg.Wait()
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
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

// lockRow is one key as seen by every node: what both the table and -o
// json print (a new column is a new field here).
type lockRow struct {
	Key      string    `json:"key"`
	Holder   string    `json:"holder"`   // token prefix held by most nodes
	Fence    uint64    `json:"fence"`    // the largest fence counter read
	Votes    int       `json:"votes"`    // nodes that hold Holder's token
	Quorum   int       `json:"quorum"`   // nodes needed for a majority
	Majority *bool     `json:"majority"` // null: unreadable nodes could change the verdict
	Nodes    []nodeTTL `json:"nodes"`    // in --nodes order
	token    string    // the whole token: compared, never printed
}

// nodeTTL is one node's view of a key.
type nodeTTL struct {
	Node       string `json:"node"`
	Holder     string `json:"holder,omitempty"`     // token prefix held there; empty when free
	TTLMillis  *int64 `json:"ttl_ms"`               // remaining TTL; null when free or unreadable; -1 no expiry
	Unreadable string `json:"unreadable,omitempty"` // why the node could not be read
	holding    *node.Holding
}

// inspectKeys reads every key on every readable node. A node that fails
// (EVAL denied, a timeout) is marked unreadable for the whole listing.
func inspectKeys(ctx context.Context, r *remote, prefix string, keys []string) []lockRow {
	holdings := make([][]*node.Holding, len(keys))
	failed := make([]error, len(r.nodes)) // the first failure per node
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for k, key := range keys {
		holdings[k] = make([]*node.Holding, len(r.nodes))
		for i, n := range r.nodes {
			if !r.up[i] {
				continue
			}
			wg.Go(func() {
				h, err := n.Inspect(ctx, prefix+"{"+key+"}")
				if err != nil {
					mu.Lock()
					failed[i] = cmp.Or(failed[i], err)
					mu.Unlock()
					return
				}
				holdings[k][i] = &h
			})
		}
	}
	wg.Wait()
	for i, err := range failed {
		if err != nil {
			r.errs[i], r.up[i] = err, false
		}
	}
	quorum := len(r.nodes)/2 + 1
	rows := make([]lockRow, len(keys))
	for k, key := range keys {
		row := &rows[k]
		row.Key, row.Quorum = key, quorum
		votes := map[string]int{}
		unread := 0
		for i, h := range holdings[k] {
			if !r.up[i] {
				h, unread = nil, unread+1 // unreadable for one key: trust none of its answers
			}
			holdings[k][i] = h
			if h == nil {
				continue
			}
			row.Fence = max(row.Fence, h.Fence)
			if h.Token != "" {
				votes[h.Token]++
			}
		}
		for tok, v := range votes {
			if v > row.Votes || v == row.Votes && tok < row.token {
				row.token, row.Votes = tok, v
			}
		}
		row.Holder = shortToken(row.token)
		switch {
		case row.Votes >= quorum:
			row.Majority = ptr(true)
		case row.Votes+unread < quorum:
			row.Majority = ptr(false)
		}
		for i, n := range r.nodes {
			nt := nodeTTL{Node: n.Name(), holding: holdings[k][i]}
			if !r.up[i] {
				nt.Unreadable = r.errs[i].Error()
			} else if h := holdings[k][i]; h.Token != "" {
				nt.Holder = shortToken(h.Token)
				ms := h.TTL.Milliseconds()
				if h.TTL <= 0 {
					ms = -1
				}
				nt.TTLMillis = &ms
			}
			row.Nodes = append(row.Nodes, nt)
		}
	}
	return rows
}

func ptr[T any](v T) *T { return &v }

func printJSON(w io.Writer, rows []lockRow) error {
	enc := json.NewEncoder(w)
	for _, row := range rows {
		if err := enc.Encode(row); err != nil {
			return err
		}
	}
	return nil
}

func printTable(w io.Writer, r *remote, rows []lockRow) {
	quorum := len(r.nodes)/2 + 1
	var names []string
	for i, n := range r.nodes {
		state := ""
		if !r.up[i] {
			state = fmt.Sprintf(" (unreadable: %v)", oneLineErr(r.errs[i]))
		}
		names = append(names, fmt.Sprintf("n%d=%s%s", i+1, n.Name(), state))
	}
	fmt.Fprintf(w, "nodes: %s; quorum %d\n", strings.Join(names, " "), quorum)
	if len(rows) == 0 {
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
	for _, row := range rows {
		cells := []string{quoteKey(row.Key), row.Holder, fmt.Sprint(row.Fence)}
		for _, nt := range row.Nodes {
			cells = append(cells, ttlCell(nt, row.token))
		}
		majority := "unknown"
		if row.Majority != nil && *row.Majority {
			majority = "yes"
		} else if row.Majority != nil {
			majority = "no"
		}
		cells = append(cells, fmt.Sprintf("%s (%d/%d)", majority, row.Votes, len(r.nodes)))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	_ = tw.Flush()
}

// quoteKey quotes a key that would not print as one plain word (control
// characters, spaces, quotes, invalid UTF-8), as strconv.Quote does.
func quoteKey(k string) string {
	if k == "" || !utf8.ValidString(k) || strings.ContainsAny(k, `"'\`) {
		return strconv.Quote(k)
	}
	for _, c := range k {
		if !unicode.IsGraphic(c) || unicode.IsSpace(c) {
			return strconv.Quote(k)
		}
	}
	return k
}

func oneLineErr(err error) string { return strings.ReplaceAll(fmt.Sprint(err), "\n", "; ") }

// ttlCell shows one node's view of a key: the holder's remaining TTL, "-"
// when free, "?" when the node could not be read, and the other token's
// prefix when another holder has it there.
func ttlCell(nt nodeTTL, token string) string {
	h := nt.holding
	switch {
	case nt.Unreadable != "":
		return "?"
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

package main

import (
	"context"
	"encoding/json"
	"errors"
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

	"github.com/quorumlock/quorumlock/internal/defaults"
	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/tick"
)

func runLs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ls")
	prefix := fs.String("prefix", defaults.KeyPrefix, "key prefix on the nodes")
	nodes := nodesFlags(fs, new(nodeArgs))
	output := fs.String("o", "table", "output format: table or json")
	ticks := fs.Bool("ticks", false, "also list the records of ticks (exec --once-per, --tick)")
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
		*ticks = *ticks || strings.HasPrefix(pattern, tick.KeyPrefix) // asked for by name
	default:
		return usageErr("ls", "want at most one PATTERN, got %d arguments", fs.NArg())
	}
	r, err := connect(ctx, "ls", *nodes)
	if err != nil {
		return err
	}
	defer r.Close()
	probeReads(ctx, r, *prefix)
	if readable, q := r.upCount(), quorum.Of(len(r.nodes)); readable < q {
		// Locks held on the unread nodes could be missing or wrongly
		// judged: no answer is better than a wrong one.
		return exitf(exitUnreachable, "redlock ls: only %d of %d nodes readable, need %d to judge a lock: %s",
			readable, len(r.nodes), q, unreadableList(r))
	}
	client, err := redlock.New(r.nodes, redlock.WithKeyPrefix(*prefix))
	if err != nil {
		return usageErr("ls", "%v", err)
	}
	defer client.Close()
	var rows, tickRows []lockRow
	hidden := 0
	for info, err := range client.Locks(ctx, pattern) {
		if err != nil {
			return adminErr("ls", err)
		}
		row := newRow(info, r, time.Now())
		switch {
		case row.Tick == nil:
			rows = append(rows, row)
		case *ticks:
			tickRows = append(tickRows, row)
		default:
			hidden++
		}
	}
	byKey := func(a, b lockRow) int { return strings.Compare(a.Key, b.Key) }
	slices.SortFunc(rows, byKey)
	slices.SortFunc(tickRows, byKey)
	if *output == "json" {
		err = printJSON(stdout, append(rows, tickRows...))
	} else {
		printTable(stdout, r, rows)
		if *ticks {
			printTicks(stdout, tickRows)
		} else if hidden > 0 {
			fmt.Fprintf(stdout, "(%d records of ticks not shown: ls --ticks lists them)\n", hidden)
		}
	}
	if unread := len(r.nodes) - r.upCount(); unread > 0 {
		// Client.Locks lists what a majority of the nodes holds; the
		// unreadable nodes could make a majority of a lock held on fewer.
		fmt.Fprintf(stderr, "redlock ls: warning: %d of %d nodes unreadable: a lock held on fewer than %d of the readable nodes is not listed, though it may be held\n",
			unread, len(r.nodes), quorum.Of(len(r.nodes)))
	}
	return err
}

// probeReads marks unreadable the nodes that answer PING but cannot run
// the lock's scripts (EVAL denied by an ACL, a timeout): one Inspect of an
// unused key per node.
func probeReads(ctx context.Context, r *remote, prefix string) {
	var wg sync.WaitGroup
	for i, n := range r.nodes {
		if !r.up[i] {
			continue
		}
		wg.Go(func() {
			in, ok := n.(node.Inspector)
			if !ok {
				r.errs[i], r.up[i] = fmt.Errorf("node %s cannot inspect: %w", n.Name(), errors.ErrUnsupported), false
				return
			}
			if _, err := in.Inspect(ctx, prefix+"{redlock ls probe}"); err != nil {
				r.errs[i], r.up[i] = err, false
			}
		})
	}
	wg.Wait()
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

// lockRow is one held lock as Client.Locks reports it: what both the table
// and -o json print (a new column is a new field here).
type lockRow struct {
	Key        string     `json:"key"`
	Holder     string     `json:"holder"`         // the holder's release id (as inspect shows it), never its token
	Owner      string     `json:"owner"`          // the holder's owner; "" when not recorded
	AcquiredAt *time.Time `json:"acquired_at"`    // by the holder's clock; null when not recorded
	AgeMillis  *int64     `json:"age_ms"`         // now minus acquired_at (this host's clock against the holder's)
	Fence      uint64     `json:"fence"`          // the largest fence counter read
	Votes      int        `json:"votes"`          // nodes that hold Holder's token
	Quorum     int        `json:"quorum"`         // nodes needed for a majority
	Majority   bool       `json:"majority"`       // always true: ls lists only what a majority holds
	Nodes      []nodeTTL  `json:"nodes"`          // in --nodes order
	Tick       *tickKey   `json:"tick,omitempty"` // what the key is to a tick (ls --ticks); nil for other keys
}

// tickKey is a key of a tick, read back: job, tick, kind ("claim",
// "claimed", "done") and the runner's record.
type tickKey struct {
	Job     string `json:"job"`
	Tick    string `json:"tick"`
	Kind    string `json:"kind"`
	Runner  string `json:"runner"`
	Fence   uint64 `json:"fence,omitempty"`   // the run's fence (records only)
	Outcome string `json:"outcome,omitempty"` // done only
}

// nodeTTL is one node's view of a key.
type nodeTTL struct {
	Node       string `json:"node"`
	Holder     string `json:"holder,omitempty"`     // release id of the token held there; empty when free
	TTLMillis  *int64 `json:"ttl_ms"`               // remaining TTL; null when free or unreadable; -1 no expiry
	Unreadable string `json:"unreadable,omitempty"` // why the node could not be read
}

// newRow turns one Info of Client.Locks into a row. A node that failed for
// this key is also marked unreadable in r, for the table's header.
func newRow(info redlock.Info, r *remote, now time.Time) lockRow {
	row := lockRow{Key: info.Key, Holder: info.Holder, Owner: info.Owner, Fence: info.Fence,
		Quorum: quorum.Of(len(r.nodes)), Majority: info.Held}
	if k, ok := tick.ParseKey(info.Key, info.Owner); ok {
		row.Tick = &tickKey{Job: k.Job, Tick: k.Tick, Kind: k.Kind, Runner: k.Record.Runner, Fence: k.Record.Fence, Outcome: k.Record.Outcome}
		if k.Kind == "claim" {
			row.Tick.Fence = info.Fence
		}
	}
	if !info.AcquiredAt.IsZero() {
		at, age := info.AcquiredAt.UTC(), now.Sub(info.AcquiredAt).Milliseconds()
		row.AcquiredAt, row.AgeMillis = &at, &age
	}
	for i, ni := range info.Nodes {
		nt := nodeTTL{Node: r.nodes[i].Name()}
		switch {
		case !r.up[i]: // the probe's reason says more than "failing recently"
			nt.Unreadable = oneLineErr(r.errs[i])
		case ni.Err != nil:
			nt.Unreadable = oneLineErr(ni.Err)
			r.errs[i], r.up[i] = ni.Err, false
		case ni.Held:
			nt.Holder = ni.Holder
			ms := ni.Remaining.Milliseconds()
			if ni.Remaining <= 0 {
				ms = -1
			}
			nt.TTLMillis = &ms
			if ni.Holder == info.Holder {
				row.Votes++
			}
		}
		row.Nodes = append(row.Nodes, nt)
	}
	return row
}

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
	var names []string
	for i, n := range r.nodes {
		state := ""
		if !r.up[i] {
			state = fmt.Sprintf(" (unreadable: %v)", oneLineErr(r.errs[i]))
		}
		names = append(names, fmt.Sprintf("n%d=%s%s", i+1, n.Name(), state))
	}
	fmt.Fprintf(w, "nodes: %s; quorum %d\n", strings.Join(names, " "), quorum.Of(len(r.nodes)))
	if len(rows) == 0 {
		fmt.Fprintln(w, "no locks held")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := []string{"KEY", "HOLDER", "OWNER", "AGE", "FENCE"}
	for i := range r.nodes {
		header = append(header, fmt.Sprintf("TTL n%d", i+1))
	}
	header = append(header, "MAJORITY")
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, row := range rows {
		owner, age := "-", "-"
		if row.Owner != "" {
			owner = quoteField(row.Owner)
		}
		if row.AgeMillis != nil {
			age = fmtAge(time.Duration(*row.AgeMillis) * time.Millisecond)
		}
		cells := []string{quoteField(row.Key), row.Holder, owner, age, fmt.Sprint(row.Fence)}
		for _, nt := range row.Nodes {
			cells = append(cells, ttlCell(nt, row.Holder))
		}
		cells = append(cells, fmt.Sprintf("yes (%d/%d)", row.Votes, len(r.nodes)))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	_ = tw.Flush()
}

// quoteField quotes a key or owner that would not print as one plain word
// (control characters, spaces, quotes, invalid UTF-8), as strconv.Quote
// does.
func quoteField(k string) string {
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
// when free, "?" when the node could not be read, and the other holder's
// id prefix when another holder has it there.
func ttlCell(nt nodeTTL, holder string) string {
	switch {
	case nt.Unreadable != "":
		return "?"
	case nt.Holder == "":
		return "-"
	}
	ttl := "no-expiry"
	if ms := *nt.TTLMillis; ms > 0 {
		ttl = (time.Duration(ms) * time.Millisecond).Round(10 * time.Millisecond).String()
	}
	if nt.Holder != holder {
		return nt.Holder[:min(6, len(nt.Holder))] + ":" + ttl
	}
	return ttl
}

// fmtAge rounds an age for the table: to 10ms under a minute, to seconds
// above.
func fmtAge(d time.Duration) string {
	if d < time.Minute && d > -time.Minute {
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// printTicks prints the ticks whose records ls found, one row per tick:
// job, tick, state (running, done, or claimed, not finished), runner,
// fence, when it started and its outcome.
func printTicks(w io.Writer, rows []lockRow) {
	type tickRow struct {
		job, tick, runner, outcome string
		fence                      uint64
		started                    *time.Time
		claim, claimed, done       bool
	}
	var order []string
	byTick := map[string]*tickRow{}
	for _, row := range rows {
		k := row.Tick
		id := k.Job + "@" + k.Tick
		t := byTick[id]
		if t == nil {
			t = &tickRow{job: k.Job, tick: k.Tick}
			byTick[id] = t
			order = append(order, id)
		}
		switch k.Kind {
		case "claim":
			t.claim = true
			if t.runner == "" {
				t.runner, t.fence = k.Runner, k.Fence
			}
		case "claimed":
			t.claimed, t.started = true, row.AcquiredAt
			t.runner, t.fence = k.Runner, k.Fence
		case "done":
			t.done, t.outcome = true, k.Outcome
			t.runner, t.fence = k.Runner, k.Fence
		}
	}
	fmt.Fprintln(w)
	if len(order) == 0 {
		fmt.Fprintln(w, "no records of ticks")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tTICK\tSTATE\tRUNNER\tFENCE\tSTARTED\tOUTCOME")
	for _, id := range order {
		t := byTick[id]
		state := "claimed, not finished"
		switch {
		case t.done:
			state = "done"
		case t.claim:
			state = "running"
		}
		started := "-"
		if t.started != nil {
			started = t.started.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", quoteField(t.job), quoteField(t.tick), state,
			quoteField(orDash(t.runner)), t.fence, started, quoteField(orDash(t.outcome)))
	}
	_ = tw.Flush()
}

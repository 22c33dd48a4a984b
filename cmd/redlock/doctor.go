package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/defaults"
	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/internal/wire"
)

// Exit codes of doctor (documented in doc.go and the README).
const (
	doctorWarnings  = 1               // a lock can be taken, but a setting weakens it
	doctorUntrusted = exitUnreachable // fewer than a quorum of usable distinct servers, or one server listed twice
	doctorDegraded  = 5               // a quorum is usable, but some nodes are not: fewer failures are survived
)

// maxClockOffset is the clock offset between this host and a node above
// which doctor warns: far beyond what NTP leaves, and node clocks seed
// fence counters after data loss.
const maxClockOffset = time.Second

// nodeTimeout bounds all checks of one node.
const nodeTimeout = 10 * time.Second

func runDoctor(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("doctor")
	nodes := nodesFlags(fs, new(nodeArgs))
	var recovery time.Duration
	durationFlag(fs, &recovery, "recovery-period", defaults.RecoveryPeriod, "the recovery period the clients of these nodes use (0: off)")
	if err := parse(fs, "doctor", usageDoctor, args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("doctor", "unexpected argument %q", fs.Arg(0))
	}
	if recovery < 0 {
		return usageErr("doctor", "--recovery-period %s is negative (0 turns recovery off)", recovery)
	}
	opts, err := nodeOptions("doctor", *nodes)
	if err != nil {
		return err
	}
	redis.SetLogger(quietLogger{})
	reports := make([]*nodeReport, len(opts))
	var wg sync.WaitGroup
	for i, o := range opts {
		wg.Go(func() {
			c := redis.NewClient(o)
			defer c.Close()
			cctx, cancel := context.WithTimeout(ctx, nodeTimeout)
			defer cancel()
			reports[i] = checkNode(cctx, fmt.Sprintf("n%d", i+1), o.Addr, c)
		})
	}
	wg.Wait()
	return printVerdict(stdout, reports, recovery)
}

// nodeReport is what doctor learned about one node.
type nodeReport struct {
	label, addr string
	facts       []string // what was measured, in order
	warnings    []string // weakens a lock
	failure     string   // the node cannot take part in a lock
	persistence string   // what a restart forgets; "" when nothing
	runID       string
	hold        time.Duration // the longest hold the node's record was told of
}

func (r *nodeReport) fail(format string, args ...any) { r.failure = fmt.Sprintf(format, args...) }
func (r *nodeReport) warn(format string, args ...any) {
	r.warnings = append(r.warnings, fmt.Sprintf(format, args...))
}

func checkNode(ctx context.Context, label, addr string, c *redis.Client) *nodeReport {
	r := &nodeReport{label: label, addr: addr}
	// Round trip: the best of three PINGs.
	var rtt time.Duration
	for i := range 3 {
		start := time.Now()
		if err := c.Ping(ctx).Err(); err != nil {
			if text := nodeErrText(err); text != err.Error() {
				r.fail("%s", text)
			} else {
				r.fail("unreachable: %v", err)
			}
			return r
		}
		if d := time.Since(start); i == 0 || d < rtt {
			rtt = d
		}
	}
	r.facts = append(r.facts, "rtt "+fmtMillis(rtt))

	info, err := c.Info(ctx, "server", "memory", "persistence").Result()
	if err != nil {
		r.fail("INFO failed: %v", err)
		return r
	}
	fields := infoFields(info)
	r.runID = fields["run_id"]
	r.facts = append([]string{"redis " + fields["redis_version"]}, r.facts...)

	checkClock(ctx, c, r)

	policy := fields["maxmemory_policy"]
	r.facts = append(r.facts, "maxmemory-policy "+policy)
	if policy != "noeviction" {
		r.warn("maxmemory-policy %s can evict lock keys and fence counters under memory pressure: set noeviction", policy)
	}

	settings, forgets := restartForgets(ctx, c, fields)
	r.persistence = forgets
	if forgets == "" {
		forgets = "appendfsync always: a restart forgets nothing acknowledged"
	}
	r.facts = append(r.facts, "persistence: "+forgets+" ("+settings+")")

	checkCommands(ctx, c, r)
	// A Redis Cluster keeps one record per slot: this reads none (MOVED).
	if v, err := c.Get(ctx, wire.NodeRecordKey).Result(); err == nil {
		r.hold = wire.RecordHold(v)
	}
	return r
}

// checkClock records the node's clock offset from this host, and warns
// when it is large.
func checkClock(ctx context.Context, c *redis.Client, r *nodeReport) {
	sent := time.Now()
	if t, err := c.Time(ctx).Result(); err != nil {
		r.warn("TIME failed, clock offset unknown: %v", err)
	} else {
		off := clockOffset(sent, time.Since(sent), t)
		r.facts = append(r.facts, "clock offset "+signedMillis(off))
		if off > maxClockOffset || off < -maxClockOffset {
			r.warn("clock offset %s from this host (more than %s): is NTP running?", signedMillis(off), maxClockOffset)
		}
	}
}

// checkCommands checks the commands a lock uses: Lua runs every lock
// operation; PUBLISH wakes waiters on release.
func checkCommands(ctx context.Context, c *redis.Client, r *nodeReport) {
	if v, err := c.Eval(ctx, "return 1", nil).Int(); err != nil || v != 1 {
		r.fail("EVAL refused (ACL or rename-command; every lock operation is a script): %v", errOr(err, "got %d", v))
	} else {
		r.facts = append(r.facts, "EVAL ok")
	}
	if err := c.Publish(ctx, "redlock:doctor:"+randomHex(), "").Err(); err != nil {
		r.warn("PUBLISH refused (waiters are not woken on release, they retry on their delay): %v", err)
	} else {
		r.facts = append(r.facts, "PUBLISH ok")
	}
}

// restartForgets returns the node's persistence settings, and what a
// restart of the node would forget ("" when nothing acknowledged: the
// delayed-restart rule applies unless AOF fsyncs every write). A setting
// CONFIG GET may not read (ACL) is "unknown", and counts as forgetting.
func restartForgets(ctx context.Context, c *redis.Client, info map[string]string) (settings, forgets string) {
	cfg, err := c.ConfigGet(ctx, "*").Result() // one call: appendonly, appendfsync, save
	if err != nil {
		aof := "unknown"
		switch info["aof_enabled"] {
		case "1":
			aof = "yes (INFO)"
		case "0":
			aof = "no (INFO)"
		}
		settings = "appendonly " + aof + ", appendfsync unknown, save unknown: CONFIG GET refused"
		if info["aof_enabled"] == "1" {
			return settings, "AOF on, appendfsync unknown: a crash may forget the last second"
		}
		return settings, "no AOF, save unknown: a restart forgets locks"
	}
	settings = fmt.Sprintf("appendonly %s, appendfsync %s, save %q", cfg["appendonly"], cfg["appendfsync"], cfg["save"])
	switch {
	case cfg["appendonly"] == "yes" && cfg["appendfsync"] == "always":
		return settings, ""
	case cfg["appendonly"] == "yes":
		return settings, fmt.Sprintf("AOF with appendfsync %s: a crash forgets the last writes", cfg["appendfsync"])
	case strings.TrimSpace(cfg["save"]) != "":
		return settings, "RDB snapshots only: a restart forgets locks taken since the last snapshot"
	default:
		return settings, "none: a restart forgets every lock"
	}
}

// judgeRestart warns on each usable node whose restart forgets locks when
// the clients do not sit such a node out (recovery off), and returns the
// line that says whether a restart is safe.
func judgeRestart(reports []*nodeReport, recovery time.Duration) string {
	var forget []string
	usable, hold := 0, time.Duration(0)
	for _, r := range reports {
		if r.failure != "" {
			continue
		}
		usable++
		hold = max(hold, r.hold)
		if r.persistence == "" {
			continue
		}
		forget = append(forget, r.label)
		if recovery == 0 {
			r.warn("a restart forgets locks and the clients' recovery period is off: a node restarted at once grants keys still held elsewhere")
		}
	}
	switch {
	case len(forget) == 0:
		return "restart: safe: every usable node fsyncs each write (appendfsync always), so a restarted node remembers its locks"
	case recovery > 0:
		sitOut := ""
		if hold > recovery {
			sitOut = fmt.Sprintf(", here %s: the longest hold told to the nodes (HoldAtLeast, --min-hold, a tick's retention)", hold)
		}
		return fmt.Sprintf("restart: safe: %d of %d usable nodes (%s) forget locks on restart, and the clients sit such a node out until it has kept its data for the recovery period %s (at least the longest TTL any client uses), or the longest hold told to the nodes if longer%s; in a rolling restart, wait until the restarted node counts again (redlock inspect), or a majority sits out until then",
			len(forget), usable, strings.Join(forget, ", "), recovery, sitOut)
	}
	return fmt.Sprintf("restart: NOT SAFE: %d of %d usable nodes (%s) forget locks on restart and the clients' recovery period is off: restart such a node no sooner than the longest TTL in use (the delayed-restart rule), run appendonly yes with appendfsync always, or turn recovery on",
		len(forget), usable, strings.Join(forget, ", "))
}

// clockOffset is the node's clock minus ours, taking the node's reading
// at the middle of the round trip.
func clockOffset(sent time.Time, rtt time.Duration, node time.Time) time.Duration {
	return node.Sub(sent.Add(rtt / 2))
}

// printVerdict prints one line per node and the verdict, and returns the exit
// code.
func printVerdict(w io.Writer, reports []*nodeReport, recovery time.Duration) error {
	q := quorum.Of(len(reports))
	firstOf := map[string]string{} // run_id -> label
	for _, r := range reports {
		if r.failure != "" || r.runID == "" {
			continue
		}
		if first, ok := firstOf[r.runID]; ok {
			r.fail("same server as %s (run_id %s): a quorum needs distinct servers", first, r.runID[:min(6, len(r.runID))])
			continue
		}
		firstOf[r.runID] = r.label
	}
	restart := judgeRestart(reports, recovery)
	usable, duplicates := 0, 0
	var unusable, warned []string
	for _, r := range reports {
		state, problems := "ok", r.warnings
		switch {
		case r.failure != "":
			state, problems = "FAIL", append([]string{r.failure}, r.warnings...)
			unusable = append(unusable, r.label)
			if strings.HasPrefix(r.failure, "same server") {
				duplicates++
			}
		case len(r.warnings) > 0:
			state = "WARN"
		}
		if len(r.warnings) > 0 {
			warned = append(warned, r.label)
		}
		if r.failure == "" {
			usable++
		}
		parts := problems
		if len(r.facts) > 0 {
			parts = append([]string{strings.Join(r.facts, ", ")}, problems...)
		}
		line := fmt.Sprintf("%-4s %s %s: %s", state, r.label, r.addr, strings.Join(parts, "; "))
		fmt.Fprintln(w, strings.TrimSpace(strings.ReplaceAll(line, "\n", " ")))
	}
	fmt.Fprintf(w, "%d of %d nodes usable (%s), quorum %d\n", usable, len(reports), listOr(unusable, "all"), q)
	if usable >= q {
		fmt.Fprintf(w, "fault tolerance: the quorum survives %s\n", failures(usable-q))
	}
	if usable >= q {
		fmt.Fprintln(w, restart)
	}
	code, text := doctorVerdict(len(reports), usable, duplicates, unusable, warned)
	fmt.Fprintf(w, "verdict: %s (exit %d)\n", text, code)
	return &exitError{code: code}
}

// doctorVerdict is the exit code and verdict line for total nodes, of
// which usable can take part in a lock.
func doctorVerdict(total, usable, duplicates int, unusable, warned []string) (int, string) {
	q := quorum.Of(total)
	switch {
	case usable < q:
		return doctorUntrusted, fmt.Sprintf("NOT TRUSTED: %d usable distinct servers, a quorum needs %d", usable, q)
	case duplicates > 0:
		return doctorUntrusted, "NOT TRUSTED: a server is listed under two names; clients refuse such a node list"
	case usable < total:
		return doctorDegraded, fmt.Sprintf("DEGRADED: %s not usable: a lock can be taken, but the quorum survives only %s (%d with all %d nodes up)",
			strings.Join(unusable, ", "), failures(usable-q), total-q, total)
	case len(warned) > 0:
		return doctorWarnings, fmt.Sprintf("WARNINGS: a lock can be taken, but settings of %s weaken it", strings.Join(warned, ", "))
	}
	return exitOK, "OK: a lock on these nodes can be trusted"
}

// failures is "N more node failure(s)".
func failures(n int) string {
	if n == 1 {
		return "1 more node failure"
	}
	return fmt.Sprintf("%d more node failures", n)
}

// listOr lists labels as "n2, n3 not usable", or "all usable".
func listOr(labels []string, none string) string {
	if len(labels) == 0 {
		return none + " usable"
	}
	return strings.Join(labels, ", ") + " not usable"
}

// infoFields parses an INFO reply into name -> value.
func infoFields(info string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "#") {
			out[k] = v
		}
	}
	return out
}

func errOr(err error, format string, args ...any) error {
	if err != nil {
		return err
	}
	return fmt.Errorf(format, args...)
}

func fmtMillis(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}

func signedMillis(d time.Duration) string {
	ms := math.Round(float64(d)/float64(10*time.Microsecond)) / 100
	return fmt.Sprintf("%+.2fms", ms+0) // +0: no "-0.00"
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

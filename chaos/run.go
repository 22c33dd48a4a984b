package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/quorumlock/quorumlock/extend"
	"github.com/quorumlock/quorumlock/internal/defaults"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// Profile says how long and how hard to run.
type Profile struct {
	Name        string
	TTL         time.Duration // the lock's TTL
	PerScenario time.Duration // how long each scenario runs
	Only        []string      // scenario names; empty: all
	OutDir      string        // JSON report and HTML timelines; empty: none
	Progress    io.Writer     // progress lines; nil: silent
	// CheckTimeout bounds porcupine per scenario (Unknown when exceeded).
	CheckTimeout time.Duration

	// The measuring scenarios are bounded by counts, not by PerScenario.

	// SplitRounds is the number of split-vote rounds.
	SplitRounds int
	// ContentionPhase is how long each phase of exact-quorum runs (whole
	// seconds: its acquisitions are counted per second).
	ContentionPhase time.Duration
	// SilentAttempts is how many contended attempts silent-node makes in
	// each condition (healthy, one node stopped); SilentCap bounds the time
	// spent in its stopped-node blocks (today every such attempt takes two
	// node timeouts), after at least one block.
	SilentAttempts int
	SilentCap      time.Duration
}

// Full is the `make chaos` profile: every scenario, ~20 s each.
func Full() Profile {
	return Profile{Name: "full", TTL: 500 * time.Millisecond, PerScenario: 18 * time.Second, CheckTimeout: 30 * time.Second,
		SplitRounds: 1000, ContentionPhase: 10 * time.Second, SilentAttempts: 800, SilentCap: 20 * time.Second}
}

// Short is the CI profile: every scenario, ~4 s each.
func Short() Profile {
	return Profile{Name: "short", TTL: 500 * time.Millisecond, PerScenario: 4 * time.Second, CheckTimeout: 20 * time.Second,
		SplitRounds: 200, ContentionPhase: 3 * time.Second, SilentAttempts: 160, SilentCap: 4 * time.Second}
}

// Result is one scenario's row.
type Result struct {
	Scenario string        `json:"scenario"`
	What     string        `json:"what"`
	Expect   Expect        `json:"expect"`
	Duration time.Duration `json:"duration_ns"`
	*Findings
	AcqPerSec      float64  `json:"acquisitions_per_s"`
	FaultAcqPerSec float64  `json:"fault_acquisitions_per_s"` // during fault windows with a reachable majority
	FaultTime      float64  `json:"fault_s"`
	NoQuorumAcqs   int      `json:"no_quorum_acquisitions"` // succeeded while a majority was down: must be 0
	UntypedErrors  int      `json:"untyped_errors"`         // failed without ErrQuorumUnreachable while a majority was down
	GCLateWrites   int      `json:"gc_late_writes"`
	GCLateRefused  int      `json:"gc_late_refused"`
	GCLateAlone    int      `json:"gc_late_alone"` // late writes that no newer fence had overtaken: nothing to refuse
	Windows        []Window `json:"windows"`
	// Figures are a measuring scenario's measurements and targets.
	Figures []Figure `json:"figures,omitempty"`
	// Summary says what a measuring scenario saw, in one sentence.
	Summary string `json:"summary,omitempty"`
	// NotApplied names a part of the scenario the library cannot take yet
	// (e.g. skewed wall clocks before redlock.WithWallClock).
	NotApplied string   `json:"not_applied,omitempty"`
	Pass       bool     `json:"pass"`
	Verdict    string   `json:"verdict"`
	Problems   []string `json:"problems,omitempty"`
	Timeline   string   `json:"timeline,omitempty"` // HTML file, for violations
}

// Report is a whole run.
type Report struct {
	Profile          string        `json:"profile"`
	TTL              time.Duration `json:"ttl_ns"`
	Started          time.Time     `json:"started"`
	Runtime          time.Duration `json:"runtime_ns"`
	CriticalSections int           `json:"critical_sections"`
	Results          []*Result     `json:"results"`
	Pass             bool          `json:"pass"`
}

// Run starts five redis-server nodes and runs the profile's scenarios.
func Run(ctx context.Context, p Profile) (*Report, error) {
	if p.Progress == nil {
		p.Progress = io.Discard
	}
	redistest.DiscardRedisLogs()
	rep := &Report{Profile: p.Name, TTL: p.TTL, Started: time.Now(), Pass: true}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	cluster, err := redistest.Start(sctx, 5, redistest.Options{})
	cancel()
	if err != nil {
		return nil, err
	}
	defer cluster.Close()
	nw, err := NewNetwork(3, cluster.Addrs())
	if err != nil {
		return nil, err
	}
	defer nw.Close()
	clock := NewClock()

	var scenarios []Scenario
	for _, s := range Scenarios() {
		if len(p.Only) == 0 || contains(p.Only, s.Name) {
			scenarios = append(scenarios, s)
		}
	}
	if len(scenarios) == 0 {
		return nil, fmt.Errorf("chaos: no scenario matches %v", p.Only)
	}
	if p.OutDir != "" {
		if err := os.MkdirAll(p.OutDir, 0o755); err != nil {
			return nil, err
		}
	}
	for i, s := range scenarios {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		fmt.Fprintf(p.Progress, "[%d/%d] %s: %s\n", i+1, len(scenarios), s.Name, s.What)
		res, err := runScenario(ctx, p, s, cluster, nw, clock)
		if err != nil {
			return nil, fmt.Errorf("chaos: %s: %w", s.Name, err)
		}
		rep.Results = append(rep.Results, res)
		rep.CriticalSections += res.CriticalSections
		rep.Pass = rep.Pass && res.Pass
		fmt.Fprintf(p.Progress, "    %s\n", res.Verdict)
	}
	rep.Runtime = time.Since(rep.Started)
	if p.OutDir != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return rep, err
		}
		if err := os.WriteFile(filepath.Join(p.OutDir, "chaos.json"), b, 0o644); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// reset brings every node up and unpaused and heals the network, and makes
// every node vote: each scenario starts from a deployment that has run.
func reset(ctx context.Context, cluster *redistest.Cluster, nw *Network) error {
	if err := nw.Heal(); err != nil {
		return err
	}
	for _, n := range cluster.Nodes() {
		// A restart that the previous scenario's end cut short leaves its
		// node down: restart it (a down node cannot be resumed).
		if !n.Running() {
			if err := n.Restart(ctx); err != nil {
				return err
			}
			continue
		}
		if err := n.Resume(); err != nil {
			return err
		}
	}
	for _, n := range cluster.Nodes() {
		if err := n.MarkVoting(ctx); err != nil {
			return err
		}
	}
	return nil
}

func runScenario(ctx context.Context, p Profile, s Scenario, cluster *redistest.Cluster, nw *Network, clock *Clock) (*Result, error) {
	if err := reset(ctx, cluster, nw); err != nil {
		return nil, err
	}
	key := "chaos-" + s.Name
	env := &Env{Cluster: cluster, Net: nw, Clock: clock, TTL: p.TTL, Key: defaults.KeyPrefix + "{" + key + "}"}
	if s.Measure != nil {
		return runMeasure(ctx, p, s, env)
	}
	if s.Scale > 0 {
		p.PerScenario = time.Duration(float64(p.PerScenario) * s.Scale)
	}
	notApplied := ""
	reg := NewRegister(clock, s.fenced())
	rec := &recorder{}
	var workers []*worker
	var closers []func()
	for c := range s.Clients {
		nodes := newNodes(nw.Redis(c))
		w := &worker{id: c, key: key, ttl: p.TTL, clock: clock, reg: reg, rec: rec, longAt: &env.longAt,
			longEvery: time.Duration(s.LongEvery * float64(p.TTL))}
		opts := []redlock.Option{
			redlock.WithRetry(retry.Constant(20, 2*time.Millisecond, 3*time.Millisecond)),
			// Tell a holder of its loss a fifth of the TTL before its
			// validity ends: room for a loaded machine's scheduling delays.
			redlock.WithKeepAlive(extend.WithSafetyMargin(p.TTL / 5)),
			redlock.WithObserver(observe.Func(w.observe)),
			redlock.WithRecoveryPeriod(recoveryTTLs * p.TTL),
		}
		if s.NoRecovery {
			opts = append(opts, redlock.WithRecoveryPeriod(0))
		}
		if s.Skew != nil {
			nodes = skewNodes(nodes, s.Skew(c))
		}
		if s.Broken {
			// No quorum: client c trusts 2 of the 5 nodes; no drift.
			nodes = []node.Node{nodes[(2*c)%5], nodes[(2*c+1)%5]}
			opts = append(opts, redlock.WithDriftFactor(0))
		}
		cl, err := redlock.New(nodes, opts...)
		if err != nil {
			return nil, err
		}
		w.client = cl
		if cc, ok := any(cl).(interface{ Close() error }); ok {
			closers = append(closers, func() { _ = cc.Close() })
		}
		if s.GCPause && c == 0 {
			next := time.Now().Add(2 * p.TTL)
			w.gcPause = func() bool {
				if time.Now().Before(next) {
					return false
				}
				next = time.Now().Add(4 * p.TTL)
				return true
			}
		}
		workers = append(workers, w)
	}

	runCtx, stop := context.WithTimeout(ctx, p.PerScenario)
	defer stop()
	start := clock.Now()
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() { w.run(runCtx) })
	}
	var injectErr error
	wg.Go(func() { injectErr = s.Inject(runCtx, env) })
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(p.Progress, "    %5.1fs  %d critical sections\n", (clock.Now() - start).Seconds(), rec.count())
			}
		}
	}()
	wg.Wait()
	close(done)
	elapsed := clock.Now() - start
	for _, c := range closers {
		c()
	}
	if injectErr != nil {
		return nil, fmt.Errorf("fault injection: %w", injectErr)
	}

	f := Check(rec.css, rec.acqs, reg.Ops(), s.fenced(), p.CheckTimeout)
	res := &Result{Scenario: s.Name, What: s.What, Expect: s.Expect, Duration: elapsed, Findings: f, Windows: env.Windows(), NotApplied: notApplied}
	liveness(res, rec, p.TTL)
	res.GCLateWrites, res.GCLateRefused, res.GCLateAlone = lateWrites(rec.css, reg.Ops())
	judge(res, p)
	if (len(f.Overlaps) > 0 || f.Linearizable != string(porcupine.Ok) || !res.Pass) && p.OutDir != "" {
		if b, err := json.Marshal(map[string]any{"critical_sections": rec.css, "acquisitions": rec.acqs, "register": reg.Ops(), "windows": res.Windows}); err == nil {
			_ = os.WriteFile(filepath.Join(p.OutDir, s.Name+".history.json"), b, 0o644)
		}
		path := filepath.Join(p.OutDir, s.Name+".html")
		if err := timeline(path, res, rec.css, s.fenced()); err == nil {
			res.Timeline = path
		} else {
			res.Problems = append(res.Problems, "timeline: "+err.Error())
		}
	}
	return res, nil
}

// runMeasure runs a measuring scenario and judges its figures.
func runMeasure(ctx context.Context, p Profile, s Scenario, env *Env) (*Result, error) {
	start := env.Clock.Now()
	m, err := s.Measure(ctx, p, env)
	if err != nil {
		return nil, err
	}
	res := &Result{Scenario: s.Name, What: s.What, Expect: s.Expect, Duration: env.Clock.Now() - start, Findings: m.Findings,
		Windows: m.Windows, Figures: m.Figures, Summary: m.Summary}
	res.AcqPerSec = float64(res.Acquisitions) / res.Duration.Seconds()
	judge(res, p)
	return res, nil
}

// liveness computes acquisition rates overall and during faults, and what
// happened while a majority was down.
func liveness(res *Result, rec *recorder, ttl time.Duration) {
	res.AcqPerSec = float64(res.Acquisitions) / res.Duration.Seconds()
	var faultTime time.Duration
	faultAcqs := 0
	for _, w := range res.Windows {
		if w.NoQuorum {
			for _, a := range rec.acqs {
				if a.Start >= w.From && a.End <= w.To {
					if a.OK {
						res.NoQuorumAcqs++
					} else if a.Start >= w.From+ttl && a.Err != "quorum_unreachable" && a.Err != "canceled" {
						res.UntypedErrors++
					}
				}
			}
			continue
		}
		faultTime += w.To - w.From
		for _, a := range rec.acqs {
			if a.OK && a.End >= w.From && a.End <= w.To {
				faultAcqs++
			}
		}
	}
	res.FaultTime = faultTime.Seconds()
	if faultTime > 0 {
		res.FaultAcqPerSec = float64(faultAcqs) / faultTime.Seconds()
	}
}

// judge compares the findings with the scenario's expected outcome.
func judge(res *Result, p Profile) {
	f := res.Findings
	var probs []string
	// late: a loss signal after the validity ended is a timing verdict (a
	// process starved of CPU is told late); the short profile of go test
	// reports it without failing, make chaos fails on it.
	late := func(f *Findings) {
		if f.LateLossSignals == 0 {
			return
		}
		msg := fmt.Sprintf("%d loss signals after validity ended", f.LateLossSignals)
		if p.Name == "short" {
			res.Summary += " (" + msg + ": a timing verdict, reported only in the short profile)"
			return
		}
		probs = append(probs, msg)
	}
	need := func(ok bool, format string, args ...any) {
		if !ok {
			probs = append(probs, fmt.Sprintf(format, args...))
		}
	}
	safety := func() {
		need(len(f.Overlaps) == 0, "%d overlapping critical sections", len(f.Overlaps))
		need(len(f.FenceInversions) == 0, "%d fence inversions", len(f.FenceInversions))
	}
	fencing := func() {
		need(f.UnsafeAccepted == 0, "%d unsafe writes accepted", f.UnsafeAccepted)
		if f.Linearizable != "-" { // "-": the scenario has no register
			need(f.Linearizable == string(porcupine.Ok), "register history not linearizable: %s", f.Linearizable)
		}
	}
	// Progress within the fault windows (a few TTLs) is a timing verdict
	// too: a process starved of CPU for that long makes none. The short
	// profile reports it; make chaos fails on it; the simulator (chaos/sim)
	// checks liveness on a fake clock.
	progress := func() {
		need(res.CriticalSections > 0, "no critical section at all")
		if res.FaultTime > 0 && res.FaultAcqPerSec == 0 {
			msg := "no progress during faults although a majority was reachable"
			if p.Name == "short" {
				res.Summary += " (" + msg + ": a timing verdict, reported only in the short profile)"
			} else {
				probs = append(probs, msg)
			}
		}
	}
	switch res.Expect {
	case ExpectSafe:
		safety()
		fencing()
		progress()
		late(f)
	case ExpectNoQuorum:
		safety()
		fencing()
		need(res.CriticalSections > 0, "no critical section at all")
		need(res.NoQuorumAcqs == 0, "%d acquisitions succeeded while a majority was down", res.NoQuorumAcqs)
		need(res.UntypedErrors == 0, "%d acquisitions failed without ErrQuorumUnreachable while a majority was down", res.UntypedErrors)
		need(f.LossSignals > 0, "no holder was told it lost the lock")
		late(f)
	case ExpectFenced:
		safety()
		fencing()
		progress()
		need(res.GCLateWrites > 0, "the paused client made no late write after a newer holder's (%d without one)", res.GCLateAlone)
		need(res.GCLateRefused == res.GCLateWrites, "%d of %d late writes after a GC pause accepted", res.GCLateWrites-res.GCLateRefused, res.GCLateWrites)
	case ExpectUnsafe:
		fencing()
		// Progress overall only: restart-immediate's fault windows are
		// shorter than its long critical sections.
		need(res.CriticalSections > 0, "no critical section at all")
	case ExpectTargets:
		safety()
		fencing()
		for _, fig := range res.Figures {
			if fig.Met != nil && !*fig.Met && fig.Timing && p.Name == "short" {
				res.Summary += fmt.Sprintf(" (timing target missed, reported only in the short profile: %s)", fig)
				continue
			}
			need(fig.Met == nil || *fig.Met, "%s", fig)
		}
	case ExpectFenceLoss, ExpectSkewLoss:
		need(len(f.Overlaps) == 0, "%d overlapping critical sections", len(f.Overlaps))
		need(len(f.FenceInversions) == 0, "%d fence inversions after the nodes lost their counters", len(f.FenceInversions))
		fencing()
		need(res.CriticalSections > 0, "no critical section at all")
		need(res.NoQuorumAcqs == 0, "%d acquisitions succeeded while a majority was down", res.NoQuorumAcqs)
		late(f)
	case ExpectCaught:
		need(len(f.Overlaps) > 0, "the checker found no overlap with a broken client")
		if f.Linearizable != "-" {
			need(f.Linearizable == string(porcupine.Illegal), "the checker found no lost update with a broken client (%s)", f.Linearizable)
		}
	}
	res.Problems, res.Pass = probs, len(probs) == 0
	switch {
	case !res.Pass && res.Summary != "":
		res.Verdict = "FAIL: " + strings.Join(probs, "; ") + ". " + res.Summary
	case !res.Pass:
		res.Verdict = "FAIL: " + strings.Join(probs, "; ")
	case res.Expect == ExpectCaught && res.Summary != "":
		res.Verdict = fmt.Sprintf("ok (caught: %d overlaps). %s", len(f.Overlaps), res.Summary)
	case res.Summary != "":
		res.Verdict = "ok: " + res.Summary
	case res.Expect == ExpectSkewLoss:
		wipes := 0
		for _, w := range res.Windows {
			if w.NoQuorum {
				wipes++
			}
		}
		res.Verdict = fmt.Sprintf("ok (%d wipes; %d fence inversions, %d unsafe writes accepted, no overlap, history %s)", wipes, len(f.FenceInversions), f.UnsafeAccepted, f.Linearizable)
	case res.Expect == ExpectCaught:
		res.Verdict = fmt.Sprintf("ok (caught: %d overlaps, lost updates)", len(f.Overlaps))
	case res.Expect == ExpectUnsafe && len(f.Overlaps) > 0:
		res.Verdict = fmt.Sprintf("ok (overlapped %d times, as documented; fencing refused %d writes, no update lost)", len(f.Overlaps), f.FencedRejects)
	case res.Expect == ExpectUnsafe:
		res.Verdict = "ok (no overlap this run; fencing held)"
	default:
		res.Verdict = "ok"
	}
	if res.NotApplied != "" {
		res.Verdict += "; " + res.NotApplied
	}
}

// Table renders the report as a Markdown table.
func (r *Report) Table() string {
	var b strings.Builder
	b.WriteString("| scenario | expect | critical sections | acq/s | acq/s in fault | overlaps | fence inversions | fenced rejections | unsafe accepted | loss signals (late) | linearizable | verdict |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|---|\n")
	for _, x := range r.Results {
		fault := "-"
		if x.FaultTime > 0 {
			fault = fmt.Sprintf("%.0f", x.FaultAcqPerSec)
		}
		if x.NoQuorumAcqs > 0 || x.Expect == ExpectNoQuorum || x.Expect == ExpectFenceLoss {
			fault = fmt.Sprintf("%s (0 maj: %d)", fault, x.NoQuorumAcqs)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %.0f | %s | %d | %d | %d | %d | %d (%d) | %s | %s |\n",
			x.Scenario, x.Expect, x.CriticalSections, x.AcqPerSec, fault, len(x.Overlaps), len(x.FenceInversions),
			x.FencedRejects, x.UnsafeAccepted, x.LossSignals, x.LateLossSignals, x.Linearizable, x.Verdict)
	}
	fmt.Fprintf(&b, "\n%d critical sections in %s (profile %s, TTL %s).\n", r.CriticalSections, r.Runtime.Round(time.Second), r.Profile, r.TTL)
	first := true
	for _, x := range r.Results {
		for _, fig := range x.Figures {
			if first {
				b.WriteString("\n| scenario | figure | value | target | met |\n|---|---|--:|---|---|\n")
				first = false
			}
			met := ""
			if fig.Met != nil {
				met = "no"
				if *fig.Met {
					met = "yes"
				}
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", x.Scenario, fig.Name, fmtFigure(fig.Value, fig.Unit), fig.Target, met)
		}
	}
	return b.String()
}

// timeline draws a scenario's register history (see WriteTimeline).
func timeline(path string, res *Result, css []CS, fencing bool) error {
	return WriteTimeline(path, res.Findings, css, res.Windows, fencing)
}

// WriteTimeline draws the register history that Check saw (f) with
// porcupine's visualizer, as an HTML file at path, annotated with the
// holders' believed validity, the overlaps and the fault windows. The
// simulator (package chaos/sim) uses it too.
func WriteTimeline(path string, f *Findings, css []CS, windows []Window, fencing bool) error {
	info := f.info
	var ann []porcupine.Annotation
	mark := map[int]bool{}
	for i, o := range f.Overlaps {
		if i >= 200 {
			break
		}
		mark[o.A], mark[o.B] = true, true
		ann = append(ann, porcupine.Annotation{Tag: "overlaps", Start: int64(o.From), End: int64(o.To),
			Description:     fmt.Sprintf("overlap c%d/c%d", o.ClientA, o.ClientB),
			Details:         fmt.Sprintf("CS %d (client %d, fence %d) and CS %d (client %d, fence %d) both believed valid", o.A, o.ClientA, o.FenceA, o.B, o.ClientB, o.FenceB),
			BackgroundColor: "#f4a3a3"})
	}
	ids := make([]int, 0, len(mark))
	for id := range mark {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		c := css[id]
		ann = append(ann, porcupine.Annotation{ClientId: c.Client, Start: int64(c.Start), End: int64(c.BelievedEnd()),
			Description: fmt.Sprintf("fence %d believed valid", c.Fence), BackgroundColor: "#cde8c8"})
	}
	for _, w := range windows {
		ann = append(ann, porcupine.Annotation{Tag: "faults", Start: int64(w.From), End: int64(w.To), Description: w.Fault, BackgroundColor: "#fde7a9"})
	}
	info.AddAnnotations(ann)
	return porcupine.VisualizePath(registerModel(fencing), info, path)
}

// lateWrites counts the writes that GC-paused critical sections made after
// their lock's believed end: overtaken ones (the register had seen a newer
// fence, so fencing must refuse them), how many of those were refused, and
// the ones nobody overtook (no other holder touched the resource during the
// pause, as on a machine too loaded for the others to acquire in time:
// accepting them is safe, and the checker's history says so).
func lateWrites(css []CS, ops []RegOp) (overtaken, refused, alone int) {
	for _, c := range css {
		if !c.GCPaused {
			continue
		}
		for _, st := range c.Steps {
			if st.WriteSeq < 0 || ops[st.WriteSeq].At <= c.BelievedEnd() {
				continue
			}
			if ops[st.WriteSeq].MaxFence <= c.Fence {
				alone++
				continue
			}
			overtaken++
			if !st.Accepted {
				refused++
			}
		}
	}
	return overtaken, refused, alone
}

package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Metric is one measured value with its benchstat unit ("ns/op", "p99-ns",
// "cycles/s", ...). Units contain no spaces.
type Metric struct {
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
}

// Rep is one repetition of one (scenario, case, library): N operations and
// the metrics measured over them, in the order they are printed.
type Rep struct {
	N       int      `json:"n"`
	Metrics []Metric `json:"metrics"`
}

// Get returns the value of unit in the repetition.
func (r Rep) Get(unit string) (float64, bool) {
	for _, m := range r.Metrics {
		if m.Unit == unit {
			return m.Value, true
		}
	}
	return 0, false
}

// Result gathers the repetitions of one library in one case of a scenario.
type Result struct {
	Scenario string `json:"scenario"`
	Case     string `json:"case"` // "nodes=5", "goroutines=32/retry=default"; may be empty
	Lib      string `json:"lib"`
	Reps     []Rep  `json:"reps"`
}

// Stat is the median and spread (min, max over repetitions) of one unit.
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Stat summarizes unit over the repetitions; ok is false when no
// repetition has it.
func (r *Result) Stat(unit string) (s Stat, ok bool) {
	var vs []float64
	for _, rep := range r.Reps {
		if v, has := rep.Get(unit); has {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return Stat{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}, false
	}
	s = Stat{Median: Median(vs), Min: vs[0], Max: vs[0]}
	for _, v := range vs {
		s.Min, s.Max = min(s.Min, v), max(s.Max, v)
	}
	return s, true
}

// Units lists the units of the result in first-seen order.
func (r *Result) Units() []string {
	var units []string
	seen := map[string]bool{}
	for _, rep := range r.Reps {
		for _, m := range rep.Metrics {
			if !seen[m.Unit] {
				seen[m.Unit] = true
				units = append(units, m.Unit)
			}
		}
	}
	return units
}

// BenchName is the benchstat name of the result: "Benchmark", the
// scenario, its parameters and library as path elements, and "-" with
// GOMAXPROCS.
func (r *Result) BenchName() string {
	var b strings.Builder
	b.WriteString("Benchmark")
	b.WriteString(r.Scenario)
	if r.Case != "" {
		b.WriteString("/")
		b.WriteString(r.Case)
	}
	b.WriteString("/lib=")
	b.WriteString(r.Lib)
	fmt.Fprintf(&b, "-%d", runtime.GOMAXPROCS(0))
	return b.String()
}

// BenchLine formats one repetition in the Go benchmark format that
// benchstat reads: name, iterations, then value/unit pairs.
func (r *Result) BenchLine(rep Rep) string {
	var b strings.Builder
	b.WriteString(r.BenchName())
	fmt.Fprintf(&b, "\t%d", rep.N)
	for _, m := range rep.Metrics {
		b.WriteString("\t")
		b.WriteString(strconv.FormatFloat(m.Value, 'f', -1, 64))
		b.WriteString(" ")
		b.WriteString(m.Unit)
	}
	return b.String()
}

// Ratio compares quorumlock with a baseline on one metric.
type Ratio struct {
	Name     string  `json:"name"`
	Num      string  `json:"num"` // e.g. "Uncontended/nodes=5/lib=quorumlock cycles/s"
	Den      string  `json:"den"`
	Value    float64 `json:"value"`
	Target   string  `json:"target,omitempty"` // e.g. ">= 1.3"
	Met      *bool   `json:"met,omitempty"`
	Comment  string  `json:"comment,omitempty"`
	LowerIsB bool    `json:"lower_is_better,omitempty"`
}

// Meta describes the run.
type Meta struct {
	Date      time.Time `json:"date"`
	Profile   string    `json:"profile"`
	GoVersion string    `json:"go_version"`
	GOOS      string    `json:"goos"`
	GOARCH    string    `json:"goarch"`
	NumCPU    int       `json:"num_cpu"`
	CPUModel  string    `json:"cpu_model"`
	Redis     string    `json:"redis_version,omitempty"`
	Reps      int       `json:"reps"`
	Notes     []string  `json:"notes,omitempty"`
}

// Report is everything a run produced; it is written as JSON.
type Report struct {
	Meta    Meta      `json:"meta"`
	Results []*Result `json:"results"`
	Ratios  []Ratio   `json:"ratios"`
	Charts  []string  `json:"charts"`
}

// jsonResult adds the per-unit statistics to a Result in the JSON output.
type jsonResult struct {
	*Result
	Stats map[string]Stat `json:"stats"`
}

// MarshalJSON writes results with their per-unit median/min/max.
func (rp *Report) MarshalJSON() ([]byte, error) {
	type plain Report
	out := struct {
		*plain
		Results []jsonResult `json:"results"`
	}{plain: (*plain)(rp)}
	for _, r := range rp.Results {
		jr := jsonResult{Result: r, Stats: map[string]Stat{}}
		for _, u := range r.Units() {
			s, _ := r.Stat(u)
			jr.Stats[u] = s
		}
		out.Results = append(out.Results, jr)
	}
	return json.Marshal(out)
}

// Find returns the result of scenario, case and lib, or nil.
func (rp *Report) Find(scenario, cas, lib string) *Result {
	for _, r := range rp.Results {
		if r.Scenario == scenario && r.Case == cas && r.Lib == lib {
			return r
		}
	}
	return nil
}

// Add appends a repetition to the matching result, creating it if needed.
func (rp *Report) Add(scenario, cas, lib string, rep Rep) *Result {
	r := rp.Find(scenario, cas, lib)
	if r == nil {
		r = &Result{Scenario: scenario, Case: cas, Lib: lib}
		rp.Results = append(rp.Results, r)
	}
	r.Reps = append(r.Reps, rep)
	return r
}

// WriteBench writes every repetition as benchstat lines, preceded by the
// goos/goarch/cpu header benchstat shows.
func (rp *Report) WriteBench(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "goos: %s\ngoarch: %s\npkg: github.com/quorumlock/quorumlock/bench\ncpu: %s\n",
		rp.Meta.GOOS, rp.Meta.GOARCH, rp.Meta.CPUModel); err != nil {
		return err
	}
	for _, r := range rp.Results {
		for _, rep := range r.Reps {
			if _, err := fmt.Fprintln(w, r.BenchLine(rep)); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteJSON writes the report, indented, to path.
func (rp *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(rp, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// CPUModel reads the model name from /proc/cpuinfo ("unknown" elsewhere).
func CPUModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

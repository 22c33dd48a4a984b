package harness

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func sampleReport() *Report {
	rp := &Report{Meta: Meta{Date: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Profile: "short", GOOS: "linux", GOARCH: "amd64", CPUModel: "test cpu", Reps: 3}}
	for i, v := range []float64{100, 300, 200} {
		rp.Add("Uncontended", "nodes=5", "quorumlock", Rep{N: 10 + i, Metrics: []Metric{{"ns/op", v}, {"cycles/s", 1e9 / v}, {"p99-ns", 2 * v}}})
	}
	rp.Add("Uncontended", "nodes=5", "redsync", Rep{N: 7, Metrics: []Metric{{"ns/op", 400}}})
	return rp
}

func TestResultStat(t *testing.T) {
	r := sampleReport().Find("Uncontended", "nodes=5", "quorumlock")
	s, ok := r.Stat("ns/op")
	if !ok || s.Median != 200 || s.Min != 100 || s.Max != 300 {
		t.Fatalf("Stat(ns/op) = %+v, %v", s, ok)
	}
	if _, ok := r.Stat("nope"); ok {
		t.Fatal("Stat of a missing unit reported ok")
	}
	if got := strings.Join(r.Units(), ","); got != "ns/op,cycles/s,p99-ns" {
		t.Fatalf("Units = %s", got)
	}
}

// benchLine is the Go benchmark format benchstat parses: a name starting
// with Benchmark and ending in -GOMAXPROCS, an iteration count, then
// value-unit pairs.
var benchLine = regexp.MustCompile(`^Benchmark[^\s]+-\d+\t\d+(\t-?[0-9.e+]+ [^\s]+)+$`)

func TestBenchLinesAreBenchstatFormat(t *testing.T) {
	rp := sampleReport()
	var buf bytes.Buffer
	if err := rp.WriteBench(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var benches int
	for _, l := range lines {
		if strings.HasPrefix(l, "Benchmark") {
			benches++
			if !benchLine.MatchString(l) {
				t.Errorf("not a benchstat line: %q", l)
			}
		} else if !regexp.MustCompile(`^(goos|goarch|pkg|cpu): `).MatchString(l) {
			t.Errorf("unexpected header line %q", l)
		}
	}
	if benches != 4 {
		t.Fatalf("%d benchmark lines, want 4 (one per repetition)", benches)
	}
	if !strings.Contains(buf.String(), "BenchmarkUncontended/nodes=5/lib=quorumlock-") {
		t.Fatalf("missing the sub-benchmark name:\n%s", buf.String())
	}
}

func TestJSONShape(t *testing.T) {
	rp := sampleReport()
	ok := true
	rp.Ratios = []Ratio{{Name: "x", Value: 1.5, Target: ">= 1.3", Met: &ok}}
	rp.Charts = []string{"uncontended.png"}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := rp.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Meta struct {
			Date    time.Time `json:"date"`
			Profile string    `json:"profile"`
			CPU     string    `json:"cpu_model"`
		} `json:"meta"`
		Results []struct {
			Scenario string `json:"scenario"`
			Case     string `json:"case"`
			Lib      string `json:"lib"`
			Reps     []struct {
				N       int `json:"n"`
				Metrics []struct {
					Unit  string  `json:"unit"`
					Value float64 `json:"value"`
				} `json:"metrics"`
			} `json:"reps"`
			Stats map[string]struct {
				Median, Min, Max float64
			} `json:"stats"`
		} `json:"results"`
		Ratios []struct {
			Name  string  `json:"name"`
			Value float64 `json:"value"`
			Met   *bool   `json:"met"`
		} `json:"ratios"`
		Charts []string `json:"charts"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if got.Meta.Profile != "short" || got.Meta.CPU != "test cpu" || got.Meta.Date.Year() != 2026 {
		t.Errorf("meta = %+v", got.Meta)
	}
	if len(got.Results) != 2 || got.Results[0].Lib != "quorumlock" || len(got.Results[0].Reps) != 3 {
		t.Fatalf("results = %+v", got.Results)
	}
	st := got.Results[0].Stats["ns/op"]
	if st.Median != 200 || st.Min != 100 || st.Max != 300 {
		t.Errorf("stats[ns/op] = %+v", st)
	}
	if got.Results[0].Reps[1].Metrics[0].Unit != "ns/op" || got.Results[0].Reps[1].N != 11 {
		t.Errorf("rep = %+v", got.Results[0].Reps[1])
	}
	if len(got.Ratios) != 1 || got.Ratios[0].Met == nil || !*got.Ratios[0].Met || len(got.Charts) != 1 {
		t.Errorf("ratios/charts = %+v %v", got.Ratios, got.Charts)
	}
}

func TestSaveChart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.png")
	nan := math.NaN()
	err := SaveChart(path,
		Panel{Title: "a", YLabel: "x", Cases: []string{"n=1", "n=3"}, Series: []Series{
			{Name: "quorumlock", Med: []float64{1, 2}, Min: []float64{0.5, 1.5}, Max: []float64{1.5, 2.5}},
			{Name: "redsync", Med: []float64{2, nan}, Min: []float64{2, nan}, Max: []float64{2, nan}},
		}},
		Panel{Title: "b", Cases: []string{"n=1"}, LogY: true, Series: []Series{{Name: "q", Med: []float64{1000}}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("not a PNG (%v)", err)
	}
	if err := SaveChart(path, Panel{Cases: []string{"a"}, Series: []Series{{Name: "bad", Med: []float64{1, 2}}}}); err == nil {
		t.Fatal("mismatched series length accepted")
	}
}

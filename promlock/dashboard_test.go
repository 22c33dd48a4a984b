package promlock_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quorumlock/quorumlock/promlock"
	"gopkg.in/yaml.v3"
)

// registered returns the metric names promlock.New registers.
func registered(t *testing.T) map[string]bool {
	t.Helper()
	reg := &capture{Registry: prometheus.NewRegistry(), names: map[string]bool{}}
	if _, err := promlock.New(reg); err != nil {
		t.Fatal(err)
	}
	return reg.names
}

type capture struct {
	*prometheus.Registry
	names map[string]bool
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (c *capture) Register(col prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 10)
	go func() { col.Describe(ch); close(ch) }()
	for d := range ch {
		c.names[fqName.FindStringSubmatch(d.String())[1]] = true
	}
	return c.Registry.Register(col)
}

var metricRef = regexp.MustCompile(`\bquorumlock_[a-z_]+`)

// checkNames fails for every metric expr names that the adapter does not
// register (histogram series _bucket, _sum, _count count as their family);
// it returns the families named.
func checkNames(t *testing.T, where, expr string, known map[string]bool) []string {
	t.Helper()
	var names []string
	for _, ref := range metricRef.FindAllString(expr, -1) {
		name := ref
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(ref, suffix); ok && known[base] {
				name = base
			}
		}
		if !known[name] {
			t.Errorf("%s: %s is not a metric promlock registers", where, ref)
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		t.Errorf("%s: expr %q names no quorumlock metric", where, expr)
	}
	return names
}

// The Grafana dashboard loads as JSON with the structure Grafana needs, and
// every panel queries metrics the adapter really registers; together the
// panels cover acquisitions, latency, contention, waiters, losses and node
// errors.
func TestDashboard(t *testing.T) {
	raw, err := os.ReadFile("dashboards/quorumlock.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID           string `json:"uid"`
		Title         string `json:"title"`
		SchemaVersion int    `json:"schemaVersion"`
		Templating    struct {
			List []struct{ Name, Type string } `json:"list"`
		} `json:"templating"`
		Panels []struct {
			ID      int                      `json:"id"`
			Type    string                   `json:"type"`
			Title   string                   `json:"title"`
			GridPos struct{ X, Y, W, H int } `json:"gridPos"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 30 || len(d.Panels) == 0 {
		t.Fatalf("dashboard uid %q title %q schemaVersion %d, %d panels", d.UID, d.Title, d.SchemaVersion, len(d.Panels))
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	known := registered(t)
	var used []string
	ids := map[int]bool{}
	for _, p := range d.Panels {
		where := "panel " + p.Title
		if p.Title == "" || ids[p.ID] || !slices.Contains([]string{"timeseries", "stat"}, p.Type) || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %d %q: type %q, gridPos %+v (needs a title, a unique id, a known type and a place in 24 columns)", p.ID, p.Title, p.Type, p.GridPos)
		}
		ids[p.ID] = true
		if len(p.Targets) == 0 {
			t.Errorf("%s: no targets", where)
		}
		for _, tg := range p.Targets {
			if tg.RefID == "" {
				t.Errorf("%s: target without refId", where)
			}
			for _, v := range regexp.MustCompile(`\$(\w+)`).FindAllStringSubmatch(tg.Expr, -1) {
				if !vars[v[1]] && !strings.HasPrefix(v[1], "__") {
					t.Errorf("%s: $%s is not a dashboard variable", where, v[1])
				}
			}
			used = append(used, checkNames(t, where, tg.Expr, known)...)
		}
	}
	for _, want := range []string{"quorumlock_acquisitions_total", "quorumlock_acquire_duration_seconds", "quorumlock_contended_attempts_total",
		"quorumlock_waiters", "quorumlock_losses_total", "quorumlock_node_errors_total"} {
		if !slices.Contains(used, want) {
			t.Errorf("no panel shows %s", want)
		}
	}
}

// The example alerting rules parse as a Prometheus rule file's structure,
// name registered metrics, and cover the three cases.
func TestAlertRules(t *testing.T) {
	raw, err := os.ReadFile("alerts/quorumlock-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	known := registered(t)
	alerts := map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %+v: needs alert, labels.severity and annotations.summary", r)
			}
			checkNames(t, "alert "+r.Alert, r.Expr, known)
			alerts[r.Alert] = r.For
		}
	}
	for alert, wantFor := range map[string]string{"QuorumlockLocksLost": "", "QuorumlockAcquisitionsFailing": "5m", "QuorumlockNodeFailing": "2m", "QuorumlockTakeovers": ""} {
		if got, ok := alerts[alert]; !ok || got != wantFor {
			t.Errorf("alert %s: present %v, for %q; want for %q", alert, ok, got, wantFor)
		}
	}
}

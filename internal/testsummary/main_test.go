package main

import (
	"strings"
	"testing"
)

func TestReport(t *testing.T) {
	const pkg = `"Package":"example.com/p"`
	events := func(lines ...string) string { return strings.Join(lines, "\n") + "\n" }
	pass := `{"Action":"pass",` + pkg + `,"Test":"TestA"}`
	skip := events(`{"Action":"output",`+pkg+`,"Test":"TestB","Output":"    b_test.go:9: needs redis-server\n"}`,
		`{"Action":"skip",`+pkg+`,"Test":"TestB"}`)
	fail := events(`{"Action":"output",`+pkg+`,"Test":"TestC","Output":"    c_test.go:3: broken\n"}`,
		`{"Action":"fail",`+pkg+`,"Test":"TestC"}`)
	cases := []struct {
		name, in string
		code     int
		want     []string
	}{
		{"go's own lines decide nothing", events("go: downloading example.com/m v1.0.0", pass, `{"Action":"pass",`+pkg+`,"Elapsed":0.5}`),
			0, []string{"go: downloading", "ok: 1 passed, 0 failed, 0 skipped"}},
		{"skips grouped by reason", events(pass, skip, `{"Action":"pass",`+pkg+`}`),
			0, []string{"1  needs redis-server", "1 passed, 0 failed, 1 skipped"}},
		{"a failed test", events(pass, fail, `{"Action":"fail",`+pkg+`}`),
			1, []string{"=== FAIL example.com/p TestC", "broken", "FAIL: 1 passed, 1 failed"}},
		{"a package that fails to build", events(`{"Action":"output",`+pkg+`,"Output":"p.go:1: syntax error\n"}`, `{"Action":"fail",`+pkg+`}`),
			1, []string{"syntax error", "FAIL: 0 passed, 0 failed"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			if code := run(strings.NewReader(c.in), &out); code != c.code {
				t.Errorf("exit %d, want %d\n%s", code, c.code, out.String())
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

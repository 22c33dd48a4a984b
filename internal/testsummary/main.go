// Command testsummary reads `go test -json` on stdin and prints what a
// contributor needs after a quick run: the output of each failed test, one
// line per package, the tests skipped grouped by reason, and a verdict. It
// exits 1 when a test or a package failed. make check pipes into it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

type pkgResult struct {
	pass, fail, skip int
	action           string
	elapsed          float64
}

func main() {
	os.Exit(run(os.Stdin, os.Stdout))
}

func run(in io.Reader, out io.Writer) int {
	s, err := collect(in)
	if err != nil {
		fmt.Fprintln(out, "testsummary:", err)
		return 1
	}
	return s.report(out)
}

// summary is what a run of go test -json said.
type summary struct {
	outputs map[string]*strings.Builder // "pkg test" -> its output
	pkgs    map[string]*pkgResult
	skips   map[string][]string // reason -> "pkg.Test"
	failed  []string            // "pkg test" of each failure, in order
	other   strings.Builder     // lines that are not events: go's own messages
}

func collect(in io.Reader) (*summary, error) {
	s := &summary{outputs: map[string]*strings.Builder{}, pkgs: map[string]*pkgResult{}, skips: map[string][]string{}}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			s.other.WriteString(sc.Text() + "\n")
			continue
		}
		s.add(e)
	}
	return s, sc.Err()
}

func (s *summary) add(e event) {
	p := s.pkgs[e.Package]
	if p == nil {
		p = &pkgResult{}
		s.pkgs[e.Package] = p
	}
	id := e.Package + " " + e.Test
	switch {
	case e.Action == "output":
		b := s.outputs[id]
		if b == nil {
			b = &strings.Builder{}
			s.outputs[id] = b
		}
		b.WriteString(e.Output)
	case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
		p.action, p.elapsed = e.Action, e.Elapsed
		if e.Action == "fail" && p.fail == 0 {
			s.failed = append(s.failed, id) // a build failure or a crash outside any test
		}
	case e.Action == "pass":
		p.pass++
	case e.Action == "fail":
		p.fail++
		s.failed = append(s.failed, id)
	case e.Action == "skip":
		p.skip++
		if !strings.Contains(e.Test, "/") {
			r := skipReason(s.outputs[id])
			s.skips[r] = append(s.skips[r], shortPkg(e.Package)+"."+e.Test)
		}
	}
}

// report prints the failures, a line per package, the skips by reason and
// the verdict; it returns 1 when a test or a package failed. Lines that are
// not events (go: downloading ...) are shown but decide nothing: a build
// failure is a package's fail event.
func (s *summary) report(out io.Writer) int {
	for _, id := range s.failed {
		fmt.Fprintf(out, "=== FAIL %s\n%s\n", id, s.outputs[id])
	}
	fmt.Fprint(out, s.other.String())
	var pass, fail, skip int
	bad := false
	for _, n := range slices.Sorted(maps.Keys(s.pkgs)) {
		p := s.pkgs[n]
		pass, fail, skip = pass+p.pass, fail+p.fail, skip+p.skip
		bad = bad || p.action == "fail" || p.fail > 0
		if p.pass+p.fail+p.skip > 0 || p.action == "fail" {
			fmt.Fprintf(out, "%-4s %-48s %6.1fs  %4d passed %3d skipped\n", strings.ToUpper(orDash(p.action)), shortPkg(n), p.elapsed, p.pass, p.skip)
		}
	}
	reasons := slices.Collect(maps.Keys(s.skips))
	sort.Slice(reasons, func(i, j int) bool { return len(s.skips[reasons[i]]) > len(s.skips[reasons[j]]) })
	if len(reasons) > 0 {
		fmt.Fprintln(out, "\nskipped (top-level tests, by reason):")
		for _, r := range reasons {
			fmt.Fprintf(out, "  %4d  %s\n", len(s.skips[r]), r)
		}
	}
	verdict := "ok"
	if bad {
		verdict = "FAIL"
	}
	fmt.Fprintf(out, "\n%s: %d passed, %d failed, %d skipped. The rest needs real servers: make test.\n", verdict, pass, fail, skip)
	if bad {
		return 1
	}
	return 0
}

// skipReason is the last line a skipped test printed before "--- SKIP".
func skipReason(b *strings.Builder) string {
	if b == nil {
		return "(no reason given)"
	}
	var last string
	for _, l := range strings.Split(b.String(), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "--- SKIP") || strings.HasPrefix(l, "=== ") {
			continue
		}
		if i := strings.Index(l, ": "); i >= 0 && strings.Contains(l[:i], ".go:") {
			l = l[i+2:]
		}
		last = l
	}
	if last == "" {
		return "(no reason given)"
	}
	return last
}

func shortPkg(p string) string { return strings.TrimPrefix(p, "github.com/quorumlock/quorumlock/") }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

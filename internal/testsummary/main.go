// Command testsummary reads `go test -json` on stdin and prints what a
// contributor needs after a quick run: the output of each failed test, one
// line per package, the tests skipped grouped by reason, and a verdict. It
// exits 1 when a test or a build failed. make check pipes into it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
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
	outputs := map[string]*strings.Builder{} // "pkg test" -> its output
	pkgs := map[string]*pkgResult{}
	skips := map[string][]string{} // reason -> "pkg.Test"
	var failed []string
	var other strings.Builder // lines that are not JSON: build errors
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			other.WriteString(sc.Text() + "\n")
			continue
		}
		p := pkgs[e.Package]
		if p == nil {
			p = &pkgResult{}
			pkgs[e.Package] = p
		}
		id := e.Package + " " + e.Test
		switch e.Action {
		case "output":
			b := outputs[id]
			if b == nil {
				b = &strings.Builder{}
				outputs[id] = b
			}
			b.WriteString(e.Output)
		case "pass", "fail", "skip":
			if e.Test == "" {
				p.action, p.elapsed = e.Action, e.Elapsed
				if e.Action == "fail" && outputs[id] != nil && p.fail == 0 {
					failed = append(failed, id) // a build failure or a crash outside any test
				}
				continue
			}
			switch e.Action {
			case "pass":
				p.pass++
			case "fail":
				p.fail++
				failed = append(failed, id)
			case "skip":
				p.skip++
				if !strings.Contains(e.Test, "/") {
					skips[skipReason(outputs[id])] = append(skips[skipReason(outputs[id])], shortPkg(e.Package)+"."+e.Test)
				}
			}
		}
	}
	for _, id := range failed {
		fmt.Fprintf(out, "=== FAIL %s\n%s\n", id, outputs[id])
	}
	if other.Len() > 0 {
		fmt.Fprint(out, other.String())
	}
	names := make([]string, 0, len(pkgs))
	for n := range pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	var pass, fail, skip int
	for _, n := range names {
		p := pkgs[n]
		pass, fail, skip = pass+p.pass, fail+p.fail, skip+p.skip
		if p.pass+p.fail+p.skip == 0 && p.action != "fail" {
			continue // no tests
		}
		fmt.Fprintf(out, "%-4s %-48s %6.1fs  %4d passed %3d skipped\n", strings.ToUpper(orDash(p.action)), shortPkg(n), p.elapsed, p.pass, p.skip)
	}
	reasons := make([]string, 0, len(skips))
	for r := range skips {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool { return len(skips[reasons[i]]) > len(skips[reasons[j]]) })
	if len(reasons) > 0 {
		fmt.Fprintln(out, "\nskipped (top-level tests, by reason):")
		for _, r := range reasons {
			fmt.Fprintf(out, "  %4d  %s\n", len(skips[r]), r)
		}
	}
	bad := fail > 0 || other.Len() > 0
	for _, p := range pkgs {
		bad = bad || p.action == "fail"
	}
	verdict := "ok"
	if bad {
		verdict = "FAIL"
	}
	fmt.Fprintf(out, "\n%s: %d passed, %d failed, %d skipped. The rest needs real servers: make test.\n",
		verdict, pass, fail, skip)
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

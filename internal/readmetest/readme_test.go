package readmetest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// readmePath is the README whose snippets are built, relative to this package.
const readmePath = "../../README.md"

// repoRoot is the root module's directory, relative to this package.
const repoRoot = "../.."

// program is one buildable Go program assembled from README blocks.
type program struct {
	line   int      // README line of the block that starts it
	blocks []string // the code of each block, the first with the package clause
	lines  []int    // README line of each block
}

// source is the program made of its first n blocks: the first block, then
// each continuation with its leading import declaration (if any) moved to
// the top, without the imports already there.
func (p *program) source(n int) string {
	var body strings.Builder
	var extra []string
	for i, b := range p.blocks[:n] {
		if i > 0 {
			imports, rest := leadingImports(b)
			extra = append(extra, imports...)
			b = rest
		}
		body.WriteString(b + "\n\n")
	}
	src := body.String()
	var add []string
	for _, spec := range extra {
		if !strings.Contains(src, spec) && !slices.Contains(add, spec) {
			add = append(add, spec)
		}
	}
	if len(add) == 0 {
		return src
	}
	pkg := strings.Index(src, "package ")
	eol := pkg + strings.Index(src[pkg:], "\n")
	return src[:eol+1] + "\nimport (\n\t" + strings.Join(add, "\n\t") + "\n)\n" + src[eol+1:]
}

// leadingImports splits a continuation block into the import specs of its
// leading import declarations (each a quoted path, perhaps named) and the
// rest of its code.
func leadingImports(block string) (specs []string, rest string) {
	lines := strings.Split(block, "\n")
	i, inGroup := 0, false
	for ; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		switch {
		case inGroup && t == ")":
			inGroup = false
		case inGroup:
			if t != "" && !strings.HasPrefix(t, "//") {
				specs = append(specs, t)
			}
		case t == "import (":
			inGroup = true
		case strings.HasPrefix(t, "import "):
			specs = append(specs, strings.TrimSpace(strings.TrimPrefix(t, "import ")))
		case t == "" || strings.HasPrefix(t, "//"):
		default:
			return specs, strings.Join(lines[i:], "\n")
		}
	}
	return specs, ""
}

// parsePrograms groups the README's go blocks into programs (see the package doc).
func parsePrograms(readme string) ([]*program, error) {
	var progs []*program
	var cur *program
	var block []string
	inBlock, start := false, 0
	sc := bufio.NewScanner(strings.NewReader(readme))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case !inBlock && trimmed == "```go":
			inBlock, start, block = true, n, nil
		case inBlock && trimmed == "```":
			inBlock = false
			if startsProgram(block) {
				cur = &program{line: start}
				progs = append(progs, cur)
			} else if cur == nil {
				return nil, fmt.Errorf("line %d: a go block continues no program: start the first with \"package main\"", start)
			}
			cur.blocks = append(cur.blocks, strings.Join(block, "\n"))
			cur.lines = append(cur.lines, start)
		case inBlock:
			block = append(block, line)
		}
	}
	if inBlock {
		return nil, fmt.Errorf("line %d: go block not closed", start)
	}
	return progs, sc.Err()
}

// startsProgram reports whether a block's first code line is a package clause.
func startsProgram(block []string) bool {
	for _, l := range block {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "//") {
			continue
		}
		return strings.HasPrefix(t, "package ")
	}
	return false
}

var submoduleImport = regexp.MustCompile(`"github\.com/quorumlock/quorumlock/(promlock|otellock|rueidisnode)"`)

// writeModule lays out a throwaway module holding src, with replaces to the local tree.
func writeModule(t *testing.T, dir, root, src string) {
	t.Helper()
	mods := []string{""}
	for _, m := range submoduleImport.FindAllStringSubmatch(src, -1) {
		mods = append(mods, m[1])
	}
	var gomod, gosum bytes.Buffer
	gomod.WriteString("module readmesnippet\n\ngo 1.26.0\n\n")
	seen := map[string]bool{}
	for _, m := range mods {
		if seen[m] {
			continue
		}
		seen[m] = true
		path, dir := "github.com/quorumlock/quorumlock", root
		if m != "" {
			path, dir = path+"/"+m, filepath.Join(root, m)
		}
		fmt.Fprintf(&gomod, "require %s v0.0.0-00010101000000-000000000000\nreplace %s => %s\n", path, path, dir)
		sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
		if err != nil {
			t.Fatal(err)
		}
		gosum.Write(sum)
	}
	for name, data := range map[string][]byte{"go.mod": gomod.Bytes(), "go.sum": gosum.Bytes(), "main.go": []byte(src)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadmeSnippetsBuild builds every program of the README's go blocks.
func TestReadmeSnippetsBuild(t *testing.T) {
	buildSnippets(t, readmePath)
}

// TestMigratingSnippetsBuild builds every program of the migration guide's go blocks.
func TestMigratingSnippetsBuild(t *testing.T) {
	buildSnippets(t, migratingPath)
}

// migratingPath is the guide for users of other lock libraries, relative to this package.
const migratingPath = "../../docs/migrating.md"

// buildSnippets builds the programs of the go blocks of the document at path.
func buildSnippets(t *testing.T, path string) {
	if testing.Short() {
		t.Skip("builds a module per program of a document's go blocks (a minute): skipped by -short (make check); make test runs it")
	}
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	progs, err := parsePrograms(string(doc))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(progs) == 0 {
		t.Fatalf("%s: no go blocks found", path)
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	goBin := "go"
	// Every block builds with the blocks before it in its program, and
	// without those after it: a program's first block builds on its own.
	for _, p := range progs {
		for n := 1; n <= len(p.blocks); n++ {
			t.Run(fmt.Sprintf("line%d", p.lines[n-1]), func(t *testing.T) {
				dir := t.TempDir()
				writeModule(t, dir, root, p.source(n))
				cmd := exec.Command(goBin, "build", "-o", os.DevNull, ".")
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
				if out, err := cmd.CombinedOutput(); err != nil {
					what := fmt.Sprintf("the program starting at line %d", p.line)
					if n > 1 {
						what = fmt.Sprintf("the block at line %d, continuing the program at line %d,", p.lines[n-1], p.line)
					}
					t.Errorf("%s: %s does not build: %v\n%s", path, what, err, out)
				}
			})
		}
	}
}

// TestParseProgramsGroupsBlocks checks the convention on a small README.
func TestParseProgramsGroupsBlocks(t *testing.T) {
	readme := "text\n```go\npackage main\n\nfunc main() {}\n```\n```go\n// more\nfunc f() {}\n```\n```sh\nnot go\n```\n```go\npackage main\n```\n"
	progs, err := parsePrograms(readme)
	if err != nil {
		t.Fatal(err)
	}
	if len(progs) != 2 || progs[0].line != 2 || progs[1].line != 14 {
		t.Fatalf("got %d programs, want 2 starting at lines 2 and 14", len(progs))
	}
	if got := progs[0].source(2); !strings.Contains(got, "func f() {}") {
		t.Errorf("the continuation block was not appended to the first program:\n%s", got)
	}
	if got := progs[0].source(1); strings.Contains(got, "func f() {}") {
		t.Errorf("the first block alone holds the continuation:\n%s", got)
	}
	withImports := "```go\npackage main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println() }\n```\n" +
		"```go\n// more\nimport (\n\t\"fmt\"\n\tx \"strings\"\n)\n\nfunc g() string { return x.ToUpper(fmt.Sprint()) }\n```\n"
	progs, err = parsePrograms(withImports)
	if err != nil {
		t.Fatal(err)
	}
	want := "package main\n\nimport (\n\tx \"strings\"\n)\n\nimport \"fmt\"\n\nfunc main() { fmt.Println() }\n\nfunc g() string { return x.ToUpper(fmt.Sprint()) }\n\n"
	if got := progs[0].source(2); got != want {
		t.Errorf("a continuation's imports: got\n%s\nwant\n%s", got, want)
	}
	if _, err := parsePrograms("```go\nfunc f() {}\n```\n"); err == nil {
		t.Error("a continuation block without a program: want an error")
	}
	if _, err := parsePrograms("```go\npackage main\n"); err == nil {
		t.Error("an unclosed block: want an error")
	}
}

// The Quickstart's program exits 1 with the reason on its last line when
// REDLOCK_NODES is unset and when no node accepts connections, rather
// than using a default address or exiting 0.
func TestReadmeQuickstartFailsWithReason(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the Quickstart's program: skipped by -short (make check); make test runs it")
	}
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	progs, err := parsePrograms(string(readme))
	if err != nil || len(progs) == 0 {
		t.Fatalf("%s: %d programs, %v", readmePath, len(progs), err)
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeModule(t, dir, root, progs[0].source(1))
	bin := filepath.Join(dir, "quickstart")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	var refused []string
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		refused = append(refused, ln.Addr().String())
		_ = ln.Close() // nothing listens: connections are refused
	}
	for _, tc := range []struct{ name, nodes, want string }{
		{"unset", "", "REDLOCK_NODES is not set"},
		{"one node", "127.0.0.1:6379", "one node is no quorum"},
		{"refused", strings.Join(refused, ","), "quorum of nodes unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // hang guard
			defer cancel()
			cmd := exec.CommandContext(ctx, bin)
			cmd.Env = append(os.Environ(), "REDLOCK_NODES="+tc.nodes)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("exit: %v, want status 1; stderr:\n%s", err, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if last := lines[len(lines)-1]; !strings.Contains(last, tc.want) {
				t.Errorf("last line %q does not say %q; stderr:\n%s", last, tc.want, stderr.String())
			}
		})
	}
}

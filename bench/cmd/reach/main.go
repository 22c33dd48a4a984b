// Command reach counts what (*redlock.Client).Acquire reaches: the
// functions declared in package redlock that a static SSA call graph
// (golang.org/x/tools/go/callgraph/static: static calls only, no interface
// or function-value calls) reaches from (*Client).Acquire, with closures and
// generic instances counted as the function that declares them, and the
// files those functions are in. It also counts the functions of
// internal/quorum reached. Layout rule: Acquire reaches at most about 40
// functions in at most 5 files of redlock (docs/design.md).
//
//	cd bench && go run ./cmd/reach [-list] [REPO]
//
// REPO is the repository's root (default ..); -list lists the functions.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/callgraph/static"
	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"
	"golang.org/x/tools/go/ssa/ssautil"
)

const (
	redlockPath = "github.com/quorumlock/quorumlock/redlock"
	quorumPath  = "github.com/quorumlock/quorumlock/internal/quorum"
	root        = "(*" + redlockPath + ".Client).Acquire"
)

func main() {
	list := flag.Bool("list", false, "list the functions")
	flag.Parse()
	dir := ".."
	if flag.NArg() > 0 {
		dir = flag.Arg(0)
	}
	pkgs, err := packages.Load(&packages.Config{Mode: packages.LoadAllSyntax, Dir: dir}, "./redlock")
	if err != nil || packages.PrintErrors(pkgs) > 0 {
		fmt.Fprintln(os.Stderr, "reach: loading ./redlock failed:", err)
		os.Exit(1)
	}
	prog, _ := ssautil.AllPackages(pkgs, ssa.InstantiateGenerics)
	prog.Build()
	cg := static.CallGraph(prog)

	var stack []*ssa.Function
	for fn := range cg.Nodes {
		if fn != nil && fn.String() == root {
			stack = append(stack, fn)
		}
	}
	if len(stack) == 0 {
		fmt.Fprintln(os.Stderr, "reach: no", root)
		os.Exit(1)
	}
	seen := map[*ssa.Function]bool{stack[0]: true}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n := cg.Nodes[f]; n != nil {
			for _, e := range n.Out {
				if g := e.Callee.Func; !seen[g] {
					seen[g] = true
					stack = append(stack, g)
				}
			}
		}
	}

	fns, files, quorum := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for f := range seen {
		for f.Parent() != nil { // a closure counts as the function declaring it
			f = f.Parent()
		}
		if f.Origin() != nil { // a generic instance, as its generic function
			f = f.Origin()
		}
		if f.Pkg == nil || f.Synthetic != "" {
			continue
		}
		switch f.Pkg.Pkg.Path() {
		case redlockPath:
			fns[f.String()] = true
			files[filepath.Base(prog.Fset.Position(f.Pos()).Filename)] = true
		case quorumPath:
			quorum[f.String()] = true
		}
	}
	fmt.Printf("(*Client).Acquire reaches %d functions in %d files of redlock: %s\n", len(fns), len(files), strings.Join(sorted(files), " "))
	fmt.Printf("  and %d functions of internal/quorum\n", len(quorum))
	if *list {
		for _, f := range sorted(fns) {
			fmt.Println("  ", f)
		}
		for _, f := range sorted(quorum) {
			fmt.Println("  ", f)
		}
	}
}

func sorted(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

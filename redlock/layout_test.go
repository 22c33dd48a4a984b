package redlock

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The package's files call each other one way: no file calls a function or
// method of a file that (directly or through others) calls one of its own.
// A reader follows a call down and never comes back to a file they left.
func TestFileCallsPointOneWay(t *testing.T) {
	t.Parallel()
	edges := fileCalls(t)
	if cycle := findCycle(edges); cycle != nil {
		var b strings.Builder
		for i, f := range cycle {
			next := cycle[(i+1)%len(cycle)]
			b.WriteString("\n  " + f + " -> " + next + ": " + strings.Join(edges[f][next], ", "))
		}
		t.Errorf("files call each other in a circle:%s", b.String())
	}
}

// fileCalls type-checks the package's non-test files and returns, per
// file, the files whose functions and methods it uses, with their names.
func fileCalls(t *testing.T) map[string]map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check("redlock", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	edges := map[string]map[string][]string{}
	for id, obj := range info.Uses {
		fn, ok := obj.(*types.Func)
		if !ok || fn.Pkg() != pkg {
			continue
		}
		from, to := filepath.Base(fset.Position(id.Pos()).Filename), filepath.Base(fset.Position(fn.Pos()).Filename)
		if from == to {
			continue
		}
		if edges[from] == nil {
			edges[from] = map[string][]string{}
		}
		edges[from][to] = append(edges[from][to], fn.Name())
	}
	return edges
}

// findCycle returns the files of one circle of edges, or nil.
func findCycle(edges map[string]map[string][]string) []string {
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var path, cycle []string
	var visit func(f string) bool
	visit = func(f string) bool {
		state[f] = onPath
		path = append(path, f)
		for _, next := range slices.Sorted(maps.Keys(edges[f])) {
			switch state[next] {
			case onPath:
				for i, p := range path {
					if p == next {
						cycle = append([]string(nil), path[i:]...)
					}
				}
				return true
			case unseen:
				if visit(next) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		state[f] = done
		return false
	}
	for _, f := range slices.Sorted(maps.Keys(edges)) {
		if state[f] == unseen && visit(f) {
			return cycle
		}
	}
	return nil
}

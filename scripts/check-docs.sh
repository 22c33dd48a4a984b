#!/usr/bin/env bash
# Keeps the user-facing docs for users: fails when
#   - the README is over 300 lines;
#   - the README, or a comment in a non-test .go file, names a test function
#     of this repository (Test*, Example_* or ExampleX but not the word
#     Example, Benchmark*, Fuzz*; test names belong in docs/guarantees.md);
#   - the README or docs/guarantees.md carries commit hashes (words of 7 to
#     40 hex digits with a letter and a digit), dates (YYYY-MM-DD) or
#     simulator seed numbers ("seed 12345", "seeds 1-30,000"): history and
#     measurements go to CHANGELOG.md or docs/maintainers.md;
#   - docs/guarantees.md names a test that does not exist.
#
# CHECK_DOCS_GUARANTEES=FILE checks FILE in place of docs/guarantees.md.
#
# Usage: scripts/check-docs.sh [--skip-comments] [README]
#   README           the README to check (default README.md)
#   --skip-comments  skip the check of non-test .go comments (also: CHECK_DOCS_SKIP_COMMENTS=1)
set -euo pipefail
cd "$(dirname "$0")/.."

readme=README.md
guarantees=${CHECK_DOCS_GUARANTEES:-docs/guarantees.md}
skip_comments=${CHECK_DOCS_SKIP_COMMENTS:-0}
for arg in "$@"; do
	case "$arg" in
	--skip-comments) skip_comments=1 ;;
	-h | --help) sed -n '2,18p' "$0"; exit 0 ;;
	-*) echo "check-docs: unknown flag $arg" >&2; exit 2 ;;
	*) readme=$arg ;;
	esac
done
[ -f "$readme" ] || { echo "check-docs: $readme not found" >&2; exit 2; }

max_lines=300
failed=0
fail() { echo "check-docs: $*"; failed=1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Every test function of every module (TestMain is a hook, not a test).
find . -path ./.git -prune -o -name '*_test.go' -print0 |
	xargs -0 -r grep -hoE '^func (Test|Example|Benchmark|Fuzz)[A-Za-z0-9_]*\(' |
	sed -E 's/^func //; s/\($//' | grep -vx 'TestMain' | sort -u >"$tmp/tests"

# A word that may name a test. The bare English word "Example" is not one,
# though a func Example exists: Example counts only when followed by '_' or
# an uppercase letter (Example_x, ExampleNew).
name_re='\b(Test[A-Z][A-Za-z0-9_]*|Example[A-Z_][A-Za-z0-9_]*|Benchmark[A-Za-z0-9_]*|Fuzz[A-Za-z0-9_]*)\b'

# names_in FILE: the test names in FILE's text, as "LINE:NAME", only names of real tests.
names_in() {
	grep -noE "$name_re" "$1" |
		awk -F: 'NR==FNR { t[$1]=1; next } ($2 in t) { print $1 ":" $2 }' "$tmp/tests" - || true
}

# 1. Length.
lines=$(wc -l <"$readme")
[ "$lines" -le "$max_lines" ] || fail "$readme has $lines lines (at most $max_lines)"

# 2. Test names in the README.
while IFS=: read -r line name; do
	fail "$readme:$line names the test $name (test names go to docs/guarantees.md)"
done < <(names_in "$readme")

# 3. Commit hashes, dates and simulator seeds in the README and the guarantees.
for f in "$readme" "$guarantees"; do
	[ -f "$f" ] || continue
	while IFS=: read -r line word; do
		if [[ $word =~ [0-9] && $word =~ [a-f] ]]; then
			fail "$f:$line has what looks like a commit hash: $word (history goes to CHANGELOG.md)"
		fi
	done < <(grep -noE '\b[0-9a-f]{7,40}\b' "$f" || true)
	while IFS=: read -r line date; do
		fail "$f:$line has a date: $date (history goes to CHANGELOG.md)"
	done < <(grep -noE '\b[0-9]{4}-[0-9]{2}-[0-9]{2}\b' "$f" || true)
	while IFS=: read -r line seed; do
		fail "$f:$line names a simulator seed: $seed (measurements go to docs/maintainers.md)"
	done < <(grep -noiE '\bseeds?[ =:#]*[0-9][0-9,]*' "$f" || true)
done

# 4. Every test named in docs/guarantees.md exists.
if [ -f "$guarantees" ]; then
	while read -r name; do
		grep -qx "$name" "$tmp/tests" || fail "$guarantees names $name, which is no test function"
	done < <(grep -oE '\b(Test[A-Z][A-Za-z0-9_]*|Example[A-Z_][A-Za-z0-9_]*|Benchmark[A-Z_][A-Za-z0-9_]*|Fuzz[A-Z][A-Za-z0-9_]*)\b' "$guarantees" | sort -u)
fi

# 5. Test names in comments of non-test .go files (exact comments, by go/scanner).
if [ "$skip_comments" != 1 ]; then
	cat >"$tmp/comments.go" <<'EOF'
// Prints every comment line of the non-test .go files under the root as "file:line:text".
package main

import (
	"bufio"
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	filepath.WalkDir(os.Args[1], func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		var s scanner.Scanner
		s.Init(fset.AddFile(path, -1, len(src)), src, nil, scanner.ScanComments)
		for {
			pos, tok, lit := s.Scan()
			if tok == token.EOF {
				return nil
			}
			if tok != token.COMMENT {
				continue
			}
			p := fset.Position(pos)
			for i, l := range strings.Split(lit, "\n") {
				fmt.Fprintf(out, "%s:%d:%s\n", p.Filename, p.Line+i, l)
			}
		}
	})
}
EOF
	root=$(pwd)
	(cd "$tmp" && GOWORK=off GOFLAGS= GO111MODULE=on go run comments.go "$root") >"$tmp/comments"
	grep -oE "^[^:]+:[0-9]+:|$name_re" "$tmp/comments" |
		awk 'NR==FNR { t[$1]=1; next } /:$/ { loc=$0; next } ($1 in t) { print loc " " $1 }' "$tmp/tests" - |
		sed "s|^$root/||" >"$tmp/named"
	if [ -s "$tmp/named" ]; then
		fail "$(wc -l <"$tmp/named") comments of non-test .go files name tests (say why, not which test):"
		cat "$tmp/named"
	fi
fi

if [ "$failed" = 1 ]; then
	exit 1
fi
echo "check-docs: $readme ($lines lines) and the docs are clean"

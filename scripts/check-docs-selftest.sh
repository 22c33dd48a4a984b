#!/usr/bin/env bash
# Shows that scripts/check-docs.sh fails on a README or a guarantees page
# that names a simulator seed, a commit hash or a date, and passes on the
# real ones. Usage: scripts/check-docs-selftest.sh
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
expect() { # expect pass|fail WHAT README GUARANTEES
	local want=$1 what=$2 out
	if out=$(CHECK_DOCS_GUARANTEES=$4 scripts/check-docs.sh --skip-comments "$3" 2>&1); then got=pass; else got=fail; fi
	if [ "$got" = "$want" ]; then
		echo "ok    $what: $want${out:+ ($(echo "$out" | grep -m1 'check-docs:' || true))}"
	else
		echo "FAIL  $what: got $got, want $want"; echo "$out"; failed=1
	fi
}
expect pass "the real README and guarantees" README.md docs/guarantees.md
for case in "seed:found by the simulator's seed 12345" "seeds:seeds 1–30,000 pass" \
	"hash:fixed in 3f2a9c1" "long hash:see 23ea8236e6f09deb87ec53e2ac84436d" "date:since 2026-11-25"; do
	name=${case%%:*} text=${case#*:}
	{ head -n 20 README.md; echo "$text"; } >"$tmp/README-$name.md"
	expect fail "README with a $name ($text)" "$tmp/README-$name.md" docs/guarantees.md
	{ cat docs/guarantees.md; echo "| a promise | \`TestParseNodes\` | $text |"; } >"$tmp/guarantees-$name.md"
	expect fail "guarantees.md with a $name ($text)" README.md "$tmp/guarantees-$name.md"
done
{ head -n 20 README.md; echo "a seed fixes the faults; 1000000 schedules; decafbad is a word"; } >"$tmp/README-words.md"
expect pass "words that are no seed, hash or date" "$tmp/README-words.md" docs/guarantees.md
exit $failed

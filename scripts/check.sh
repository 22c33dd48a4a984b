#!/usr/bin/env bash
# check.sh: the contributor's loop (make check). go vet, then every test of the
# root module that needs no server (-short: tests that start redis-server or
# PostgreSQL skip themselves), without -race, summarised by internal/testsummary:
# failures in full, one line per package, the skipped tests by reason.
# Go's test cache is on: an unchanged package is not run again (CHECKFLAGS=-count=1
# runs all). make test runs everything, with -race and real servers.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
start=$SECONDS
$GO vet ./... || exit 1
# shellcheck disable=SC2086 # CHECKFLAGS is a list of flags
$GO test -short -timeout 5m ${CHECKFLAGS:-} -json ./... 2>&1 | $GO run ./internal/testsummary
st=("${PIPESTATUS[@]}")
rc=${st[0]} sum=${st[1]}
echo "make check: $((SECONDS - start)) s (go vet and go test -short; make test runs the rest, with -race)"
[ "$rc" -eq 0 ] && [ "$sum" -eq 0 ]

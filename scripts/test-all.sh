#!/usr/bin/env bash
# test-all.sh: go test -race -count=1 ./... in every module of the repository,
# one after another, keeping on after a failure, then a summary: one line per
# module (ok/FAIL and its duration) and "N passed, M failed" (modules).
# Exits 1 when any module failed.
#
# Usage: scripts/test-all.sh MODULE_DIR... [user-module]
#   (e.g. . bench chaos rueidisnode internal/redistest/docker user-module)
# "user-module" runs scripts/check-user-module.sh: a throwaway module of a
# library user, which must not pull in any docker module. It counts as a module.
# "sim" runs the simulator's CI profile (chaos/sim, TestSimulation: 10,000
# schedules) without -race, since the race detector makes each schedule
# several times slower; under -race the chaos module's own step runs 100.
# It starts at once, beside the other modules (they mostly wait on
# redis-server round trips and timers; it uses the idle CPU), its output
# kept and printed at its turn, with the time it took.
# "bounds" runs the cost bounds that -race would distort (allocations per
# cycle; see redlock/cycle_allocs_test.go) without -race.
# While a module runs, a heartbeat every 30 s names the test binaries still
# running and for how long; the summary ends with the slowest packages.
# Environment: GO (default go), TEST_TIMEOUT (default 20m), TESTFLAGS (extra
# flags for go test).
set -uo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
TEST_TIMEOUT=${TEST_TIMEOUT:-20m}
[ $# -gt 0 ] || set -- .

fmt_secs() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# heartbeat MODULE: every 30 s, the test binaries running and their ages.
heartbeat() {
  local m=$1 began=$SECONDS
  while sleep 30; do
    local running
    running=$(ps -eo etimes=,args= 2>/dev/null | awk '$2 ~ /\.test$/ { n=split($2, p, "/"); printf " %s (%dm%02ds)", p[n], $1/60, $1%60 }')
    echo "== still testing $m after $(fmt_secs $((SECONDS - began))):${running:- (compiling)}"
  done
}

pkg_times=$(mktemp)

summary=()
passed=0
failed=0
all_start=$SECONDS
sim_out=""
for m in "$@"; do
  if [ "$m" = sim ]; then
    sim_out=$(mktemp)
    trap 'rm -f "$sim_out" "$sim_out.rc" "$sim_out.took"' EXIT
    (
      s=$SECONDS
      (cd chaos && $GO test -count=1 -timeout "$TEST_TIMEOUT" -run 'TestSimulation$' ./sim) >"$sim_out" 2>&1
      echo $? >"$sim_out.rc"
      echo $((SECONDS - s)) >"$sim_out.took"
    ) &
    sim_pid=$!
  fi
done
for m in "$@"; do
  if [ "$m" = user-module ]; then
    echo "== $m: scripts/check-user-module.sh"
  elif [ "$m" = bounds ]; then
    echo "== $m: $GO test -count=1 -run 'TestCycleAllocations' ./redlock (without -race)"
  elif [ "$m" = sim ]; then
    echo "== $m: (cd chaos && $GO test -count=1 -timeout $TEST_TIMEOUT -run 'TestSimulation\$' ./sim), started with the first module"
  else
    echo "== $m: $GO test -race -count=1 -timeout $TEST_TIMEOUT ${TESTFLAGS:+$TESTFLAGS }./..."
  fi
  start=$SECONDS
  # shellcheck disable=SC2086 # TESTFLAGS is a list of flags
  if [ "$m" = user-module ]; then
    GO=$GO scripts/check-user-module.sh
  elif [ "$m" = sim ]; then
    wait "$sim_pid"
    cat "$sim_out"
    (exit "$(cat "$sim_out.rc")")
  elif [ "$m" = bounds ]; then
    $GO test -count=1 -timeout "$TEST_TIMEOUT" -run 'TestCycleAllocations' -v ./redlock | grep -E '^(---|ok|FAIL|panic)|allocations'
    (exit "${PIPESTATUS[0]}")
  else
    heartbeat "$m" &
    hb=$!
    (cd "$m" && $GO test -race -count=1 -timeout "$TEST_TIMEOUT" ${TESTFLAGS:-} ./...) 2>&1 | tee -a "$pkg_times"
    rc=${PIPESTATUS[0]}
    kill "$hb" 2>/dev/null; wait "$hb" 2>/dev/null
    (exit "$rc")
  fi
  rc=$?
  took=$((SECONDS - start))
  [ "$m" = sim ] && took=$(cat "$sim_out.took")
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1))
    summary+=("$(printf 'ok    %-26s %s' "$m" "$(fmt_secs $took)")")
  else
    failed=$((failed + 1))
    summary+=("$(printf 'FAIL  %-26s %s (exit %d)' "$m" "$(fmt_secs $took)" $rc)")
  fi
done

echo
echo "== summary (modules, $(fmt_secs $((SECONDS - all_start))) in all)"
printf '%s\n' "${summary[@]}"
echo
echo "== slowest packages"
awk '($1 == "ok" || $1 == "FAIL") && $3 ~ /^[0-9.]+s$/ { t = $3; sub(/s$/, "", t); printf "%8.1fs  %s\n", t, $2 }' "$pkg_times" | sort -rn | head -8
rm -f "$pkg_times"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]

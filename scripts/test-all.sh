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
# Environment: GO (default go), TEST_TIMEOUT (default 20m), TESTFLAGS (extra
# flags for go test).
set -uo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
TEST_TIMEOUT=${TEST_TIMEOUT:-20m}
[ $# -gt 0 ] || set -- .

fmt_secs() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

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
  else
    (cd "$m" && $GO test -race -count=1 -timeout "$TEST_TIMEOUT" ${TESTFLAGS:-} ./...)
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
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]

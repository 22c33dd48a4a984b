#!/usr/bin/env bash
# test-stress.sh: the whole `make test`, STRESS_RUNS times (default 5) in a
# row, while `stress-ng --cpu 2` keeps both cores of the machine busy. Installs
# stress-ng with apt-get when it is missing (as root). Ends with one line per
# run and "N passed, M failed" (runs); exits 1 if any run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${STRESS_RUNS:-5}
MAKE=${MAKE:-make}
WORKERS=${STRESS_CPU:-2}

if ! command -v stress-ng >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "test-stress: installing stress-ng (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq stress-ng >/dev/null
  fi
  if ! command -v stress-ng >/dev/null 2>&1; then
    echo "test-stress: stress-ng not found: install it (apt-get install -y stress-ng)" >&2
    exit 2
  fi
fi

stress-ng --cpu "$WORKERS" --timeout 0 --quiet &
stress=$!
trap 'kill "$stress" 2>/dev/null; wait "$stress" 2>/dev/null' EXIT
echo "test-stress: stress-ng --cpu $WORKERS running (pid $stress); make test x $RUNS"

fmt_secs() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
passed=0
failed=0
lines=()
for i in $(seq 1 "$RUNS"); do
  echo "== test-stress: run $i of $RUNS"
  start=$SECONDS
  if $MAKE --no-print-directory test; then
    passed=$((passed + 1))
    lines+=("$(printf 'ok    run %d  %s' "$i" "$(fmt_secs $((SECONDS - start)))")")
  else
    failed=$((failed + 1))
    lines+=("$(printf 'FAIL  run %d  %s' "$i" "$(fmt_secs $((SECONDS - start)))")")
  fi
done
kill "$stress" 2>/dev/null
wait "$stress" 2>/dev/null
trap - EXIT

echo
echo "== test-stress summary (make test under stress-ng --cpu $WORKERS)"
printf '%s\n' "${lines[@]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# The README's second command: install what is missing, build under AddressSanitizer and
# UndefinedBehaviorSanitizer and run every test; then build under ThreadSanitizer and run the
# tracer's tests (its producers, writer thread and control socket are concurrent code).
# Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test || exit 1
rc=0
logs=()
run_suite() { # dir sanitize [suite]
  local dir=$1 san=$2 suite=${3:-}
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" -Db_sanitize="$san" -Db_lundef=false -Dbuildtype=debug >/dev/null || return 1
  fi
  ninja -C "$dir" || return 1
  local args=(--print-errorlogs --num-processes 2 --timeout-multiplier 3)
  [ -n "$suite" ] && args+=(--suite "$suite")
  meson test -C "$dir" "${args[@]}" > "$dir/test-output.txt" 2>&1
  local st=$?
  cat "$dir/test-output.txt"
  logs+=("$dir/meson-logs/testlog.json")
  return $st
}
run_suite build-test address,undefined || rc=1
TSAN_OPTIONS="halt_on_error=1" run_suite build-tsan thread tracer || rc=1
python3 scripts/test-summary.py "${logs[@]}" || rc=1
exit $rc

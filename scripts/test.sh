#!/usr/bin/env bash
# The README's second command: install what is missing, build under AddressSanitizer and
# UndefinedBehaviorSanitizer and run every test; then build under ThreadSanitizer and run the
# tracer's tests (its producers, writer thread and control socket are concurrent code) and
# the threaded export's (suite threads: its two stages and their queue; a smaller pair).
# Then, as root only (CI), the suite as a new user would meet it: a fresh clone of the
# committed tree, built once, run by an unprivileged user and by root with tracefs unmounted
# (a private mount namespace, so the machine's own tracefs is untouched); set
# VMS_TEST_FRESH=0 to leave it out. Ends with "N passed, N failed" over all the runs.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test || exit 1
rc=0
logs=()
run_suite() { # dir sanitize [suite...]
  local dir=$1 san=$2 suite
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" -Db_sanitize="$san" -Db_lundef=false -Dbuildtype=debug >/dev/null || return 1
  fi
  ninja -C "$dir" || return 1
  local args=(--print-errorlogs --num-processes 2 --timeout-multiplier 3)
  for suite in "${@:3}"; do args+=(--suite "$suite"); done
  meson test -C "$dir" "${args[@]}" > "$dir/test-output.txt" 2>&1
  local st=$?
  cat "$dir/test-output.txt"
  logs+=("$dir/meson-logs/testlog.json")
  return $st
}
# The default configuration, as a contributor's first `meson setup build && ninja -C build`
# builds it (debugoptimized: -O2 finds warnings the sanitizer builds at -O0 do not).
build_default() {
  if [ ! -f build-default/build.ninja ]; then
    meson setup build-default >/dev/null || return 1
  fi
  ninja -C build-default >/dev/null || { ninja -C build-default; return 1; }
  echo "== default configuration (meson setup build-default && ninja -C build-default): built"
}
build_default || { echo "== default configuration: FAILED to build"; rc=1; }
run_suite build-test address,undefined || rc=1
TSAN_OPTIONS="halt_on_error=1" VMS_EXPORT_TEST_EVENTS=50000 VMS_THREADS_TEST_EVENTS=50000 VMS_THREADS_TEST_LIGHT=1 run_suite build-tsan thread tracer threads || rc=1

fresh_top=""
fresh_runs() {
  local user=vmscope-test top fresh shared
  id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user" || return 1
  shared=$(realpath ../shared 2>/dev/null || true)
  top=$(mktemp -d /tmp/vmscope-fresh.XXXXXX) && chmod 755 "$top" && fresh=$top/vmscope
  fresh_top=$top
  git clone -q --no-hardlinks . "$fresh" && chown -R "$user" "$top" || return 1
  local as_user=(runuser -u "$user" -- env HOME="$top")
  "${as_user[@]}" meson setup "$fresh/build" "$fresh" -Dbuildtype=debug ${shared:+-Dshared_dir="$shared"} \
    >/dev/null || return 1
  "${as_user[@]}" ninja -C "$fresh/build" >/dev/null || return 1
  # browser-slow (serve of a 5 M-event pair in Chromium, 10-20 minutes) runs once, in the
  # sanitized build above; a fresh clone adds nothing to it that browser-serve does not show
  local st=0 args=(--print-errorlogs --num-processes 2 --timeout-multiplier 3 --no-suite browser-slow)
  echo "== fresh clone, unprivileged user $user"
  "${as_user[@]}" meson test -C "$fresh/build" "${args[@]}" --logbase user > "$top/user.txt" 2>&1 || st=1
  tail -n 8 "$top/user.txt"
  echo "== fresh clone, root, tracefs unmounted"
  unshare -m --propagation private sh -c \
    'while umount /sys/kernel/tracing 2>/dev/null; do :; done; while umount /sys/kernel/debug/tracing 2>/dev/null; do :; done; exec "$@"' \
    sh meson test -C "$fresh/build" "${args[@]}" --logbase root > "$top/root.txt" 2>&1 || st=1
  tail -n 8 "$top/root.txt"
  logs+=("$fresh/build/meson-logs/user.json" "$fresh/build/meson-logs/root.json")
  [ $st = 0 ] || { cat "$top/user.txt" "$top/root.txt"; }
  return $st
}
if [ "$(id -u)" = 0 ] && [ "${VMS_TEST_FRESH:-1}" != 0 ]; then
  fresh_runs || rc=1
fi
python3 scripts/test-summary.py "${logs[@]}" || rc=1
[ -n "$fresh_top" ] && rm -rf "$fresh_top"
exit $rc

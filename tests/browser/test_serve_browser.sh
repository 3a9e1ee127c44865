#!/usr/bin/env bash
# The page of `vmscope serve` on the kvm-hip24 pair in headless Chromium
# (tests/browser/test_serve_page.js). Speaks TAP; a skip when chromium, node, the harness or
# the shared traces are missing.
set -u
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$VMS_BUILD_DIR/test-tmp/browser
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
mkdir -p "$TMP"
HIP=${VMS_SHARED_DIR:-}/traces/kvm-hip24
if [ ! -x "$CHROMIUM" ] || ! command -v node >/dev/null || [ ! -r "$HIP/host.dat" ]; then
  echo "1..0 # SKIP chromium, node or ../shared/traces/kvm-hip24 missing"; exit 0
fi
if ! "$HERE/setup.sh" >"$TMP/setup-serve.log" 2>&1; then
  echo "1..0 # SKIP playwright-core could not be installed"; exit 0
fi
T=("$HIP/host.dat" "$HIP/guest-Salamander4.dat")
"$VMS" serve "${T[@]}" >"$TMP/serve.url" 2>"$TMP/serve.err" &
pid=$!
for _ in $(seq 600); do [ -s "$TMP/serve.url" ] && break; sleep 0.1; done
# a guest thread of the trace, named in dump's sched_switch lines (not the page's code)
thread=$("$VMS" dump "${T[@]}" 2>/dev/null | grep -o 'next_comm=[^ ]*' | sed 's/next_comm=//' |
  grep -v '^swapper' | sort | uniq -c | sort -n | head -1 | awk '{print $2}')
node "$HERE/test_serve_page.js" "$CHROMIUM" "$(head -1 "$TMP/serve.url")" "$thread" "$VMS" "${T[@]}"
st=$?
kill "$pid"; wait "$pid" 2>/dev/null
exit $st

#!/usr/bin/env bash
# The page of `vmscope serve` in headless Chromium (tests/browser/test_serve_page.js), on the
# kvm-hip24 pair (`hip`, the default) or on a 5 M-event pair `vmscope synth --events 5000000`
# writes into the test's directory (`synth5m`: suite browser-slow; every window replays the
# traces, seconds each, so the page waits up to 10 minutes for an answer and zooms several
# steps before it asks), or the static page of `vmscope html` on kvm-hip24 (`static`: within
# its budget, it holds the exact intervals and its drill-down answers from them). Speaks TAP;
# a skip when chromium, node, the harness or the shared traces are missing.
# usage: test_serve_browser.sh [hip|static|synth5m]
set -u
MODE=${1:-hip}
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$VMS_BUILD_DIR/test-tmp/browser-serve-$MODE
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
rm -rf "$TMP" && mkdir -p "$TMP"
if [ ! -x "$CHROMIUM" ] || ! command -v node >/dev/null; then
  echo "1..0 # SKIP chromium or node missing"; exit 0
fi
case $MODE in
  hip)
    HIP=${VMS_SHARED_DIR:-}/traces/kvm-hip24
    if [ ! -r "$HIP/host.dat" ]; then echo "1..0 # SKIP ../shared/traces/kvm-hip24 missing"; exit 0; fi
    T=("$HIP/host.dat" "$HIP/guest-Salamander4.dat")
    export VMS_BROWSER_TIMEOUT_MS=${VMS_BROWSER_TIMEOUT_MS:-60000} VMS_BROWSER_ZOOM_BATCH=1
    ;;
  static)
    # the static page of `vmscope html` on kvm-hip24, which fits the page's budget of exact
    # intervals: its drill-down answers from them (no server)
    HIP=${VMS_SHARED_DIR:-}/traces/kvm-hip24
    if [ ! -r "$HIP/host.dat" ]; then echo "1..0 # SKIP ../shared/traces/kvm-hip24 missing"; exit 0; fi
    T=("$HIP/host.dat" "$HIP/guest-Salamander4.dat")
    export VMS_BROWSER_TIMEOUT_MS=${VMS_BROWSER_TIMEOUT_MS:-60000} VMS_BROWSER_ZOOM_BATCH=1
    ;;
  synth5m)
    if ! "$VMS" synth --events 5000000 --out "$TMP/pair" >"$TMP/synth.log" 2>&1; then
      echo "1..1"; echo "not ok 1 - vmscope synth --events 5000000"; sed 's/^/# /' "$TMP/synth.log"; exit 1
    fi
    T=("$TMP/pair/host.dat" "$TMP/pair/guest.dat")
    export VMS_BROWSER_TIMEOUT_MS=${VMS_BROWSER_TIMEOUT_MS:-600000} VMS_BROWSER_ZOOM_BATCH=4
    ;;
  *) echo "usage: $0 [hip|static|synth5m]" >&2; exit 2 ;;
esac
export VMS_BROWSER_OUT=$TMP
if ! "$HERE/setup.sh" >"$TMP/setup.log" 2>&1; then
  echo "1..0 # SKIP playwright-core could not be installed"; exit 0
fi
thread_of() { # a guest thread of the trace, named in dump's sched_switch lines (not the
  # page's code): the rarest name among the guest's switches of the first 300,000 events
  "$VMS" dump --limit 300000 "${T[@]}" 2>/dev/null | grep -v ' host ' |
    grep -o 'next_comm=[^ ]*' | sed 's/next_comm=//' | grep -v '^swapper' | sort | uniq -c |
    sort -n | head -1 | awk '{print $2}'
}
if [ "$MODE" = static ]; then
  "$VMS" html "${T[@]}" -o "$TMP/page.html" 2>"$TMP/html.err" ||
    { echo "1..1"; echo "not ok 1 - vmscope html"; sed 's/^/# /' "$TMP/html.err"; exit 1; }
  exec node "$HERE/test_serve_page.js" "$CHROMIUM" "file://$TMP/page.html" "$(thread_of)" "$VMS" "${T[@]}"
fi
"$VMS" serve "${T[@]}" >"$TMP/serve.url" 2>"$TMP/serve.err" &
pid=$!
# the server goes, however this script ends (it stops once the window it computes is done)
trap 'kill "$pid" 2>/dev/null' EXIT
# the server prints its URL once the page is made (a whole run of the traces): minutes on
# the 5 M-event pair under the sanitizers
while [ ! -s "$TMP/serve.url" ] && kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
if [ ! -s "$TMP/serve.url" ]; then
  echo "1..1"; echo "not ok 1 - vmscope serve printed its URL"; sed 's/^/# /' "$TMP/serve.err"; exit 1
fi
thread=$(thread_of)
node "$HERE/test_serve_page.js" "$CHROMIUM" "$(head -1 "$TMP/serve.url")" "$thread" "$VMS" "${T[@]}"
st=$?
kill "$pid"; wait "$pid" 2>/dev/null
exit $st

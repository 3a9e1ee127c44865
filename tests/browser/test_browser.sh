#!/usr/bin/env bash
# The HTML report in headless Chromium (tests/browser/test_html_report.js, playwright-core
# driving Debian's /usr/bin/chromium): the pages of the kvm-hip24 pair and of a `vmscope
# synth` pair. The expected numbers of rows come from `vmscope vcpus --csv` and
# `vmscope pcpus --csv` (distinct machine,vcpu and host,cpu), not from the page's code.
# Screenshots go to $VMS_BUILD_DIR/test-tmp/browser/. Speaks TAP; a skip (1..0 # SKIP) when
# chromium, node or the harness is missing and cannot be installed.
set -u
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$VMS_BUILD_DIR/test-tmp/browser
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
rm -rf "$TMP" && mkdir -p "$TMP"
if [ ! -x "$CHROMIUM" ] || ! command -v node >/dev/null; then
  echo "1..0 # SKIP chromium or node missing (scripts/deps.sh test installs them)"; exit 0
fi
if ! "$HERE/setup.sh" >"$TMP/setup.log" 2>&1; then
  echo "1..0 # SKIP playwright-core could not be installed: $(tail -1 "$TMP/setup.log")"; exit 0
fi
# count distinct values of the first two CSV columns (none of these names holds a comma)
rows() { "$VMS" "$@" 2>/dev/null | tail -n +2 | cut -d, -f"$cols" | sort -u | wc -l; }
pages=()
add_page() { # name traces...
  local name=$1; shift
  "$VMS" html "$@" -o "$TMP/$name.html" 2>"$TMP/$name.err" || { echo "# vmscope html failed: $(cat "$TMP/$name.err")"; }
  local nv np
  cols=1,2 nv=$(rows vcpus --csv "$@")
  if "$VMS" pcpus --help >/dev/null 2>&1; then cols=1,2 np=$(rows pcpus --csv "$@"); else np=-; fi
  pages+=("$name=$TMP/$name.html:$nv:$np")
}
HIP=${VMS_SHARED_DIR:-}/traces/kvm-hip24
if [ -r "$HIP/host.dat" ]; then
  add_page kvm-hip24 "$HIP/host.dat" "$HIP/guest-Salamander4.dat"
else
  echo "# kvm-hip24 missing (../shared/traces): only the synthesized pair"
fi
"$VMS" synth --events 200000 --out "$TMP/demo" >/dev/null 2>&1
add_page demo "$TMP/demo/host.dat" "$TMP/demo/guest.dat"
exec node "$HERE/test_html_report.js" "$CHROMIUM" "$TMP" "${pages[@]}"

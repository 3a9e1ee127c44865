#!/usr/bin/env bash
# The trace.dat reader's skip_unread changes no byte of what the analysis commands write:
# `report --json`, `vcpus`, `threads`, `exits --csv`, `html` (and `latency --json` where there are guest threads) with the
# records no analysis reads left out (the default for an analysis pass over a host trace)
# equal their output with every record read (VMS_TRACEDAT_SKIP=0), on the real
# local/sched-syscalls-2cpu.dat (91 % of its records left out), the kvm-hip24 host alone and
# with its guest (whose records are never left out: the containment check counts them), and
# a synthesized nested capture. test_tracedat_skip checks what the reader returns. TAP.
set -u
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
SHARED=${VMS_SHARED_DIR:?}
TMP=${VMS_BUILD_DIR}/test-tmp/skip-same
rm -rf "$TMP" && mkdir -p "$TMP"
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "# $2"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

run() {   # OUT CMD... (stdout and stderr both)
  local o=$1; shift
  "$@" >"$o" 2>&1; echo "rc=$?" >>"$o"
}

same() {   # NAME TRACE...
  local name=$1; shift
  local cmds=("report --json" "vcpus --csv" "threads --csv" "exits --csv" "html -o -")
  [ -n "${LATENCY:-}" ] && cmds+=("latency --json")
  for cmd in "${cmds[@]}"; do
    local f=$TMP/$name.${cmd%% *}
    run "$f.all" env VMS_TRACEDAT_SKIP=0 "$VMS" $cmd "$@"
    run "$f.skip" "$VMS" $cmd "$@"
    if ! grep -q '^rc=[01]$' "$f.all" || [ "$(wc -c <"$f.all")" -lt 100 ]; then
      notok "$name: $cmd" "wrote too little: $(tail -2 "$f.all" | tr '\n' ' ')"
    elif cmp -s "$f.all" "$f.skip"; then
      ok "$name: $cmd"
    else
      notok "$name: $cmd" "differs: $(diff "$f.all" "$f.skip" | head -3 | tr '\n' ' ')"
    fi
  done
}

L=$SHARED/traces/local/sched-syscalls-2cpu.dat
K=$SHARED/traces/kvm-hip24
if [ -f "$L" ]; then LATENCY=1 same local "$L"; else skip "local" "no $L"; fi
if [ -f "$K/host.dat" ]; then
  same kvm-host "$K/host.dat"
  LATENCY=1 same kvm-pair "$K/host.dat" "$K/guest-Salamander4.dat"
else
  skip "kvm-hip24" "no $K"
fi
"$VMS" synth --scenario nested --seed 4 --out "$TMP/nested" >/dev/null 2>&1 &&
  same nested "$TMP/nested/host.dat" "$TMP/nested/l1.dat" "$TMP/nested/l2.dat" ||
  notok "nested: synth"
echo "1..$n"

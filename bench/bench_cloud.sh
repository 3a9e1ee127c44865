#!/usr/bin/env bash
# vmscope report on a cloud host (synth --scenario cloud-host): time (wall, CPU) and peak RSS
# at 8, 16, 32 and 64 guests x 8 vCPUs, the same events per guest (host CPUs one per 8 vCPUs,
# 1 guest traced), so that time should grow linearly with the guests; then 64 guests at two
# trace lengths, so that memory should stay flat in the trace's length. One run each (the
# machine's load only adds): CPU time is the figure to compare on a shared machine.
# usage: bench/bench_cloud.sh [VMSCOPE]   PER_GUEST=25k (events per guest) LONG=4 (the long
#        trace is LONG x as many events) GUESTS="8 16 32 64"
# Not in CI (speed goals live here). Results below, newest first.
set -eu
VMS=${1:-build/tools/vmscope/vmscope}
PER_GUEST=${PER_GUEST:-25000}
LONG=${LONG:-4}
GUESTS=${GUESTS:-"8 16 32 64"}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

measure() { # label dir guests events
  local files=("$2/host.dat" "$2"/guest-*.dat)
  /usr/bin/time -f "%e %U %S %M" -o "$TMP/time" "$VMS" report --json "${files[@]}" > /dev/null
  read -r wall user sys rss < "$TMP/time"
  awk -v l="$1" -v g="$3" -v e="$4" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" 'BEGIN {
    cpu = u + s
    printf "%-10s %4d guests %9d events  wall %6.2f s  CPU %6.2f s  (%.2f us CPU/event, %.3f s CPU/guest)  peak RSS %6.1f MiB\n",
      l, g, e, w, cpu, cpu / e * 1e6, cpu / g, r / 1024 }'
}

for g in $GUESTS; do
  d=$TMP/g$g
  "$VMS" synth --scenario cloud-host --guests "$g" --vcpus 8 --traced 1 \
    --events $((g * PER_GUEST)) --out "$d" 2>/dev/null
  measure report "$d" "$g" $((g * PER_GUEST))
  [ "$g" = 64 ] || rm -rf "$d"
done
g=${GUESTS##* }
d=$TMP/long
"$VMS" synth --scenario cloud-host --guests "$g" --vcpus 8 --traced 1 \
  --events $((g * PER_GUEST * LONG)) --out "$d" 2>/dev/null
measure "report x$LONG" "$d" "$g" $((g * PER_GUEST * LONG))

#!/usr/bin/env bash
# The timeline export against `report` on the same synthesized pair, in an optimized build:
# wall time (median of RUNS), peak RSS, and the size of the .pftrace and of the traces.
# usage: bench/bench_export.sh [EVENTS...]   (default: 5000000 50000000)
# Not in CI (speed goals live here). The machine's load makes single runs noisy: medians.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build-release/build.ninja ] || meson setup build-release -Dbuildtype=release -Dtests=false >/dev/null
ninja -C build-release tools/vmscope/vmscope >/dev/null
vms=$PWD/build-release/tools/vmscope/vmscope
work=${BENCH_DIR:-build-release/bench-data}
runs=${RUNS:-3}
mkdir -p "$work"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
measure() {  # LABEL CMD... -> "median_s max_rss_kb"
  local label=$1; shift
  local ts=() rss=0
  for _ in $(seq "$runs"); do
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>&1
    read -r t m < "$work/time"
    ts+=("$t"); [ "$m" -gt "$rss" ] && rss=$m
  done
  printf '  %-28s %8.2f s (median of %d)   peak RSS %6.1f MiB\n' "$label" \
    "$(printf '%s\n' "${ts[@]}" | median)" "$runs" "$(echo "$rss / 1024" | bc -l)"
}
for n in "${@:-5000000 50000000}"; do
  for e in $n; do
    d="$work/pair-$e"
    [ -f "$d/host.dat" ] || "$vms" synth --events "$e" --seed 7 --out "$d" >/dev/null
    echo "== synthesized pair, $e events ($(du -m "$d/host.dat" "$d/guest.dat" | awk '{s+=$1} END {print s}') MiB of trace.dat)"
    measure "report" "$vms" report "$d/host.dat" "$d/guest.dat"
    measure "export .pftrace" "$vms" export -o "$work/t.pftrace" "$d/host.dat" "$d/guest.dat"
    echo "  .pftrace: $(du -m "$work/t.pftrace" | cut -f1) MiB"
    measure "export -o /dev/null" "$vms" export --format perfetto -o /dev/null "$d/host.dat" "$d/guest.dat"
    rm -f "$work/t.pftrace"
  done
done

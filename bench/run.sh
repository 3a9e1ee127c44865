#!/usr/bin/env bash
# Runs the benchmarks of the core analysis in an optimized build:
#  1. ../shared/traces/local/sched-syscalls-2cpu.dat (2.43 M real events, v7 zstd)
#  2. synthesized host + guest pairs of growing length (default 1 M, 3 M and 10 M events): peak
#     memory does not grow with the number of events, and libtracecmd's time per event does
#     (so the ratio grows with the trace: quote it with its length; 50 M takes libtracecmd
#     about 15 minutes and 2.9 GiB a run)
# Every bench here alternates peer and vmscope and prints the wall and CPU time of each and
# the ratio by each, with the load average.
# usage: bench/run.sh [EVENTS...]   (the pairs' lengths, default 1000000 3000000 10000000)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test
sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(1000000 3000000 10000000)
[ -f build-release/build.ninja ] || meson setup build-release -Dbuildtype=release -Dtests=false >/dev/null
ninja -C build-release >/dev/null
vms=build-release/tools/vmscope/vmscope
bench=build-release/bench/bench_analysis
shared=${VMS_SHARED_DIR:-../shared}
work=${BENCH_DIR:-build-release/bench-data}
mkdir -p "$work"
echo "== Xen: xenalyze --summary and vmscope report on xen/xentrace.bin and 10 copies of it end to end"
python3 bench/bench_xen.py "$vms" "$shared/traces/xen/xentrace.bin" 21 2.4G 10
echo
echo "== real trace: local/sched-syscalls-2cpu.dat"
$bench -r 5 "$shared/traces/local/sched-syscalls-2cpu.dat"
echo
echo "== the readers against their limit (decompress alone + iterate alone) at --threads 1 and 2"
build-release/bench/bench_readers -r 9 -d "$work" -x "$vms" "$shared/traces/local/sched-syscalls-2cpu.dat"
echo
echo "== a 64-CPU host (synth cloud-host, 8 guests x 8 vCPUs, 10 M events): each thread's CPU and the time on N cores"
c="$work/cloud64"
[ -f "$c/host.dat" ] || $vms synth --scenario cloud-host --guests 8 --vcpus 8 --host-cpus 64 --traced 1 \
  --events 10000000 --out "$c" >/dev/null
build-release/bench/bench_cores -r 3 -t "1 2 4 8 16 64" "$c/host.dat" "$c/guest-0.dat"
for n in "${sizes[@]}"; do
  d="$work/pair-$n"
  if [ ! -f "$d/host.dat" ]; then
    $vms synth --events "$n" --seed 7 --out "$d" >/dev/null
  fi
  echo
  echo "== synthesized host + guest pair, $n events"
  # libtracecmd needs about 15 minutes and 2.9 GiB for the 50 M pair: one run there
  runs=3; [ "$n" -ge 20000000 ] && runs=1
  $bench -r $runs "$d/host.dat" "$d/guest.dat"
done

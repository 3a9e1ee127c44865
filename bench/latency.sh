#!/usr/bin/env bash
# What `latency` and the findings add to `vmscope report` (issue 10: at most +20 % of report's
# time on the 50 M-event synthesized pair, peak memory flat), on synthesized host + guest
# pairs (the default noisy-neighbour scenario, as bench/run.sh: its guest threads are woken
# thousands of times, a host stress-ng preempts their vCPUs) of growing size.
# Figures are CPU time (user + system of a child process, from wait4), not wall time, so that
# they hold on a shared machine; instructions come from callgrind on the smallest pair.
# Measured (issue 10; 2 shared cores at load 7-11, so CPU times are the least of the runs and
# still move by +-20 % from run to run; instructions do not):
#   2 M events, callgrind: report's pass 2.968 G instructions, with latency + findings
#     3.369 G (+13.5 %)
#   50 M events, 3 runs: 9.21 s -> 11.09 s CPU (+20.4 %; medians 11.16 -> 14.03 s, +26 %),
#     peak 14.8 -> 15.1 MiB (+0.2 MiB, as at 2 M and 10 M: memory flat); again later:
#     11.32 s -> 13.80 s (+21.9 %; medians 12.64 -> 14.43 s, +14 %), `vmscope report` itself
#     14.30 s, 16.0 MiB; with the machine at rest (other work stopped), 3 runs:
#     10.19 s -> 10.87 s CPU (+6.6 %; medians 11.13 -> 13.15 s, +18 %), 14.8 -> 15.0 MiB
# Measured again 2026-12-07 (issue 24), bench_findings at 49f50c3 against f75a5a1 before it:
#   1 M events, callgrind: base 1.418 G -> findings 1.626 G instructions (+14.7 %) before,
#     1.397 G -> 1.553 G (+11.2 %) after; mispredicted branches (--branch-sim=yes)
#     9.40 M -> 15.56 M before (4.15 M indirect: the subscribers' one call site), 10.07 M ->
#     12.07 M after (0.88 M indirect)
#   10 M events, 2 rounds of 5 runs each (2 shared cores, load ~1-2), least CPU of the
#     rounds: 1.43 s -> 1.75 s (+22.4 %) before, 1.41 s -> 1.62 s (+14.9 %) after; per round
#     +17.7 % and +22.5 % before, +5.5 % and +15.1 % after; peak 15.5 -> 15.7-15.9 MiB
# usage: bench/latency.sh [EVENTS...]   (default: 2000000 10000000 50000000)
#        BENCH_DIR (default /tmp/vmscope-bench) keeps the pairs; RUNS (default 5, 3 at >= 20 M);
#        CALLGRIND=1 also counts instructions on the first size (about 2 min at 2 M);
#        BUILD (default build-release) is the optimized build directory
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-release}
[ -f "$build/build.ninja" ] || meson setup "$build" -Dbuildtype=release -Dtests=false >/dev/null
ninja -C "$build" tools/vmscope/vmscope bench/bench_findings >/dev/null
vms=$build/tools/vmscope/vmscope
bench=$build/bench/bench_findings
work=${BENCH_DIR:-/tmp/vmscope-bench}
mkdir -p "$work"
sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(2000000 10000000 50000000)
for n in "${sizes[@]}"; do
  d="$work/pair-$n"
  [ -f "$d/host.dat" ] || $vms synth --events "$n" --seed 7 --out "$d" >/dev/null
  runs=${RUNS:-5}; [ -z "${RUNS:-}" ] && [ "$n" -ge 20000000 ] && runs=3
  echo "== synthesized host + guest pair, $n events"
  $bench -r "$runs" -x "$vms" "$d/host.dat" "$d/guest.dat"
  echo
done
if [ "${CALLGRIND:-0}" = 1 ]; then
  d="$work/pair-${sizes[0]}"
  echo "== instructions (callgrind), ${sizes[0]} events"
  for m in base findings; do
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bench" -m $m "$d/host.dat" "$d/guest.dat" 2>&1 \
      | sed -n "s/.*Collected : /$m: /p"
  done
fi

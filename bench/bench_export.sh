#!/usr/bin/env bash
# The timeline export against `report` on the same synthesized pair, in an optimized build:
# CPU time (user + system; the median of RUNS and the least: the machine's load only adds), peak RSS, and the
# size of the .pftrace (plain and --deflate) and of the traces.
# usage: bench/bench_export.sh [EVENTS...]   (default: 5000000 50000000)
#        QUICK=1: report and the .pftrace only (no /dev/null, no --deflate); RUNS=N (default 3)
# Not in CI (speed goals live here).
#
# Goal (issue 8): the export at least as fast as `report` on the same input, memory flat.
# The user's measure is the command's wall-clock time; the export is a two-stage pipeline over
# two cores (docs/DESIGN.md): stage 1, the caller's thread, does what report does too and
# publishes records; stage 2, a thread of its own, makes and writes the slices. Its CPU time
# (all threads) is HIGHER than one thread's and than report's: ~1.5x report's instructions
# in all, plus the cost of two busy cores sharing caches. VMS_EXPORT_THREADS=0 = one thread.
# The machine alone (2026-12-01 21:32 UTC, load < 1, no other work, dc440e9, QUICK=1, 50 M):
#   report 12.60 s wall / 13.90 s CPU; export two threads 20.73 s wall / 31.38 s CPU (1.65x);
#   one thread 20.14 s / 19.63 s. Stage 1 took 18.4-19.9 s CPU beside stage 2 (report's
#   13.9 s for more instructions): on this VM two busy cores slow each other by a third, and
#   the second thread bought no wall time. Measure on independent cores before keeping it on.
# NOT MET on this machine (2 vCPUs shared with two other engineers' builds and tests; the
# background fuzzers are paused by measure.sh, the builds are not, and with autogroup a
# build in another session takes a whole core whatever its nice): 50 M-event pair, the
# threaded export's wall time 1.25x report's in the quietest run (medians of 3; 1.26x by
# the least), 1.36x in another; 19 % less than one thread. Its stage 1 is no more work than
# report (callgrind, below), is not held back by stage 2 (it waited 0.04-0.11 s for it), but
# runs 10-40 % slower per instruction while stage 2 and the prefetch thread run beside it.
#
# Measured 2026-12-01, `/work/measure.sh env QUICK=1 bench/bench_export.sh 50000000` (release),
# medians of 3 (least), report and the exports alternating; wall, then CPU (user + system):
#   20:23-20:26 UTC, waited for no build to run (load average 4.5 falling to 1.4), the latest
#     code: report 15.51 s wall (15.17), 17.12 s CPU; export .pftrace 19.40 s wall (19.16),
#     31.22 s CPU (stage 1 17.1-19.2 s, held back by stage 2 0.04-0.11 s; stage 2 11.1-11.7
#     s, waiting for stage 1 5-8 s); one thread 23.81 s wall (19.37), 23.16 s CPU
#   19:53-19:59 UTC, waited for no build to run (load average 2.7-4.5):
#     report 16.93 s wall (14.69), 17.41 s CPU; export .pftrace 22.96 s wall (19.65), 26.10 s
#     CPU (stage 1 12.7-18.3 s, stage 2 7.2-11.3 s); one thread 20.75 s wall (18.87), 18.20 s CPU
#   19:43-19:47 UTC (5 M and 50 M): 50 M report 12.23 s wall (10.96), 11.92 s CPU; export
#     25.02 s wall (24.99), 26.18 s CPU (stage 1 15.2-18.6, stage 2 8.2-10.3); one thread
#     29.19 s wall (26.89), 25.52 s CPU. 5 M: report 1.22 s wall, export 2.38, one thread 2.36
#   19:30-19:34 UTC (a build running): 50 M report 16.12 s wall, export 21.90, one thread
#     27.84; 5 M report 1.75, export 2.54, one thread 2.40
#   20:13-20:18 UTC, RUNS=7 QUICK=1 ... 5000000 (builds running throughout): report 1.73 s
#     wall (1.40), export 2.61 (1.99), one thread 2.52 (2.08); stage 1 1.22-2.08 s CPU, held
#     back by stage 2 0.00-0.49 s: what is lost is the core, not the queue.
#   Once, with nothing else running (20:10, report and export -o /dev/null alternating under
#     measure.sh): report 1.02 s wall, export 0.99 s (stage 1 0.98 s CPU, stage 2 0.66 s);
#     the next two rounds, load back: report 0.89 / 1.74, export 2.13 / 2.07.
#   The same binary's one-thread export took 18.2 to 29.2 s of CPU between these runs: the
#   machine's speed moves more than the differences measured; medians of 3 do not settle
#   10 %. .pftrace 3473 MiB (72.8 bytes per event); peak RSS: report 15.3 MiB, export 16.8
#   MiB (the 2 MiB queue), one thread 14.9 MiB, flat in the trace's length.
#   Two one-thread exports at once on this VM take 10-25 % more CPU each than one alone
#   (the two vCPUs share the host's resources): a second core here is worth ~1.7, not 2.
# callgrind (instructions, deterministic, per thread: --separate-threads=yes), 500 k-event
# pair (synth --events 500000 --seed 7), build-prof (release + LTO + debug info):
#   report: main thread 883 M, trace.dat prefetch thread 19 M (its share of the zstd chunks
#     moves with the reader's speed: the reader decompresses a chunk the thread has not);
#   export -o /dev/null: stage 1 839 M, stage 2 418 M, prefetch 67 M; VMS_EXPORT_THREADS=0
#   1.237 G + prefetch 70 M (1.212 G before the records, at the start of this round).
#   Stage 1 + prefetch (906 M) = the shared work (reading with all its zstd, merging, state
#   machine, overlays, steal, vCPU time, containment: ~0.75 G) + the state machine's
#   occupants for the fused view (~0.09 G) + records (~0.07 G: 1.4 M records, 134 bytes per
#   event); report + prefetch (902 M) = the shared work + report's own (latency, findings,
#   exit tables, ~0.15 G). Stage 2: the fused view's intervals, names, tracks,
#   protobuf and write(2), for ~1.2 M slices as 2.4 M packets. Bytes: CPU slices 27 % (11.7 B
#   a packet), vCPU states 27 % (11.6), exits 26 % (29.0), threads and lanes 20 % (20.8).
# Left: stage 1 is report's equal, not less; what would make it less is less work in the
# shared stage for the export (it runs steal, vCPU time and containment for the run's
# warnings only) or smaller records (the queue's 134 bytes per event cross the cores).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build-release/build.ninja ] || meson setup build-release -Dbuildtype=release -Dtests=false >/dev/null
ninja -C build-release tools/vmscope/vmscope >/dev/null
vms=$PWD/build-release/tools/vmscope/vmscope
work=${BENCH_DIR:-build-release/bench-data}
runs=${RUNS:-3}
mkdir -p "$work"
once() {  # FILE CMD...: one run, "wall user system peak-KiB" appended to FILE, its stderr in
  # FILE.err (not niced: measure.sh makes the machine ours; a nice'd run would measure the
  # share of the CPUs left by the others' work, not the program)
  local f=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" >/dev/null 2>"$f.err"
  cat "$work/time" >> "$f"
}
show() {  # LABEL FILE: of its runs, wall-clock time (median and least: what the user waits
  # for), CPU time (user + system, all threads: median and least; user and system apart,
  # writing a file is system time), peak RSS
  awk -v label="$1" '
    function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                    return a[int((n + 1) / 2)] }
    function least(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] < m) m = a[i]; return m }
    { n++; w[n] = $1; c[n] = $2 + $3; u[n] = $2; s[n] = $3; if ($4 > rss) rss = $4 }
    END { printf "  %-20s %7.2f s wall (least %.2f)  %7.2f s CPU (least %.2f; user %.2f, system %.2f)  peak RSS %6.1f MiB\n",
            label, med(w, n), least(w, n), med(c, n), least(c, n), med(u, n), med(s, n), rss / 1024 }' "$2"
}
for n in "${@:-5000000 50000000}"; do
  for e in $n; do
    d="$work/pair-$e"
    [ -f "$d/host.dat" ] || "$vms" synth --events "$e" --seed 7 --out "$d" >/dev/null
    echo "== synthesized pair, $e events ($(du -m "$d/host.dat" "$d/guest.dat" | awk '{s+=$1} END {print s}') MiB of trace.dat)"
    # report and the exports alternate, so that a change of the machine's load falls on all
    rm -f "$work"/t-*.times "$work"/t-*.err "$work"/t-*.stats
    for _ in $(seq "$runs"); do
      once "$work/t-report.times" "$vms" report "$d/host.dat" "$d/guest.dat"
      once "$work/t-export.times" env VMS_EXPORT_STATS=1 "$vms" export -o "$work/t.pftrace" "$d/host.dat" "$d/guest.dat"
      grep -h '^vmscope export: stage 1' "$work/t-export.times.err" | sed 's/^vmscope export: /    /' >> "$work/t-export.stats" || true
      once "$work/t-export1.times" env VMS_EXPORT_THREADS=0 "$vms" export -o "$work/t.pftrace" "$d/host.dat" "$d/guest.dat"
    done
    echo "  (median of $runs runs each, alternating)"
    show "report" "$work/t-report.times"
    show "export .pftrace" "$work/t-export.times"
    show "  one thread" "$work/t-export1.times"
    echo "  the threaded export's stages, per run (VMS_EXPORT_STATS=1):"; cat "$work/t-export.stats"
    echo "  .pftrace: $(du -m "$work/t.pftrace" | cut -f1) MiB, $(stat -c %s "$work/t.pftrace" | awk -v e="$e" '{printf "%.1f", $1 / e}') bytes per event"
    [ -n "${QUICK:-}" ] && { rm -f "$work/t.pftrace"; continue; }
    rm -f "$work"/t-*.times
    for _ in $(seq "$runs"); do
      once "$work/t-null.times" "$vms" export --format perfetto -o /dev/null "$d/host.dat" "$d/guest.dat"
      once "$work/t-deflate.times" "$vms" export --deflate -o "$work/t.pftrace" "$d/host.dat" "$d/guest.dat"
    done
    show "export -o /dev/null" "$work/t-null.times"
    show "export --deflate" "$work/t-deflate.times"
    echo "  .pftrace --deflate: $(du -m "$work/t.pftrace" | cut -f1) MiB, $(stat -c %s "$work/t.pftrace" | awk -v e="$e" '{printf "%.1f", $1 / e}') bytes per event"
    rm -f "$work/t.pftrace"
  done
done

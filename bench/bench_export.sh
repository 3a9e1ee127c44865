#!/usr/bin/env bash
# The timeline export against `report` on the same synthesized pair, in an optimized build:
# CPU time (user + system; the median of RUNS and the least: the machine's load only adds), peak RSS, and the
# size of the .pftrace (plain and --deflate) and of the traces.
# usage: bench/bench_export.sh [EVENTS...]   (default: 5000000 50000000)
#        QUICK=1: report and the .pftrace only (no /dev/null, no --deflate); RUNS=N (default 3)
# Not in CI (speed goals live here).
#
# Goal (issue 8): the export at least as fast as `report` on the same input, memory flat.
# The user's measure is the command's wall-clock time. The export is a two-stage pipeline
# (docs/DESIGN.md): stage 1, the caller's thread, reads, merges, runs the state machine (with
# the fused view's occupants), counts the unattributed waits and containment, and publishes
# records; stage 2, a thread of its own, makes the guest threads' overlays from them, the
# tracks, the bytes, and writes.
# VMS_EXPORT_THREADS=0 = one thread; VMS_EXPORT_STATS=1 prints each stage's CPU time.
# STATUS (2026-12-02): BLOCKED on this machine; issue 8 says so. The export does ~1.45x
# report's instructions in all (it runs report's reading and state machine, then encodes ~2.4
# slices per event and writes ~73 bytes per event), so it can only be as fast as report by
# running on two cores at once; its reading thread does 0.86x report's instructions. On this
# VM the second vCPU is sometimes a core and sometimes half of one: two busy loops run at
# 1.57-2.61x the throughput of one, and one alone moves +-40 % from second to second (a spin
# loop, 12 one-second rounds, 00:57 UTC); report beside a busy loop ran 1.5x slower in some
# rounds and unslowed in others. So the export/report ratio follows the host's placement of
# the vCPUs, not the code: 0.57-1.84x per round at 5 M events, 0.92-1.48x at 50 M, on the same
# binaries within minutes. Showing the goal needs a machine with two dedicated cores.
# Measurements below, newest first.
# 7789daf (the prefetch thread decompresses every stream: report ~7 % faster at 5 M, 0.93x by
# medians of 20 alternating runs), 2026-12-02 01:22 UTC, load 4.8 (a helper building),
# QUICK=1 RUNS=3, 50 M: report 11.69 s wall (11.16 s CPU), export 16.71 s (16.55 s CPU), one
# thread 23.06 s; per round 1.47 1.47 1.30; both stages waited for each other (stage 1
# 2.1-4.4 s, stage 2 7.1-8.4 s): short of a core, not of work. At 5 M, ten rounds just before
# UTC: export 1.47x report by medians (1.04-1.84x per round).
# callgrind, 500 k pair (synth --events 500000 --seed 7), build-prof, export -o /dev/null,
# per thread (--separate-threads=yes; zstd's share between a reader and the trace.dat
# prefetch thread moves from run to run, hence the figures without it):
#   report (a25fba0): main thread 818 M (722 M without zstd), prefetch 70 M.
#   export (a25fba0): stage 1 741 M (621 M without zstd: 0.86x report's), stage 2 494 M,
#     prefetch 45 M; at 3e421ab stage 1 846 M (739 M), stage 2 419 M. Stage 1 still pays the
#     occupants (~0.11 G in the state machine and their records) and the records (~0.05 G);
#     in all the export runs ~1.3 G instructions against report's 0.9 G.
# What decides on this VM is where the host runs its two vCPUs: `report` beside a busy loop
# (no memory traffic) on the other vCPU took 1.01/1.51/1.03/1.55/0.98 s of CPU against
# 1.01/1.06/1.09/0.98/0.93 s alone (5 M pair, 5 rounds, 23:48 UTC): in some rounds the second
# vCPU costs the first nothing, in others half its speed, and a two-thread export loses in
# those. At 5 M (12 rounds, 23:49, each after a sync) the export's wall time was 0.57-1.49x
# report's, median 0.87x (report 1.215 s, export 0.975 s by medians); at 50 M, three rounds
# of an ad-hoc script (report, export, each after a sync; 23:49-23:51 UTC): report 11.36 /
# 12.98 / 11.74 s, export 10.50 / 13.00 / 11.15 s (0.92x-1.00x); then this script at 23:51-
# 23:55 UTC: report 11.77 s (9.34), export 15.51 s (13.67), one thread 16.33 s; per round
# 1.12 1.46 1.36 1.17 1.13. So the export is as fast as report in some minutes and a third
# slower in others, on the same binaries: the goal is not met reliably here.
# The machine alone (2026-12-01 23:25-23:29 UTC, load < 1.5, nothing else running), bd6f463,
# `/work/measure.sh env QUICK=1 RUNS=5 bench/bench_export.sh 50000000`, each run after a sync
# (800ccbc), medians of 5 alternating (least), wall then CPU:
#   report 15.21 s (10.62), 16.81 s CPU; export 19.90 s (14.34), 35.43 s CPU (system 3.78);
#   one thread 21.22 s (17.68), 22.76 s CPU. export / report per round: 1.25 1.31 1.23 1.48
#   1.35. Stage 1 13.5-18.9 s CPU (0.86x report's instructions, ~1.1x its CPU time: it runs
#   ~30 % slower per instruction while stage 2 runs on the other vCPU), waiting 0.2-0.4 s for
#   stage 2; stage 2 11.6-15.3 s CPU, waiting 2.3-4.3 s for stage 1. NOT MET: 1.31x.
# 50 M pair, `/work/measure.sh env QUICK=1 RUNS=5 bench/bench_export.sh 50000000`, 53412af,
# medians of 5 alternating (least), wall then CPU:
#   22:37-22:41 UTC (load 3-4 falling to 1.5): report 12.49 s (8.68), 12.45 s CPU; export
#     21.36 s (15.69), 24.75 s CPU; one thread 23.79 s (20.17), 22.82 s CPU.
#   22:48-22:53 UTC (load 5 at the start): report 16.24 s (9.42), 16.30 s CPU; export 21.51 s
#     (19.06), 31.41 s CPU; one thread 21.91 s (16.30), 20.80 s CPU.
#   23:05-23:10 UTC, a25fba0 (load 3.4-4.7): report 14.64 s (12.68), 14.21 s CPU; export
#     26.82 s (20.46), 30.04 s CPU; one thread 28.93 s (26.23), 25.27 s CPU; stage 1 10.0-15.7
#     s CPU waiting 0.7-7.4 s for stage 2, stage 2 waiting 3.0-9.0 s for stage 1: both short
#     of a core (and stage 2 of the disk) more than of work.
#   Stage 1 11.5-18.7 s CPU, waited 0.2-7.3 s for stage 2 (12-15 s CPU, 4-5 s of it system:
#     writing 3.4 GB while the kernel writes it back); .pftrace 3473 MiB (72.8 bytes per
#     event); peak RSS report 15.2 MiB, export 16.8 MiB, flat in the trace's length.
#   3e421ab against 53412af, export to a file, alternating, 3 rounds, load ~3 (22:44 UTC):
#     report 15.8-19.1 s; 3e421ab 27.4 / 32.8 / 31.8 s, 53412af 25.8 / 30.8 / 29.5 s (-6 %),
#     stage 1 15.9-20.0 -> 12.2-15.8 s CPU. At the start of the session, quieter, the lead
#     measured report 13.85 s and export 12.43 s, then 14.56 s and 16.01 s.
# Tried and left: starting the file's write-back as it grows (sync_file_range(WRITE) every
# 64 MiB from stage 2): 9.83 / 14.44 / 11.11 s against 10.50 / 13.00 / 11.15 s, no gain.
# Tried and left: stage 2 at nice 10 or 19 (so that the prefetch thread decompresses ahead of
# stage 1): stage 1 then waited 0.5-2.1 s per 5 M export for the starved stage 2.
# Left: on this VM a busy second core is worth less than one, so what decides is the export's
# total work (~1.45x report's instructions: the occupants, the records, 2.4 slices per event
# encoded and 72.8 bytes per event written), not only stage 1's.
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
  # each run starts with nothing of an earlier run's output left to write back: deleting a
  # 3.4 GB file whose pages are still being written waits for them, and the kernel's
  # writeback of it takes a core from whatever runs next (the run's own writeback counts)
  rm -f "$work/t.pftrace"; sync
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
    paste "$work/t-report.times" "$work/t-export.times" | awk '{ r = $5 / $1; printf "%s%.2f", n++ ? " " : "  export / report, wall, per round: ", r } END { print "" }'
    paste "$work/t-report.times" "$work/t-export.times" | awk '
      function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                      return a[int((n + 1) / 2)] }
      { n++; rw[n] = $1; rc[n] = $2 + $3; ew[n] = $5; ec[n] = $6 + $7 }
      END { printf "  ratio export / report: wall %.2fx, CPU %.2fx (medians of %d alternating runs each)\n", med(ew, n) / med(rw, n), med(ec, n) / med(rc, n), n }'
    echo "  load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
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

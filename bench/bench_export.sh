#!/usr/bin/env bash
# The timeline export against `report` on the same synthesized pair, in an optimized build:
# CPU time (user + system; the median of RUNS and the least: the machine's load only adds), peak RSS, and the
# size of the .pftrace (plain and --deflate) and of the traces.
# usage: bench/bench_export.sh [EVENTS...]   (default: 5000000 50000000)
#        QUICK=1: report and the .pftrace only (no /dev/null, no --deflate); RUNS=N (default 3)
# Not in CI (speed goals live here).
#
# Goal (issue 8): the export at least as fast as `report` on the same input, memory flat.
# NOT MET: the export costs ~1.34x report's instructions, 1.2-1.5x its CPU time under the
# load of this machine (was 1.45x / 1.5-1.9x; 2x before that). About half the CPU time it takes over report is system time:
# writing the 3.5 GB .pftrace (1.6-1.9 s at 50 M events; -o /dev/null: 0.2 s).
#
# Measured 2026-12-01 16:49-16:57 UTC, QUICK=1 bench/bench_export.sh 50000000 (2-core VM, load
# average 5-7 from the other helpers' builds and fuzzers: absolute times are inflated and
# noisy, compare within a run), median of 3 (least):
#   50 M-event pair (323 MiB of trace.dat): report 13.85 s CPU (13.12), 15.2 MiB peak;
#     export .pftrace 19.42 s CPU (16.29), 14.9 MiB peak: 1.40x report (1.24x by the least);
#     .pftrace 3473 MiB (72.8 bytes per event, unchanged)
#   one run each right after (/usr/bin/time -f '%U %S'): report 11.07 user + 0.19 sys = 11.26 s;
#     export .pftrace 12.95 + 1.20 = 14.15 s (1.26x); export -o /dev/null 13.04 + 0.23 = 13.27 s
#     (1.18x): writing 3.5 GB costs ~1 s of system time that report does not have.
#   a second QUICK run, 16:57-17:02 UTC: report 13.86 s (12.25), export 19.55 s (14.21):
#     1.41x by the median, 1.16x by the least; the spread is the load's (above all the
#     export's system time writing 3.5 GB, hence user and system apart since)
#   a third, 17:05-17:10 UTC, user and system apart: report 12.89 s (11.53; user 12.73,
#     system 0.26), export 16.31 s (14.59; user 14.45, system 1.86): 1.27x, user time 1.14x
#   a fourth, 17:29-17:34 UTC (after the last change, -0.7 % instructions), load 5-6: report
#     12.71 s (11.68; user 12.47, system 0.23), export 18.63 s (17.55; user 17.12, system
#     1.82): 1.47x. The same code's export user time went 14.45 -> 17.12 s between runs while
#     report's stayed at 12.5-12.7: under this load the CPU time of the export (which streams
#     3.5 GB out) moves far more than the instruction counts do; judge changes by callgrind.
#   (the previous round, 14:00 UTC, load ~10: report 13.05 s, export 19.05 s, 1.46x)
# callgrind (instructions, deterministic) on a 500 k-event pair (synth --events 500000
# --seed 7), build-prof (release + LTO + debug info), export -o /dev/null against report:
#   start of this round 1.281 G vs 0.889 G (1.44x); now 1.212 G vs 0.903 G (1.34x; report and
#   the export both read ~9 M more since, from the reader's changes). What went:
#   - the fused view: the state machine publishes host CPU occupants (cpu_occupant) and
#     pcpu_view only makes intervals of them (no re-tracking from cpu_run/vcpu_mode/
#     guest_switch/every raw event): structurally right, but neutral in cost (~0.13 G before
#     and after: the same work moved into the state machine, ~50 M inlined there + ~25 M
#     publishing + ~36 M making intervals, for 427 k rows and 500 k events); report runs a
#     copy of the event path without it (+0.2 %);
#   - the writer's fast paths (one check per slice on a clocked track with a known name,
#     begin-with-arguments checked while written): -0.03 G; 8 recent occupant names per CPU
#     (4 missed 10 %): -0.01 G; exit names from the table inline: -0.01 G; vCPU state slices
#     written from vcpu_state instead of via the interval sink: -0.014 G; the state machine's
#     event path with occupants inline in the session's pass like the one without: -0.009 G.
# Where the rest goes (callgrind, 500 k pair, inclusive): reading, merging, the state machine
#   and the interval analyses are shared with report (~0.75 G); the export's own is ~0.47 G
#   for ~1.2 M slices (2.4 per event) as 2.4 M packets: the fused view ~0.20 G (427 k CPU
#   slices: state machine ~50 M, publishing ~25 M, intervals ~36 M, names and tracks ~35 M,
#   writing ~56 M), exits ~0.09 G (164 k, ~445 instructions each with 4 arguments: the guest
#   RIP is a 10-byte varint), overlays ~0.09 G (142 k with 3 arguments), vCPU states
#   ~0.08 G (423 k, ~50 M of it writing), steal/counters ~0.03 G. report's own (latency,
#   findings, exit tables) is ~0.15 G. Bytes: CPU slices 27 % (11.7 B a packet), vCPU states
#   27 % (11.6), exits 26 % (29.0), threads and lanes 20 % (20.8): every packet already
#   carries only a delta time, its sequence and interned ids; what is left is their number.
# What was tried and did not pay: a 4-bytes-a-round varint for 64-bit values (+13 M:
#   most values are small); the state machine's occupant hooks out of line (+14 M export).
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

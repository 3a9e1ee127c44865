#!/usr/bin/env python3
"""vmscope against xenalyze --summary on the same xentrace files, in the same run.

Both do the whole analysis of a file: xenalyze --summary (its per-domain/vCPU runstates,
exits, interrupts) and `vmscope report` (the Xen model's xenalyze-equal tables plus the common
analyses: vCPU states, exits with percentiles, steal, run-queue latency). Two files: the real
TRACE, and a larger synthetic one, COPIES copies of TRACE end to end (bench/xen_big.py: new
CPUs and domains for each copy; xenalyze and vmscope agree on it, tests/xen). Runs alternate
(xenalyze, vmscope, xenalyze, ...) so that the machine's load hits both alike; the medians of
the wall-clock times and of the CPU times (user + sys, from wait4) are printed with the
ratios, and the peak resident set of one more run of each (through /usr/bin/time: see
peak_rss). The goal (issue 11) is a CPU-time ratio of at least 3.

Measured (release build, the shared 2-core machine under a load average of 4-8; CPU time is
the measure, and even it moves by a few % from run to run under that load):
  before 2026-12-01 (commit 9c32406): xen/xentrace.bin 2.57x on a quiet machine (31.4 vs
  12.2 ms), 2.75x beside the others below (21.76 vs 7.90 ms); the 10-copy file 2.73x quiet,
  2.82x below (217.0 vs 77.1 ms)
  after (this file's commit): same runs, median CPU ms, xenalyze / old / new:
    xentrace.bin  21.76 / 7.90 / 7.40   -> 2.94x      (41 runs each, alternating)
    10 copies    217.04 / 77.08 / 66.67 -> 3.26x      (9 runs each)
  and this script (41 and 13 runs): 21.8 vs 7.6 ms = 2.87x; 212.5 vs 66.9 ms = 3.18x.
  So the goal is met on the larger file and not quite on xen/xentrace.bin, where process
  start-up and exit, the same for both tools, weigh more. callgrind (report,
  xentrace.bin): 64.10 M -> 59.97 M instructions; the CPU time went down less in the
  reader's instructions than in its memory access (see docs/DESIGN.md, "why two hops").
  Later (commit f5fae70, overlays and containment subscribe only when a guest has a trace):
  callgrind 59.97 M -> 57.62 M instructions (-3.9%); CPU ms median of 41 alternating runs
  (/tmp/xen_ab2.py: xenalyze, old, new) under a load average of 8: 31.88 / 11.42 / 10.90
  (-4.5%; 2.79x -> 2.92x). This script right after, same load average 8: xentrace.bin
  32.1 vs 11.6 ms = 2.78x, 10 copies 314.5 vs 106.2 ms = 2.96x: at that load both tools'
  times rise by half and the ratio falls with them, so compare ratios only at equal load.
  Then the latency consumer too (vms_observer.traced_guests_only): 57.62 M -> 56.40 M
  instructions; xen_ab2, 31 alternating runs at a lower load: xenalyze 19.25, before 6.63
  (2.90x), after 6.39 ms (3.01x). This script after it (commit 094ec6a), load average 3.8:
  xentrace.bin 22.3 vs 7.0 ms = 3.19x (41 runs), 10 copies 190.5 vs 57.2 ms = 3.33x (13
  runs); peak RSS 6.7 and 19.0 MiB. The goal is met on both files at that load.
  On the quiet machine at the end of that session (commit 4563081, load average 1.2, no other
  work; 61 then 101 runs): xentrace.bin 35.0 vs 12.3 ms = 2.85x, then 26.4 vs 9.9 ms = 2.65x
  (least times 19.0 vs 6.5 ms = 2.92x); 10 copies 300.2 vs 99.4 ms = 3.02x, then 204.3 vs
  62.1 ms = 3.29x. So: met on the 39 MB file in every run, not reliably on the 3.9 MB one,
  where the medians of both tools spread by half between runs of the same binaries.

usage: bench_xen.py VMSCOPE TRACE [RUNS] [HZ] [COPIES]   (RUNS on TRACE, default 21; a third as
       many on the larger file; COPIES default 10, 0 for TRACE alone)
"""
import os, shutil, statistics, subprocess, sys, tempfile, time


def run(cmd):
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    if status != 0:
        sys.exit("bench_xen: %s failed (status %d)" % (" ".join(cmd), status))
    return dt, ru.ru_maxrss / 1024.0, ru.ru_utime + ru.ru_stime  # s, MiB, CPU s


def peak_rss(cmd):
    """Peak resident set in MiB of one run, through /usr/bin/time (wait4's ru_maxrss of a
    child of this script starts at the script's own size: a child made by fork or vfork
    inherits its parent's high-water mark at exec, so both tools showed Python's 14.4 MiB)"""
    tm = "/usr/bin/time"
    if not os.path.exists(tm):
        return float("nan")
    p = subprocess.run([tm, "-f", "%M"] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        return int(p.stderr.decode(errors="replace").strip().splitlines()[-1]) / 1024.0
    except (ValueError, IndexError):
        return float("nan")


def bench(xa, vms, trace, runs, hz):
    size = os.path.getsize(trace)
    xa_cmd = [xa, "--summary", "--cpu-hz=" + hz, trace]
    vms_cmd = [vms, "report", "--cpu-hz", hz, trace]
    run(xa_cmd), run(vms_cmd)  # warm the page cache
    xt, xc, vt, vc = [], [], [], []
    for _ in range(runs):
        t, _, c = run(xa_cmd)
        xt.append(t), xc.append(c)
        t, _, c = run(vms_cmd)
        vt.append(t), vc.append(c)
    xm, vm = [peak_rss(xa_cmd)], [peak_rss(vms_cmd)]
    load = os.getloadavg()
    mx, mv = statistics.median(xt), statistics.median(vt)
    print("xentrace file: %s (%.1f MB), %d runs each, alternating; load average %.2f %.2f %.2f"
          % (trace, size / 1e6, runs, *load))
    cx, cv = statistics.median(xc), statistics.median(vc)
    for name, t, c, m in (("xenalyze --summary", xt, xc, xm), ("vmscope report", vt, vc, vm)):
        print("%-20s wall median %7.1f ms (min %7.1f, max %7.1f)  CPU (user+sys) median %6.1f ms"
              " (min %6.1f)  peak RSS %5.1f MiB" % (name, statistics.median(t) * 1e3, min(t) * 1e3,
                                                    max(t) * 1e3, statistics.median(c) * 1e3,
                                                    min(c) * 1e3, statistics.median(m)))
    print("ratio xenalyze / vmscope: wall %.1fx (medians), CPU time %.2fx (medians; CPU time is"
          " what the machine's load does not blur; goal 3x)" % (mx / mv, cx / cv if cv else float("inf")))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    vms, trace = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 21
    hz = sys.argv[4] if len(sys.argv) > 4 else "2.4G"
    copies = int(sys.argv[5]) if len(sys.argv) > 5 else 10
    xa = shutil.which("xenalyze")
    if not xa:
        sys.exit("bench_xen: xenalyze not installed (Debian package xen-utils-common)")
    bench(xa, vms, trace, runs, hz)
    if copies > 0:
        with tempfile.TemporaryDirectory(prefix="bench_xen.") as d:
            big = os.path.join(d, "xentrace-x%d.bin" % copies)
            subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                         "xen_big.py"), trace, big, str(copies)],
                           check=True)
            print()
            print("larger synthetic file: %d copies of %s end to end (bench/xen_big.py)"
                  % (copies, os.path.basename(trace)))
            bench(xa, vms, big, max(3, runs // 3), hz)


main()

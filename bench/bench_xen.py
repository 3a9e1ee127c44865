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

Measured (release build; CPU time is the measure, but on this shared 2-core VM both tools'
times move by half between runs of the same binaries, with the load and with whatever else
shares the host, and the ratio moves with them by +-5%: compare ratios only within one run):
  commit d1d77b8 (2026-12-02 02:22-02:24 UTC, load 1.8-5.0: the other engineer building),
  two runs of this script in a row, 301 runs on xentrace.bin, 100 on the 10-copy file:
    xentrace.bin 3.15x (33.2 vs 10.5 ms), 3.18x (30.5 vs 9.6 ms) by the medians;
      by the least times 3.30x (21.1 vs 6.4 ms), 3.34x (20.4 vs 6.1 ms);
    10 copies   3.33x (305.4 vs 91.6 ms), 3.28x (292.0 vs 88.9 ms); least 3.95x, 3.80x;
    peak RSS 12.6 vs 6.5 MiB, 86 vs 18.8 MiB. callgrind: 48.63 M instructions (xenalyze
    --summary 123.8 M). Against 7789daf (the session's start, 52.00 M) in the same hour, the
    two binaries alternating: 0.943x its CPU time on xentrace.bin by medians (201 runs
    each; least 0.949x; faster in 166 of 201 pairs), 0.932x on the 10-copy file (41 runs;
    least 0.963x). The changes, all in the consumers: no containment modes without a
    traced guest, a vcpu_instead's comm copied whole (24 bytes), each guest's exit table
    merged from its vCPUs' at the finish instead of a second row and sample per exit, the
    state machine's per-vCPU fields that every event reads first. Tried and not kept: a
    last-row shortcut in the Xen model's exit table (the exits alternate reasons: 20% hits),
    the subscribers' function and context copied beside each other for the publications
    (one dependent load less per call; 1.009x, no gain).
  commit 3fa8e2f (the same code; the lead's check, 02:25-02:28 UTC, load 2.8 falling to 1.2,
  fuzzers paused), three runs in a row, 301 / 100 runs: xentrace.bin 3.23x (30.9 vs 9.6 ms),
  3.19x (30.1 vs 9.4 ms), 3.19x (20.1 vs 6.3 ms) by the medians, least 3.19x, 3.39x, 3.31x;
  10 copies 3.41x, 3.77x, 3.31x.
  History, same script: 2.57x / 2.73x before 2026-12-01 (9c32406); 2.87x / 3.18x after the
  stream and walk work (64.10 M -> 59.97 M instructions); 2.80-3.19x / 2.87-3.33x at
  094ec6a-5945e8c (56.40-56.05 M); at c2f623a (52.00 M), three runs at load 2 and three
  with the machine alone: 2.82-3.10x on xentrace.bin (least 3.02-3.20x), 3.15-3.54x on the
  10-copy file; at 148ae54 (2026-12-02 01:06-01:30, quiet) 2.99x and 2.98x (least 3.24x,
  3.11x), 3.52x and 3.29x. What was tried and not kept is in docs/DESIGN.md, "why two hops".
  So 3x is met on both files by the medians and the least times, on xentrace.bin now with
  a margin of ~5% (the run-to-run spread of the ratio).

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

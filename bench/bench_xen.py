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
  commit c2f623a, the machine alone (2026-12-01 23:23-23:25 UTC, load 0.8-1.0, no build or
  other engineer running), three runs of this script in a row, 101 runs / 33 runs:
    xentrace.bin 3.10x (18.9 vs 6.1 ms), 2.97x (32.2 vs 10.8 ms), 2.91x (34.4 vs 11.8 ms);
      by the least times 3.18x, 3.20x, 3.11x;
    10 copies   3.47x (197.4 vs 56.8 ms), 3.19x (295.1 vs 92.5 ms), 3.16x (287.5 vs 90.9 ms).
    Both tools ran ~1.7x faster in the first run than in the next two (the host's state, not
    the load): the small file's ratio was higher when the machine was fast.
  commit c2f623a (2026-12-01 23:22-23:23 UTC, load 1.8-2.3), 101 runs on xentrace.bin, 33 on
  the 10-copy file, three runs of this script in a row:
    xentrace.bin 2.97x (35.2 vs 11.9 ms), 2.82x (31.1 vs 11.0 ms), 3.10x (20.1 vs 6.5 ms);
      by the least times 3.14x, 3.02x, 3.08x;
    10 copies   3.26x (320.6 vs 98.4 ms), 3.54x (215.8 vs 61.0 ms), 3.15x (244.8 vs 77.6 ms);
    peak RSS 12.7 vs 6.5 MiB, 86 vs 19 MiB. callgrind: 52.00 M instructions (xenalyze
    --summary 123.8 M). Against 3e421ab in the same minutes (the two binaries alternating):
    0.960x its CPU time on xentrace.bin (201 runs each; least 0.940x), 0.844x on the 10-copy
    file (41 runs; least 0.940x). This session's changes, 56.05 M -> 52.00 M: no observing
    model for a Xen host alone, cli_ns without printf's %f, the Xen model's lookups and
    updates inline, the announced vCPU's record returned without the reader's general path,
    the merge's common path inline. Earlier the same evening (load 2.7-4.5, at 5bf6072 and
    c116ca4): 2.89-3.04x and 3.08-3.44x.
  So 3x is met on the 10-copy file in every run and on xentrace.bin in about half the runs
  (by the least times in every run): not reliably, and not with the margin (3.2x) this
  session aimed for; the run-to-run spread (+-5%) is larger than what is left to gain by
  small steps.
  History, same script: 2.57x / 2.73x before 2026-12-01 (9c32406); 2.87x / 3.18x after the
  stream and walk work (64.10 M -> 59.97 M instructions); 3.19x / 3.33x at load 3.8 after the
  Xen-host consumers stopped subscribing (094ec6a, 56.40 M); 2.80-2.96x / 2.87-3.19x at
  f5c5469 and 5945e8c (56.05 M), 2.93x / 2.95x at 3e421ab (22:09 UTC, quiet). What was tried
  and not kept is in docs/DESIGN.md, "why two hops".

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

#!/usr/bin/env python3
"""The Xen model's lost-records accounting on many vCPUs with many markers (TAP).

Files of xt_handmade.lost_many (N vCPUs on several CPUs, lost-records markers interleaved on
every CPU; with back_before, markers whose first lost TSC lies before what other CPUs wrote
since, so that the markers' TSCs go down as well as up). Every vCPU's runstate, runnable and
exit rows of `vmscope report --json` must equal the figures in xen_lost_markers.expected:
those of the eager accounting (every vCPU not running made LOST at every marker, as
xenalyze's process_lost_records does) at commit d2505e7, before the model did it lazily,
with two corrections, each found against xenalyze and derived from the records:
- s8's d4v0 blocks on CPU 0 at the TSC of CPU 3's marker (23,071), whose loss is
  [22,985, 23,071), so no CPU is losing records then and the block is an ordinary one:
  blocked 7/7/3104 and lost 66/66/27341, as xenalyze says (the model took the same-TSC
  records lower CPU first and made it LOST: blocked 6, lost 67; see xt_handmade.lost_tie);
- a CPU whose records end makes its running vCPU LOST there, in the merged order (xenalyze's
  deactivate_pcpu), so that the markers other CPUs write later make it LOST again: the model
  did it at the end of the pass, after every marker, and missed those intervals (s8's d2v2
  62 -> 63, d5v0 52 -> 54, as xenalyze; the LOST rows of s2, s6-back, s11-back and
  wide-back's vCPUs that ran last on a CPU that ended early).
With both, vmscope equals xenalyze on every row of s8 (347 checks). xenalyze is not the
reference here otherwise: it stops (FATAL) on most such files, and where it runs (s2,
s6-back) it reads some records twice: mid-file it says "scan_for_new_pcpu: Activating pcpu
3 at offset 29544" (s2; pcpu 0 at 28388 and 28968 in s6-back) and goes over records of that
CPU it has already processed (its --dump-all shows s2's marker of CPU 3, first lost TSC
44,989, twice, the second time after CPU 2's marker of 46,090). Every vCPU not running is
then LOST again from 44,989 rather than 46,090: each one's LOST total is 1,101 cycles more
than here with the same count, and CPU 3's own vCPUs (d4v3, d7v3) run and block twice as
often in that stretch (the 33 checks of s2 that differ; 10 in s6-back). The file holds
each record once: vmscope's figures stand (the comparison with xenalyze stays in
xenalyze_compare.py's files).

usage: xen_lost_markers.py VMSCOPE EXPECTED DIR            (the test)
       xen_lost_markers.py VMSCOPE --write EXPECTED DIR    (write EXPECTED with VMSCOPE)
"""
import json, os, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import xt_handmade

# (name, lost_many arguments)
CASES = [
    ("s2", dict(seed=2)),
    ("s8", dict(seed=8)),
    ("s6-back", dict(seed=6, back_before=True)),
    ("s11-back", dict(seed=11, back_before=True)),
    ("wide-back", dict(seed=3, cpus=8, doms=64, vcpus=4, rounds=40, back_before=True)),
]


def rows(vms, path):
    """'dDvV what count/events/cycles' lines, sorted, and the header figures"""
    r = subprocess.run([vms, "report", "--json", "--cpu-hz", "1G", path], capture_output=True,
                       text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    xen = [m["xen"] for m in json.loads(r.stdout)["machines"] if "xen" in m][0]
    out = ["lost_records %d anomalies %d tsc_skews %d" % (xen["lost_records"], xen["anomalies"],
                                                         xen["tsc_skews"])]
    for v in xen["vcpus"]:
        name = "d%dv%d" % (v["domain"], v["vcpu"])
        for group in ("runstates", "runnable"):
            for k, c in sorted(v[group].items()):
                out.append("%s %s %d/%d/%d" % (name, k, c["count"], c["events"], c["cycles"]))
        for e in v["exits"]:
            out.append("%s exit%d %d/%d/%d" % (name, e["reason"], e["count"], e["timed"],
                                               e["cycles"]))
    return out, ""


def main():
    if len(sys.argv) == 5 and sys.argv[2] == "--write":
        vms, exp, d = sys.argv[1], sys.argv[3], sys.argv[4]
        os.makedirs(d, exist_ok=True)
        with open(exp, "w") as f:
            for name, kw in CASES:
                got, err = rows(vms, xt_handmade.lost_many(d, **kw))
                assert got is not None, err
                f.write("".join("%s %s\n" % (name, l) for l in got))
        return 0
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    vms, exp, d = sys.argv[1:]
    os.makedirs(d, exist_ok=True)
    want = {}
    for line in open(exp):
        name, rest = line.rstrip("\n").split(" ", 1)
        want.setdefault(name, []).append(rest)
    n = failed = 0
    for name, kw in CASES:
        path = xt_handmade.lost_many(d, **kw)
        got, err = rows(vms, path)
        n += 1
        if got is None:
            print("not ok %d - %s: vmscope report ran\n# %s" % (n, name, err))
            failed += 1
            continue
        w = want.get(name, [])
        lost = sum(1 for l in w if " lost " in l and not l.endswith(" 0/0/0"))
        good = got == w
        print("%s %d - %s (%s): %d rows equal the eager accounting's, %d vCPUs with LOST time"
              % ("ok" if good else "not ok", n, name, os.path.basename(path), len(w), lost))
        if not good:
            failed += 1
            diff = sorted(set(got) ^ set(w))[:10]
            print("# differ (first 10): %s" % diff)
        n += 1
        ok = lost >= 8 and int(w[0].split()[1]) >= 30
        print("%s %d - %s: >= 8 vCPUs with LOST time, >= 30 records lost" % ("ok" if ok else "not ok", n,
                                                                     name))
        failed += not ok
    print("1..%d" % n)
    return 1 if failed else 0


sys.exit(main())

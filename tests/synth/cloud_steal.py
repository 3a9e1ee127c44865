#!/usr/bin/env python3
"""Steal per vCPU thread from a host trace's sched_switch events alone, as `trace-cmd report
-t` prints them (another program than vmscope decodes the file). For every thread whose comm
is QEMU's "CPU n/KVM": from each switch out with prev_state R or R+ (runnable: preempted) on
a CPU to its next switch in, the threads that ran on that CPU meanwhile, each charged with
the time it ran there; the last stretch ends at the host trace's last event. Prints JSON
{tid: {"preempted_ns": N, "steal": {"tid comm": ns}}}; comms keyed as "tid comm"."""
import json
import re
import subprocess
import sys

SW = re.compile(r"\[(\d+)\]\s+(\d+)\.(\d{9}): sched_switch:\s+(.*?):(-?\d+) \[\d+\] (\S+) ==> "
                r"(.*?):(-?\d+) \[\d+\]\s*$")
TS = re.compile(r"\[\d+\]\s+(\d+)\.(\d{9}):")
VCPU = re.compile(r"^CPU \d+/KVM$")

def main(path):
    out = subprocess.run(["trace-cmd", "report", "-t", path], check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    occ = {}        # cpu -> (tid, comm, since)
    waiting = {}    # cpu -> set of preempted vCPU tids that left it
    pre = {}        # tid -> preempted since
    res = {}
    last = 0

    def charge(cpu, t):
        o = occ.get(cpu)
        if not o:
            return
        for v in waiting.get(cpu, ()):
            r = res[v]["steal"]
            key = "%d %s" % (o[0], o[1])
            r[key] = r.get(key, 0) + t - o[2]

    for line in out.splitlines():
        m = TS.search(line)
        if not m:
            continue
        t = int(m.group(1)) * 10**9 + int(m.group(2))
        last = max(last, t)
        m = SW.search(line)
        if not m:
            continue
        cpu = int(m.group(1))
        pc, pt, st, nc, nt = m.group(4), int(m.group(5)), m.group(6), m.group(7), int(m.group(8))
        charge(cpu, t)
        if VCPU.match(pc) and st in ("R", "R+"):
            res.setdefault(pt, {"preempted_ns": 0, "steal": {}})
            waiting.setdefault(cpu, set()).add(pt)
            pre[pt] = (cpu, t)
        if nt in pre:
            c0, t0 = pre.pop(nt)
            waiting[c0].discard(nt)
            res[nt]["preempted_ns"] += t - t0
        occ[cpu] = (nt, nc, t)
    for cpu in list(occ):
        charge(cpu, last)
    for tid, (c0, t0) in pre.items():
        res[tid]["preempted_ns"] += last - t0
    json.dump({str(k): v for k, v in res.items()}, sys.stdout)

main(sys.argv[1])

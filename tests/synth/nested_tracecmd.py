#!/usr/bin/env python3
"""The nested scenario's L2 exits and per-layer steal from trace-cmd's reading of the files
(Debian's trace-cmd decodes them, not vmscope): `trace-cmd report --raw-ts` of host.dat (L0)
and l1.dat (L1), L1's raw TSC taken to L0's by the TIME_SHIFT that `trace-cmd dump --options`
prints (L0 = (L1 + offset) / scaling, one sample, fraction 0) and L0's TSC2NSEC (mult, shift).
 - an L2 exit of L2 vCPU v: L1's kvm_exit of its thread (4001+v) to its next kvm_entry, the
   reason from the exit; L0's part: L0's exits of L1 vCPU v's thread (3001+v) inside it; an
   exit with no entry after it is unfinished (counted, no time)
 - steal at a layer: from a switch-out of that layer's vCPU thread with prev_state R to its
   switch-in, charged to the thread switched in (tid, comm)
Prints JSON {vcpu: {"exits": {reason: [count, total, unfinished, below]}, "steal": [[layer,
tid, comm, ns]]}}.
usage: nested_tracecmd.py HOST.dat L1.dat VCPUS"""
import json
import re
import subprocess
import sys

EV = re.compile(r"\[\d+\]\s*(\d+): (\w+):\s+(.*)$")
SW = re.compile(r"(.*?):(-?\d+) \[\d+\] (\S+) ==> (.*?):(-?\d+) \[\d+\]")
REASON = re.compile(r"reason (\S+)")

def events(path):
    out = subprocess.run(["trace-cmd", "report", "--raw-ts", "-i", path], check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    for line in out.splitlines():
        m = EV.search(line)
        if m:
            yield int(m.group(1)), m.group(2), m.group(3), line

def options(path):
    return subprocess.run(["trace-cmd", "dump", "--options", "-i", path], check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout

def tsc2nsec(path):
    m = re.search(r"(\d+) (\d+) (\d+) \[multiplier, shift, offset\]", options(path))
    return int(m.group(1)), int(m.group(2))

def time_shift(path):
    m = re.search(r"(-?\d+) (\d+) (\d+) (\d+)\[offset \* scaling >> fraction @ time\]",
                  options(path))
    return int(m.group(1)), int(m.group(2)), int(m.group(3))

def one(host, l1, ev0, ev1, v):
    mult, shift = tsc2nsec(host)
    off, scaling, frac = time_shift(l1)
    assert frac == 0
    ns0 = lambda r: (r * mult) >> shift
    ns1 = lambda r: ns0((r + off) // scaling)
    l0_exits, steal = [], {}
    for layer, evs, conv, vtid in (("host", ev0, ns0, 3001 + v), ("l1", ev1, ns1, 4001 + v)):
        out_at, exit_at, l1_exits = None, None, []
        for raw, name, rest, line in evs:
            t = conv(raw)
            if name == "sched_switch":
                m = SW.search(rest)
                prev, st, nxt, ncomm = int(m.group(2)), m.group(3), int(m.group(5)), m.group(4)
                if prev == vtid and st.startswith("R"):
                    out_at, thief = t, (nxt, ncomm)
                if nxt == vtid and out_at is not None:
                    k = (layer,) + thief
                    steal[k] = steal.get(k, 0) + t - out_at
                    out_at = None
            elif name in ("kvm_exit", "kvm_entry") and ("-%d " % vtid) in line:
                if name == "kvm_exit":
                    exit_at = (t, REASON.search(rest).group(1))
                elif exit_at:
                    (l0_exits if layer == "host" else l1_exits).append(
                        (exit_at[0], t, exit_at[1]))
                    exit_at = None
        if layer == "l1":
            res = {}
            for s, e, r in l1_exits:
                c = res.setdefault(r, [0, 0, 0, 0])
                c[0] += 1
                c[1] += e - s
                c[3] += sum(min(e, b) - max(s, a) for a, b, _ in l0_exits if a < e and b > s)
            if exit_at:
                c = res.setdefault(exit_at[1], [0, 0, 0, 0])
                c[0] += 1
                c[2] += 1
    return {"exits": res, "steal": sorted([k[0], k[1], k[2], ns] for k, ns in steal.items())}

host, l1, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ev0, ev1 = list(events(host)), list(events(l1))
print(json.dumps({v: one(host, l1, ev0, ev1, v) for v in range(n)}))

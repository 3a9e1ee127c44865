#!/usr/bin/env python3
"""The thread ids a trace records and the process of each where it says one, as JSON for
check_perfetto_rules.py --ids, read from another tool's text of the trace (not vmscope's export).

usage: trace_ids.py tracecmd < `trace-cmd report -i FILE`
       trace_ids.py dump     < `vmscope dump FILE`   (one trace: lines "TIME cpu=C tid=T EVENT: ...")
       trace_ids.py xml FILE                         (Trace Compass XML: prev_tid/next_tid/tid fields)
       trace_ids.py none                             (a trace with no thread ids: xentrace)

tids: every thread named by an event (the thread that recorded it) or in a field that names a
thread (prev_pid, next_pid, pid, child_pid, old_pid, tid, ...). pids: a thread that exec'd
(sched_process_exec pid=P) is process P; a thread created (sched_process_fork pid=P
child_pid=C) by one whose process is known is of that process -- the synthesized VMM (vmscope
synth: lib/synth/synth.c's QEMU_PID) exec's, then creates its threads so.
"""
import json
import re
import sys

ID_FIELD = re.compile(r"\b(?:prev_pid|next_pid|pid|child_pid|old_pid|prev_tid|next_tid|tid)=(-?\d+)")


def from_lines(lines, head):
    tids, execd, parent = set(), set(), {}
    for line in lines:
        m = head.match(line)
        if not m:
            continue
        tids.add(int(m["tid"]))
        rest = line[m.end():]
        tids.update(int(x) for x in ID_FIELD.findall(rest))
        if "sched_process_exec:" in rest:
            execd.add(int(re.search(r"\bpid=(\d+)", rest)[1]))
        elif "sched_process_fork:" in rest:
            p = int(re.search(r"\bpid=(\d+)", rest)[1])
            parent[int(re.search(r"\bchild_pid=(\d+)", rest)[1])] = p
    pids = {t: t for t in execd}
    changed = True
    while changed:   # (a thread made by a thread whose process is known)
        changed = False
        for c, p in parent.items():
            if c not in pids and p in pids:
                pids[c] = pids[p]
                changed = True
    return {"tids": sorted(t for t in tids if t >= 0), "pids": {str(k): v for k, v in pids.items()}}


def main():
    mode = sys.argv[1]
    if mode == "tracecmd":
        out = from_lines(sys.stdin, re.compile(r"^\s*.*?-(?P<tid>\d+)\s+\[\d+\]\s+[\d.]+:"))
    elif mode == "dump":
        out = from_lines(sys.stdin, re.compile(r"^\S+ cpu=\d+ tid=(?P<tid>-?\d+) "))
    elif mode == "xml":
        text = open(sys.argv[2]).read()
        ids = re.findall(r'name="(?:prev_tid|next_tid|tid)" value="(-?\d+)"', text)
        out = {"tids": sorted({int(x) for x in ids if int(x) >= 0}), "pids": {}}
    elif mode == "none":
        out = {"tids": None}
    else:
        sys.exit("trace_ids.py: mode %r" % mode)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()

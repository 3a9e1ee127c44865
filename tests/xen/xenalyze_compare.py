#!/usr/bin/env python3
"""vmscope's Xen model against xenalyze --summary on the same xentrace file (TAP).

For every domain and vCPU that xenalyze lists: each runstate (running, runnable and its
wake/preempt split, blocked, offline, lost) and each HVM exit reason must have the same count,
the same mean in cycles (xenalyze prints cycles // count) and the same time in seconds at the
same --cpu-hz (xenalyze prints cycles / hz with two decimals) as `vmscope report --json`.
The expected values are xenalyze's own output, run here; the exit names xenalyze prints are
mapped to VMX codes with the table of xenalyze.c (EXIT_REASON_*), independent of vmscope's.

usage: xenalyze_compare.py VMSCOPE TRACE HZ   (a TAP skip, 1..0 # SKIP, when xenalyze or the trace is missing)
       xenalyze_compare.py VMSCOPE --hand-made DIR HZ   (the files of xt_handmade.py, made in DIR)
       xenalyze_compare.py VMSCOPE --copies N TRACE OUT HZ   (OUT: N copies of TRACE laid end to
                           end by bench/xen_big.py, new CPUs and domains for each)
"""
import json, re, shutil, subprocess, sys

# xenalyze.c (Xen 4.17): hvm_vmx_exit_reason_name[] and the EXIT_REASON_* codes
VMX = {"EXCEPTION_NMI": 0, "EXTERNAL_INTERRUPT": 1, "TRIPLE_FAULT": 2, "INIT": 3, "SIPI": 4,
       "IO_SMI": 5, "OTHER_SMI": 6, "PENDING_INTERRUPT": 7, "PENDING_VIRT_NMI": 8,
       "TASK_SWITCH": 9, "CPUID": 10, "GETSEC": 11, "HLT": 12, "INVD": 13, "INVLPG": 14,
       "RDPMC": 15, "RDTSC": 16, "RSM": 17, "VMCALL": 18, "VMCLEAR": 19, "VMLAUNCH": 20,
       "VMPTRLD": 21, "VMPTRST": 22, "VMREAD": 23, "VMRESUME": 24, "VMWRITE": 25, "VMOFF": 26,
       "VMON": 27, "CR_ACCESS": 28, "DR_ACCESS": 29, "IO_INSTRUCTION": 30, "MSR_READ": 31,
       "MSR_WRITE": 32, "INVALID_GUEST_STATE": 33, "MSR_LOADING": 34, "MWAIT_INSTRUCTION": 36,
       "MONITOR_TRAP_FLAG": 37, "MONITOR_INSTRUCTION": 39, "PAUSE_INSTRUCTION": 40,
       "MACHINE_CHECK": 41, "TPR_BELOW_THRESHOLD": 43, "APIC_ACCESS": 44, "EPT_VIOLATION": 48,
       "EPT_MISCONFIG": 49, "INVEPT": 50, "RDTSCP": 51, "VMX_PREEMPTION_TIMER_EXPIRED": 52,
       "INVVPID": 53, "WBINVD": 54, "XSETBV": 55}

n = 0
failed = 0


def ok(cond, what, detail=""):
    global n, failed
    n += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (n, what))
    if not cond:
        failed += 1
        if detail:
            print("# " + detail)


def parse_xenalyze(text):
    """{(dom, vcpu): {"rs": {name: (count, secs, avg)}, "exits": {code: (count, secs, avg)}}}"""
    out = {}
    dom = cur = None
    section = None
    for line in text.splitlines():
        m = re.match(r"\|-- Domain (\d+) --\|", line)
        if m:
            dom, cur, section = int(m.group(1)), None, None
            continue
        m = re.match(r"-- v(\d+) --", line)
        if m and dom is not None:
            cur = out.setdefault((dom, int(m.group(1))), {"rs": {}, "exits": {}})
            section = None
            continue
        if cur is None:
            continue
        if line.startswith(" Runstates:"):
            section = "rs"
            continue
        if line.startswith("Exit reasons:"):
            section = "exits"
            continue
        if re.match(r"^ cpu affinity|^Guest interrupt|^IO address|^Emulate", line):
            section = None
            continue
        if section == "rs":
            m = re.match(r"^\s+(\w+):\s+(\d+)\s+([\d.]+)s\s+(\d+)", line)
            if m:
                cur["rs"][m.group(1)] = (int(m.group(2)), m.group(3), int(m.group(4)))
        elif section == "exits":
            # " NAME   count  secs s  pct%  avg cyc {..}" (sub-rows are indented deeper)
            m = re.match(r"^ (\S+)\s+(\d+)\s+([\d.]+)s\s+[\d.]+%\s+(\d+) cyc", line)
            if m:
                name = m.group(1)
                code = int(name) if name.isdigit() else VMX.get(name)
                if code is not None:
                    cur["exits"][code] = (int(m.group(2)), m.group(3), int(m.group(4)))
    return out


def main():
    import os
    if len(sys.argv) not in (4, 5, 7):
        print(__doc__)
        return 2
    vms, hz = sys.argv[1], sys.argv[-1]
    xa = shutil.which("xenalyze")
    if not xa:
        # a TAP skip plan with exit 0: Meson's TAP protocol counts exit 77 as an error
        print("1..0 # SKIP xenalyze not installed (Debian package xen-utils-common)")
        return 0
    if sys.argv[2] == "--hand-made":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import xt_handmade
        d = sys.argv[3]
        os.makedirs(d, exist_ok=True)
        traces = [f(d) for f in (xt_handmade.scenario, xt_handmade.notsc, xt_handmade.preempt,
                                 xt_handmade.migrate, xt_handmade.lost,
                                 xt_handmade.lost_tie, xt_handmade.cpu_ends_early)]
    elif sys.argv[2] == "--copies" and len(sys.argv) == 7:
        src, out = sys.argv[4], sys.argv[5]
        if not os.path.exists(src):
            print("1..0 # SKIP %s missing" % src)
            return 0
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        big = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                           "xen_big.py")
        subprocess.run([sys.executable, big, src, out, sys.argv[3]], check=True)
        traces = [out]
    else:
        traces = [sys.argv[2]]
        if not os.path.exists(traces[0]):
            print("1..0 # SKIP %s missing" % traces[0])
            return 0
    for trace in traces:
        print("# %s" % trace)
        compare(vms, xa, trace, hz)
    print("1..%d" % n)
    return 1 if failed else 0


def compare(vms, xa, trace, hz):
    r = subprocess.run([xa, "--summary", "--cpu-hz=" + hz, trace], capture_output=True, text=True)
    ok(r.returncode == 0, "xenalyze ran on %s" % trace, "exit %d" % r.returncode)
    if r.returncode != 0:
        return
    want = parse_xenalyze(r.stdout)
    v = subprocess.run([vms, "report", "--json", "--cpu-hz", hz, trace], capture_output=True,
                       text=True)
    ok(v.returncode == 0, "vmscope report --json ran", v.stderr.strip())
    if v.returncode != 0:
        return
    rep = json.loads(v.stdout)
    xen = [m["xen"] for m in rep["machines"] if "xen" in m]
    ok(len(xen) == 1, "one xentrace host with a xen section")
    if not xen:
        return
    xen = xen[0]
    hz_i = xen["cpu_hz"]
    ok(abs(hz_i - float(hz.rstrip("GMK")) * {"G": 1e9, "M": 1e6, "K": 1e3}.get(hz[-1], 1)) < 1,
       "the frequency used is the one given (%d Hz)" % hz_i)
    got = {(x["domain"], x["vcpu"]): x for x in xen["vcpus"]}
    ok(set(want) == set(got), "the same domains and vCPUs (%d)" % len(want),
       "xenalyze %s, vmscope %s" % (sorted(want), sorted(got)))
    nrs = nex = 0
    for key in sorted(want):
        if key not in got:
            continue
        g, w = got[key], want[key]
        name = "d%dv%d" % key
        rows = dict(g["runstates"])
        rows.update({k: c for k, c in g["runnable"].items()})
        shown = {k for k, c in rows.items() if c["count"]}
        ok(shown == set(w["rs"]), name + " lists the same runstates",
           "xenalyze %s, vmscope %s" % (sorted(w["rs"]), sorted(shown)))
        for rs, (cnt, secs, avg) in w["rs"].items():
            c = rows.get(rs, {"count": 0, "cycles": 0})
            mean = c["cycles"] // c["count"] if c["count"] else 0
            s = "%.2f" % (c["cycles"] / hz_i)
            ok(c["count"] == cnt and mean == avg and s == secs,
               "%s %s: count %d, mean %d cycles, %ss" % (name, rs, cnt, avg, secs),
               "vmscope: count %d, mean %d, %ss" % (c["count"], mean, s))
            nrs += 1
        gx = {e["reason"]: e for e in g["exits"] if e["count"]}
        ok(set(gx) == set(w["exits"]), name + " has the same exit reasons",
           "xenalyze %s, vmscope %s" % (sorted(w["exits"]), sorted(gx)))
        for code, (cnt, secs, avg) in w["exits"].items():
            e = gx.get(code, {"count": 0, "timed": 0, "cycles": 0})
            mean = e["cycles"] // e["timed"] if e["timed"] else 0
            s = "%.2f" % (e["cycles"] / hz_i)
            ok(e["count"] == cnt and mean == avg and s == secs,
               "%s exit %d: count %d, mean %d cycles, %ss" % (name, code, cnt, avg, secs),
               "vmscope: count %d, mean %d, %ss" % (e["count"], mean, s))
            nex += 1
    nx = sum(len(w["exits"]) for w in want.values())
    ok(nrs > 0 and nex == nx, "compared %d runstate rows and %d exit rows" % (nrs, nex))
    # the common exit table (`vmscope exits`, kvm_exit -> kvm_entry pairing as for KVM hosts)
    # counts the same exits when nothing was lost (with lost records it counts every VMEXIT,
    # xenalyze drops the exits a loss interrupts)
    if xen["lost_records"]:
        return
    e = subprocess.run([vms, "exits", "--json", "--cpu-hz", hz, trace], capture_output=True,
                       text=True)
    ok(e.returncode == 0, "vmscope exits --json ran", e.stderr.strip())
    if e.returncode == 0:
        # (count includes the exits still open when the trace ends; xenalyze leaves those out)
        common = {(int(r["machine"][1:]), r["vcpu"], r["reason"]): r["count"] - r["unfinished"]
                  for r in json.loads(e.stdout)["rows"] if r["machine"].startswith("d")}
        xa_counts = {(d, v, code): c[0] for (d, v), w in want.items()
                     for code, c in w["exits"].items()}
        ok(common == xa_counts, "vmscope exits: %d (domain, vCPU, reason) counts as xenalyze's"
           % len(xa_counts), "differ: %s" % sorted(set(common.items()) ^ set(xa_counts.items())))


sys.exit(main())

#!/usr/bin/env python3
"""`vmscope dump` of a xentrace file names its records and fields as xenalyze does (TAP).

The reference is xenalyze itself (`xenalyze --dump-all`, Debian's xen-utils-common), run
here on the same file: for each record kind xenalyze names, the number of records and the
multiset of their field values must be the same in vmscope's dump, read from xenalyze's text
(its own formats: "csched2:burn_credits d0v2, credit = 6080654, delta = 4301869") and from
vmscope's ("csched2:burn_credits vcpu=d0v2 credit=6080654 budget=... delta=4301869"). Where
the two name differently, on purpose: xenalyze prints four records as "sched_switch" (the
switch itself, and "prev", "next", "continue": vmscope's switch_infprev, switch_infnext,
switch_infcont, the names of xentrace_format's formats file), an I/O port read as
"io_assist" or "io read" (io_read) and a write as "io write" (io_write); vmexit's reason is
xenalyze's name, vmscope's the VMX code (mapped with xenalyze.c's table). Records xenalyze does
not name ("Unknown hvm event: 84011", and the buffer wraps) carry the names of the formats
file in vmscope's dump, and no record is left as a bare hex id.

usage: xen_dump_names.py VMSCOPE TRACE   (1..0 # SKIP without the trace or xenalyze)
"""
import collections, os, re, shutil, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from tap import Tap  # noqa: E402

tap = Tap()
ok = tap.ok

# xenalyze.c (Xen 4.17): the VMX exit reasons it names in this trace
VMX = {"EXCEPTION_NMI": 0, "EXTERNAL_INTERRUPT": 1, "PENDING_INTERRUPT": 7, "CPUID": 10,
       "HLT": 12, "VMCALL": 18, "IO_INSTRUCTION": 30, "APIC_ACCESS": 44, "EPT_VIOLATION": 48}

XA_LINE = re.compile(r"^[\]! ]\s*(?:\d+\.\d+\s+)?[-x|. ]*\s(d[\d?]+v[\d?]+) (\S+) ?(.*)$")


def xa_fields(name, rest):
    """(our name, the field values) of a xenalyze line, or None when not compared"""
    m = lambda rx: re.match(rx, rest)   # noqa: E731
    if name in ("vcpu_wake", "vcpu_block", "vcpu_sleep"):
        return name, (rest.strip(),)
    if name == "runstate_change":
        return name, tuple(rest.split())
    if name == "runstate_continue":
        return name, (rest.split()[0],)
    if name == "sched_switch":
        r = m(r"prev (\S+) next (\S+)$")
        if r:
            return "sched_switch", r.groups()
        r = m(r"prev (\S+), run for ([\d.]+)us$")
        if r:
            return "switch_infprev", (r.group(1), r.group(2))
        r = m(r"next (\S+), was runnable for ([\d.]+)us(?:, next slice ([\d.]+)us)?$")
        if r:
            return "switch_infnext", (r.group(1), r.group(2), r.group(3))
        r = m(r"continue (\S+), run for ([\d.]+)us, next slice ([\d.]+)us$")
        if r:
            return "switch_infcont", r.groups()
        return name, ("?", rest)
    if name == "csched2:burn_credits":
        r = m(r"(\S+), credit = (-?\d+), delta = (-?\d+)$")
        return name, r.groups() if r else ("?", rest)
    if name == "csched2:runq_candidate":
        r = m(r"(\S+), credit = (-?\d+), (?:no cpu was tickled|cpu (\d+) was tickled)$")
        return name, (r.group(1), r.group(2), r.group(3) or "-1") if r else ("?", rest)
    if name == "csched2:schedule":
        r = m(r"cpu (\d+), rq# (\d+), (.*)$")
        if not r:
            return name, ("?", rest)
        flags = [t.strip() for t in r.group(3).split(",")]
        return name, (r.group(1), r.group(2), "idle" in flags, "SMT idle" in flags,
                      "tickled" in flags)
    if name in ("csched2:reset_credits", "csched2:runq_tickle_new", "csched2:tickle_check"):
        return name, tuple(re.findall(r"-?\d+|d\d+v\d+", rest))
    if name == "csched2:runq_insert":
        r = m(r"(\S+), position (\d+)$")
        return name, r.groups() if r else ("?", rest)
    if name == "csched2:runq_tickle":
        return name, (rest.split()[-1],)
    if name == "csched2:runq_cand_check":
        return name, (rest.strip(),)
    if name == "csched2:update_rq_load":
        r = m(r"rq# (\d+), load = (\d+), avgload = [\d.]+% \((\d+)\), b_avgload = [\d.]+% \((\d+)\)$")
        return name, r.groups() if r else ("?", rest)
    if name == "csched2:update_vcpu_load":
        r = m(r"(\S+), vcpu_load = [\d.]+% \((\d+)\)$")
        return name, r.groups() if r else ("?", rest)
    if name == "csched2:ratelimit":
        r = m(r"(\S+) run only ([\d.]+)us$")
        return name, r.groups() if r else ("?", rest)
    if name == "vmexit":
        r = m(r"exit_reason (\S+) eip ([0-9a-f]+)$")
        return name, (str(VMX.get(r.group(1), r.group(1))), int(r.group(2), 16)) if r else ("?", rest)
    if name == "intr":
        r = m(r"vec (?:\S*\()?([0-9a-f]+)\)?$")
        return name, (int(r.group(1), 16),) if r else ("?", rest)
    if name == "intr_window":
        r = m(r"vec (\d+) src (\d+)\(\S+\) intr (\S+)$")
        return name, (r.group(1), r.group(2), -1 if r.group(3) == "#" else int(r.group(3), 16)) \
            if r else ("?", rest)
    if name == "inj_virq":
        r = m(r"vec (\d+)\s+(real|fake)$")
        return name, (r.group(1), r.group(2) == "fake") if r else ("?", rest)
    if name == "vmcall":
        return name, (int(rest.split()[0], 16),)
    if name == "hlt":
        r = m(r"\[ (\d+) \]$")
        return name, r.groups() if r else ("?", rest)
    if name == "npf":
        r = m(r"gpa ([0-9a-f]+) q ([0-9a-f]+) mfn ([0-9a-f]+) t (\d+)$")
        return name, tuple(int(x, 16) for x in r.groups()) if r else ("?", rest)
    if name == "cpuid":
        return name, tuple(int(x, 16) for x in rest.strip("[] ").split())
    if name == "io_assist" or (name == "io" and rest.startswith("read")):
        r = m(r"\[ ([0-9a-f]+) ([0-9a-f]+) \]$") or m(r"read port ([0-9a-f]+) val ([0-9a-f]+)$")
        return "io_read", tuple(int(x, 16) for x in r.groups()) if r else ("?", rest)
    if name == "io":
        r = m(r"write port ([0-9a-f]+) val ([0-9a-f]+)$")
        return "io_write", tuple(int(x, 16) for x in r.groups()) if r else ("?", rest)
    if name in ("csched2:update_load", "vlapic", "vmentry"):
        return name, ()
    return name, ("?", rest)


def vms_fields(name, f, rest):
    """the same tuple from a vmscope dump line (f: its key=value fields)"""
    # xenalyze prints ns as us with "%u.%u" of (ns / 1000, ns % 1000): 54069 ns is "54.69"
    us = lambda ns: "%d.%d" % (int(ns) // 1000, int(ns) % 1000)   # noqa: E731
    if name in ("vcpu_wake", "vcpu_block", "vcpu_sleep", "runstate_continue",
                "csched2:runq_cand_check"):
        return (f["vcpu"],)
    if name == "runstate_change":
        return tuple(rest.split())
    if name == "sched_switch":
        return f["prev"], f["next"]
    if name == "switch_infprev":
        return f["prev"], us(f["runtime_ns"])
    if name == "switch_infnext":
        # xenalyze shows the slice with one decimal, and none when it is -1
        s = int(f["slice_ns"])
        return f["next"], us(f["runnable_ns"]), None if s < 0 else us(s)
    if name == "switch_infcont":
        return f["vcpu"], us(f["runtime_ns"]), us(f["slice_ns"])
    if name == "csched2:burn_credits":
        return f["vcpu"], f["credit"], f["delta"]
    if name == "csched2:runq_candidate":
        return f["vcpu"], f["credit"], f["tickled_cpu"]
    if name == "csched2:schedule":
        return f["cpu"], f["rq"], f["idle"] == "1", f["smt_idle"] == "1", f["tickled"] == "1"
    if name == "csched2:reset_credits":
        return f["vcpu"], f["credit_start"], f["credit_end"]
    if name == "csched2:runq_tickle_new":
        return f["vcpu"], f["processor"], f["credit"]
    if name == "csched2:tickle_check":
        return f["vcpu"], f["credit"], f["score"]
    if name == "csched2:runq_insert":
        return f["vcpu"], f["position"]
    if name == "csched2:runq_tickle":
        return (f["cpu"],)
    if name == "csched2:update_rq_load":
        return f["rq"], f["load"], f["avgload"], f["b_avgload"]
    if name == "csched2:update_vcpu_load":
        return f["vcpu"], f["vcpu_load"]
    if name == "csched2:ratelimit":
        return f["vcpu"], us(f["runtime_ns"])
    if name == "vmexit":
        return f["exit_reason"], int(f["rip"], 16)
    if name == "intr":
        return (int(f["vector"], 16),)
    if name == "intr_window":
        i = int(f["intr"])
        return f["vector"], f["source"], i
    if name == "inj_virq":
        return f["vector"], f["fake"] != "0"
    if name == "vmcall":
        return (int(f["func"], 16),)
    if name == "hlt":
        return (f["intpending"],)
    if name == "npf":
        return int(f["gpa"], 16), int(f["qual"], 16), int(f["mfn"], 16), int(f["p2mt"])
    if name == "cpuid":
        return tuple(int(f[k], 16) for k in ("leaf", "subleaf", "eax", "ebx", "ecx", "edx"))
    if name in ("io_read", "io_write"):
        return int(f["port"], 16), int(f["data"], 16) if "data" in f else None
    return ()


def main():
    vms, trace = sys.argv[1], sys.argv[2]
    if not os.path.exists(trace):
        print("1..0 # SKIP %s missing (the shared traces)" % trace)
        return 0
    if not shutil.which("xenalyze"):
        print("1..0 # SKIP xenalyze is not installed (Debian: xen-utils-common)")
        return 0
    xa = subprocess.run(["xenalyze", "--dump-all", trace], stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT).stdout.decode(errors="replace")
    want = collections.defaultdict(collections.Counter)
    for line in xa.splitlines():
        r = XA_LINE.match(line)
        if r:
            name, vals = xa_fields(r.group(2).rstrip(","), r.group(3))
            want[name][vals] += 1
    p = subprocess.run([vms, "dump", trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ok(p.returncode == 0, "vmscope dump exits 0", p.stderr.decode()[:300])
    got = collections.defaultdict(collections.Counter)
    bare = 0
    for line in p.stdout.decode(errors="replace").splitlines():
        parts = line.split(" ", 4)   # TIME cpu=C tid=T NAME REST
        if len(parts) < 4:
            continue
        name, rest = parts[3], parts[4] if len(parts) > 4 else ""
        if name.startswith("event=") or " event=0x" in line:
            bare += 1
        f = dict(kv.split("=", 1) for kv in rest.split() if "=" in kv)
        try:
            got[name][vms_fields(name, f, rest)] += 1
        except (KeyError, ValueError) as e:
            got[name][("bad", str(e), rest)] += 1
    ok(bare == 0, "no record is left as a bare hex id (every class and id of this trace is named)",
       "%d records" % bare)
    compared = 0
    for name in sorted(want):
        w, g = want[name], got.get(name, collections.Counter())
        same = w == g
        if name in ("io_read", "io_write") and not same:
            # a record that carries only the port: xenalyze shows a "val" anyway, a word
            # past the record (0xa0084011 here: the next record's header); vmscope shows none
            ports = lambda c: collections.Counter(  # noqa: E731
                [p for (p, _), k in c.items() for _ in range(k)])
            short = sum(k for (p, d), k in g.items() if d is None)
            whole = collections.Counter({pd: k for pd, k in g.items() if pd[1] is not None})
            same = ports(w) == ports(g) and sum((w - whole).values()) == short and \
                not (whole - w)
            if same:
                print("# %s: %d records carry no data word (xenalyze shows one past the record)"
                      % (name, short))
        detail = ""
        if not same:
            dw, dg = w - g, g - w
            detail = "xenalyze only: %s\nvmscope only: %s" % (list(dw.items())[:3],
                                                               list(dg.items())[:3])
        ok(same, "%-24s %6d records, names and fields as xenalyze's" % (name, sum(w.values())),
           detail)
        compared += sum(w.values())
    ok(compared >= 170000, "records compared with xenalyze's: %d" % compared)
    # the records xenalyze does not name: the formats file's names, fields named
    for name, field in (("vlapic_accept_pic_intr", "i8259_target="),
                        ("vpic_irq_positive_edge", "irq="), ("vpic_irq_negative_edge", "irq="),
                        ("wrap_buffer", "")):
        ok(sum(got[name].values()) > 0 and name not in want,
           "%s: named in vmscope's dump, not by xenalyze" % name)
    return tap.done()


sys.exit(main())

#!/usr/bin/env python3
"""One story per table: the Xen report's two exit tables say their rules, and their numbers
are explained (TAP).

A Xen guest's exits are timed by two rules: the common one (every hypervisor: an exit lasts
from its VMEXIT to its VMENTRY; an exit with no VMENTRY is counted, not timed) and xenalyze's
(the Xen model: an exit also ends when its vCPU becomes runnable; an exit with no end is not
counted). The expected values are computed here from the xentrace records themselves, by a
reader of this file's own (struct, the layout of xen/include/public/trace.h), independent of
vmscope's: per vCPU and reason, the exits that end, their cycles from VMEXIT to VMENTRY, the
cycles from the vCPU's first becoming runnable inside the exit to that VMENTRY, and the exits
with no VMENTRY. With --cpu-hz 1G a cycle is a nanosecond, so:
  common count = ended + no end,  common total_ns = VMEXIT->VMENTRY cycles,
  xenalyze count = ended,         xenalyze cycles = common cycles - runnable->VMENTRY cycles,
hence the common count = xenalyze's count + the exits with no known end, asserted on the
JSON and on the text's "so:" lines. The text must say each table's rule, and no KVM wording
(host threads, pids, tids) may appear in the Xen report.

usage: xen_report_rules.py VMSCOPE TRACE   (1..0 # SKIP when the trace is missing)
"""
import collections, json, os, re, struct, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from tap import Tap  # noqa: E402

tap = Tap()
ok = tap.ok


VMEXITS = (0x81002, 0x81102, 0x81003, 0x81103)   # VMX / SVM, 32- and 64-bit rIP
VMENTRY = 0x81001
RUNSTATE, RUNSTATE_CONTINUE = 0x21001, 0x21002   # change: | old << 8 | new << 4
RUNNING, RUNNABLE = 0, 1


def records(path):
    """(tsc, cpu, seq, event, extra words) of every record, in TSC order (lower CPU first)"""
    data = open(path, "rb").read()
    out, off, seq, last = [], 0, 0, {}
    while off + 12 <= len(data):
        h, cpu, size = struct.unpack_from("<III", data, off)   # TRC_TRACE_CPU_CHANGE
        off += 12
        end = off + size
        while off < end:
            h, = struct.unpack_from("<I", data, off)
            off += 4
            ev, nx = h & 0x0FFFFFFF, (h >> 28) & 7
            if h >> 31:
                last[cpu], = struct.unpack_from("<Q", data, off)
                off += 8
            ex = struct.unpack_from("<%dI" % nx, data, off)
            off += 4 * nx
            out.append((last.get(cpu, 0), cpu, seq, ev, ex))
            seq += 1
    out.sort(key=lambda r: (r[0], r[1], r[2]))
    return out


def exits(recs):
    """{((dom, vcpu), reason): [ended, cycles, runnable->VMENTRY cycles]}, Counter of no end"""
    cur, pend = {}, {}
    ended = collections.defaultdict(lambda: [0, 0, 0])
    open_ = collections.Counter()
    for tsc, cpu, _, ev, ex in recs:
        if (ev & ~0xFF0) == RUNSTATE or ev == RUNSTATE_CONTINUE:
            dv = (ex[0] >> 16, ex[0] & 0xFFFF)
            new = RUNNING if ev == RUNSTATE_CONTINUE else (ev >> 4) & 0xF
            if new == RUNNING:
                cur[cpu] = dv             # the vCPU whose VMEXIT/VMENTRY this CPU records
            elif cur.get(cpu) == dv:
                cur[cpu] = None
            if new == RUNNABLE and dv in pend and pend[dv][2] is None:
                pend[dv][2] = tsc
        elif ev in VMEXITS and cur.get(cpu):
            dv = cur[cpu]
            if dv in pend:
                open_[(dv, pend[dv][1])] += 1
            pend[dv] = [tsc, ex[0], None]
        elif ev == VMENTRY and cur.get(cpu) in pend:
            t0, reason, runnable = pend.pop(cur[cpu])
            e = ended[(cur[cpu], reason)]
            e[0] += 1
            e[1] += tsc - t0
            e[2] += tsc - runnable if runnable is not None else 0
    for dv, p in pend.items():
        open_[(dv, p[1])] += 1
    return ended, open_


def run(args):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        print("# %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr.decode()[:500]))
    return p.stdout.decode()


def to_ns(v, unit):
    return float(v) * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[unit]


def main():
    vms, trace = sys.argv[1], sys.argv[2]
    if not os.path.exists(trace):
        print("1..0 # SKIP %s missing (the shared traces)" % trace)
        return 0
    ended, open_ = exits(records(trace))
    js = json.loads(run([vms, "report", "--json", "--cpu-hz", "1G", trace]))
    host = [m for m in js["machines"] if "xen" in m][0]
    xen = {((v["domain"], v["vcpu"]), e["reason"]): e for v in host["xen"]["vcpus"]
           for e in v["exits"]}
    guests = [m for m in js["machines"] if m["name"].startswith("d") and m.get("host_link") ==
              "xentrace"]
    doms = {int(g["name"][1:]): g for g in guests}
    ok(14 in doms, "the report has domain 14 (HVM) as a guest")
    common = {((d, v["vcpu"]), e["reason"]): e for d, g in doms.items() for v in g["vcpus"]
              for e in v["exits"]}
    keys = set(ended) | set(open_)
    ok(set(common) == keys, "the common tables have the (vCPU, reason) rows the records have",
       "only vmscope: %s; only the records: %s" % (sorted(set(common) - keys),
                                                  sorted(keys - set(common))))
    bad = []
    for k in sorted(keys):
        c, x, (done, cyc, wait), u = common.get(k), xen.get(k), ended[k], open_[k]
        if not c or not x:
            bad.append("%s: row missing" % (k,))
            continue
        if (c["count"], c["unfinished"], c["total_ns"]) != (done + u, u, cyc):
            bad.append("%s common %s, records %s" % (k, (c["count"], c["unfinished"],
                                                         c["total_ns"]), (done + u, u, cyc)))
        if (x["count"], x["cycles"]) != (done, cyc - wait):
            bad.append("%s xenalyze %s, records %s" % (k, (x["count"], x["cycles"]),
                                                       (done, cyc - wait)))
        if c["count"] != x["count"] + c["unfinished"]:
            bad.append("%s: %d != %d + %d" % (k, c["count"], x["count"], c["unfinished"]))
    ok(not bad, "per vCPU and reason (%d rows): common count = xenalyze's + no known end, "
       "common ns = VMEXIT->VMENTRY, xenalyze's = that - runnable->VMENTRY" % len(keys),
       "\n".join(bad[:20]))

    text = run([vms, "report", "--cpu-hz", "1G", trace])
    ok("Xen HVM exits per vCPU, xenalyze's rule: from VMEXIT to VMENTRY, or to the vCPU "
       "becoming runnable;" in text and "an exit with no end is not counted" in text,
       "the Xen model's exit table says its rule (xenalyze's)")
    # each common exit table of a Xen guest: its "VM exits: N" line, then the rule and "so:"
    sec = text[text.index("\nd14 ("):]
    sec = sec[:sec.find("\n\n", 1)] if "\n\n" in sec[1:] else sec
    tables = re.findall(r"VM exits: (\d+),.*?\n(?:.*\n)*?\s+rule: each exit from VMEXIT to its "
                        r"VMENTRY \(vmscope's rule on every hypervisor\); xenalyze's table above\n"
                        r"\s+also ends an exit when its vCPU becomes runnable, and counts no exit "
                        r"without an end\n\s+so: (\d+) exits = (\d+) in xenalyze's table \+ (\d+) "
                        r"with no known end; ([\d.]+) (\w+) = ([\d.]+) (\w+) in xenalyze's \+ "
                        r"([\d.]+) (\w+) from becoming runnable to VMENTRY\n", sec)
    ok(len(tables) == sec.count("VM exits: ") == 5,
       "d14's 5 exit tables (4 vCPUs and all together) each state their rule and sum",
       "found %d rules for %d tables" % (len(tables), sec.count("VM exits: ")))
    # in order: all vCPUs together, then vCPU 0..3
    order = [None, 0, 1, 2, 3]
    bad = []
    for who, t in zip(order, tables):
        ks = [k for k in keys if k[0][0] == 14 and (who is None or k[0][1] == who)]
        want_n = sum(ended[k][0] + open_[k] for k in ks)
        want_x = sum(ended[k][0] for k in ks)
        want_u = sum(open_[k] for k in ks)
        want_t = sum(ended[k][1] for k in ks)
        want_w = sum(ended[k][2] for k in ks)
        got = tuple(int(v) for v in t[1:4])
        if int(t[0]) != want_n or got != (want_n, want_x, want_u):
            bad.append("%s: %s, want %s" % (who, (t[0],) + got, (want_n, want_x, want_u)))
        for (v, u), want in (((t[4], t[5]), want_t), ((t[6], t[7]), want_t - want_w),
                             ((t[8], t[9]), want_w)):
            if abs(to_ns(v, u) - want) > 0.005 * want + 1:
                bad.append("%s: %s %s, want %d ns" % (who, v, u, want))
    ok(not bad, "the 'so:' lines: exits = xenalyze's + no known end; time = xenalyze's + "
       "runnable->VMENTRY (from the records)", "\n".join(bad))

    kvm = ["pid not recorded", "host thread", "vCPU thread", "the CPU was taken by",
           "process of thread", "tid ", "as for KVM"]
    found = [w for w in kvm if w in text]
    ok(not found, "no KVM wording in the Xen report (%s)" % ", ".join(repr(w) for w in kvm),
       "found: %s" % found)
    ok("runs on xentrace as Xen domain 14 (linked by xentrace)" in text and
       "  vCPU 1  Xen vCPU d14v1  linked by xentrace" in text,
       "a domain and its vCPUs are named as Xen names them")
    ok("while it was preempted (" in text and "Xen's idle vCPU" in text,
       "what ran while a vCPU was preempted is said in Xen's words")
    # a guest trace linked to domain 14 by the user (--map): still a Xen domain, in Xen's words
    g = os.path.join(os.path.dirname(os.path.dirname(trace)), "kvm-hip24", "guest-Salamander4.dat")
    if os.path.exists(g):
        t2 = run([vms, "report", "--cpu-hz", "1G", "--guest", "web=" + g, "--map", "web:dom=14",
                  trace])
        web = t2[t2.index("\nweb ("):]
        cut = web.find("  guest threads, by time")   # the guest's own threads have tids
        web = web[:cut] if cut >= 0 else web
        found = [w for w in kvm if w in web]
        ok("runs on xentrace as Xen domain 14 (linked by user)" in web and not found and
           web.count("  rule: each exit from VMEXIT") == 5,
           "a guest trace mapped to domain 14 (--map web:dom=14): Xen's words, the 5 rules",
           "KVM wording: %s" % found)
    else:
        ok(True, "--map web:dom=14 # SKIP %s missing" % g)
    return tap.done()


sys.exit(main())

#!/usr/bin/env python3
"""The HTML report's page, read by a reader of its own (this file, written from the format
documented in lib/output/html_summary.h), against `vmscope vcpus --csv` on the same traces:
one row per vCPU; per vCPU, the time in each state from the page's finest level equals the
time from the CSV intervals (within the 1/255 quantization of each bucket and one bucket at
each end), and its number of slices equals the number of maximal runs of one state in the
CSV; the page is self-contained (no URL, no external resource) and within its size bound.
Inputs: the kvm-hip24 pair and OneQemuKvm (../shared), and a pair made by `vmscope synth`. Speaks TAP."""
import base64
import csv
import html.parser
import json
import os
import re
import subprocess
import sys

VMS = os.path.join(os.environ["VMS_BUILD_DIR"], "tools", "vmscope", "vmscope")
SHARED = os.environ.get("VMS_SHARED_DIR", "")
TMP = os.path.join(os.environ["VMS_BUILD_DIR"], "test-tmp", "html-page")
os.makedirs(TMP, exist_ok=True)
STATES = ["unknown", "idle", "running", "vmm", "preempted", "halted"]
n = 0
failed = 0


def ok(cond, name, diag=""):
    global n, failed
    n += 1
    print(("ok " if cond else "not ok ") + f"{n} - {name}")
    if not cond:
        failed += 1
        for line in str(diag).splitlines():
            print("# " + line)


def skip(name, why):
    global n
    n += 1
    print(f"ok {n} - {name} # SKIP {why}")


class Scripts(html.parser.HTMLParser):
    """The contents of the <script> elements by id, and every src/href attribute."""

    def __init__(self):
        super().__init__()
        self.by_id, self.cur, self.refs = {}, None, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.refs += [v for k, v in attrs if k in ("src", "href", "action", "data")]
        if tag == "script":
            self.cur = a.get("id", "")
            self.by_id[self.cur] = ""

    def handle_endtag(self, tag):
        if tag == "script":
            self.cur = None

    def handle_data(self, data):
        if self.cur is not None:
            self.by_id[self.cur] += data


def varint(b, p):
    v, sh = 0, 0
    while True:
        x = b[p]
        p += 1
        v |= (x & 127) << sh
        sh += 7
        if not x & 128:
            return v, p


def decode_row(b, off, length, levels):
    p, end = off, off + length
    lv = []
    for _ in range(levels):
        nr, p = varint(b, p)
        runs = []
        for _ in range(nr):
            rl, p = varint(b, p)
            st = b[p]
            p += 1
            c, p = varint(b, p)
            who, p = varint(b, p)
            runs.append((rl, st, c, who))
        lv.append(runs)
    nr, p = varint(b, p)
    shares = []
    for _ in range(nr):
        rl, p = varint(b, p)
        mask = b[p]
        p += 1
        q = [0] * 6
        for j in range(6):
            if mask & (1 << j):
                q[j] = b[p]
                p += 1
        shares.append((rl, q))
    assert p == end, (p, end)
    return lv, shares


def state_times(shares, w):
    """Per state: the time from the finest level's shares, and the tolerance of that sum:
    each bucket where the state is present is rounded to 1/255 of the width (a present state
    is at least 1/255), plus a bucket cut at each end of the row."""
    got, present = [0.0] * 6, [0] * 6
    for rl, q in shares:
        for j in range(6):
            if q[j]:
                got[j] += rl * q[j] * w / 255.0
                present[j] += rl
    return got, [present[j] * w / 255.0 + 2 * w for j in range(6)]


def check(name, traces, opts=(), compare=True):
    """The page of `vmscope html TRACES OPTS` against vcpus/pcpus/threads --csv with the same
    OPTS (the window and filter options every one of them takes). Returns the page's data; compare=False: the page and its bounds only."""
    page = os.path.join(TMP, name + ".html")
    r = subprocess.run([VMS, "html", *traces, *opts, "-o", page], capture_output=True, text=True)
    ok(r.returncode == 0, f"{name}: vmscope html exits 0", r.stderr)
    if r.returncode:
        return None
    traces = [*traces, *opts]
    text = open(page, encoding="utf-8").read()
    p = Scripts()
    p.feed(text)
    ok(p.refs == [] and not re.search(r"https?://|@import|url\(", text.split('id="vms-data"')[0]),
       f"{name}: self-contained (no src/href, no URL, no import)", p.refs[:5])
    data = json.loads(p.by_id["vms-data"])
    blob = base64.b64decode("".join(p.by_id["vms-rows"].split()))
    w, levels = data["bucket_ns"], data["levels"]
    t0 = int(data["t0_ns"])
    bound = len(data["rows"]) * data["row_bound_bytes"]
    ok(len(blob) * 4 / 3 <= bound, f"{name}: the rows' data within the bound",
       f"{len(blob)} > {bound}")
    size = os.path.getsize(page)
    ok(0 < size <= data["page_bound_bytes"], f"{name}: the page ({size} bytes) within its stated "
       f"bound ({data['page_bound_bytes']} bytes)")
    data["page_bytes"] = size
    if not compare:
        return data
    r = subprocess.run([VMS, "vcpus", "--csv", *traces], capture_output=True, text=True)
    rows = list(csv.DictReader(r.stdout.splitlines()))
    vrows = [r for r in data["rows"] if r["kind"] == "vcpu"]
    want_vcpus = sorted({(r["machine"], int(r["vcpu"])) for r in rows})
    ok(sorted((r["machine"], r["id"]) for r in vrows) == want_vcpus,
       f"{name}: one timeline row per vCPU ({len(want_vcpus)})",
       f"{[(r['machine'], r['id']) for r in vrows]} vs {want_vcpus}")
    bad = []
    for vr in vrows:
        lv, shares = decode_row(blob, vr["off"], vr["len"], levels)
        got, tols = state_times(shares, w)
        mine = [r for r in rows if r["machine"] == vr["machine"] and int(r["vcpu"]) == vr["id"]]
        want = [0] * 6
        runs, last, last_end = 0, None, None
        for r in mine:
            # the columns carry their unit (start_ns, or start_cycles for a cycle clock)
            s = int(next(v for k, v in r.items() if k.startswith("start")))
            e = int(next(v for k, v in r.items() if k.startswith("end")))
            st = STATES.index(r["state"])
            want[st] += e - s
            if e > s:
                if not (st == last and s == last_end):
                    runs += 1
                last, last_end = st, e
        span = sum(want)
        for j in range(6):
            if abs(got[j] - want[j]) > tols[j]:
                bad.append(f"{vr['label']} {STATES[j]}: page {got[j]:.0f} ns, csv {want[j]} ns, "
                           f"tolerance {tols[j]:.0f} (span {span})")
        slices = sum(rl * c for rl, st, c, who in lv[0])
        if slices != runs or vr["slices"] != runs:
            bad.append(f"{vr['label']}: {slices} slices on the page ({vr['slices']} said), "
                       f"{runs} runs of one state in the CSV")
    ok(not bad, f"{name}: per vCPU, time per state and slices as in vcpus --csv", "\n".join(bad))
    # the physical CPUs against `vmscope pcpus --csv`: per CPU, the time in guest mode
    # (page: guest thread + guest idle), the host's idle, and host threads (page: host
    # thread + vCPU thread in the hypervisor; the CSV does not say which threads are vCPUs')
    r = subprocess.run([VMS, "pcpus", "--csv", *traces], capture_output=True, text=True)
    prow = list(csv.DictReader(r.stdout.splitlines()))
    prows = [r for r in data["rows"] if r["kind"] == "pcpu"]
    want_cpus = sorted({(r["host"], int(r["cpu"])) for r in prow})
    ok(sorted((r["machine"], r["id"]) for r in prows) == want_cpus,
       f"{name}: one timeline row per physical CPU ({len(want_cpus)})",
       f"{[(r['machine'], r['id']) for r in prows]} vs {want_cpus}")
    bad = []
    for pr in prows:
        lv, shares = decode_row(blob, pr["off"], pr["len"], levels)
        got, tols = state_times(shares, w)
        want = {"guest": 0, "idle": 0, "host": 0, "unknown": 0}
        for r in prow:
            if r["host"] != pr["machine"] or int(r["cpu"]) != pr["id"]:
                continue
            s = int(next(v for k, v in r.items() if k.startswith("start")))
            e = int(next(v for k, v in r.items() if k.startswith("end")))
            if r["machine"] == "unknown" and r["vcpu"] == "" and r["tid"] == "":
                want["unknown"] += e - s   # who ran is not known: the page's unknown shade
            elif r["machine"] != r["host"]:
                want["guest"] += e - s
            elif int(r["tid"] or -1) == 0:
                want["idle"] += e - s
            elif int(r["tid"] or -1) > 0:
                want["host"] += e - s
        page = {"guest": got[4] + got[5], "idle": got[1], "host": got[2] + got[3],
                "unknown": got[0]}
        tol = {"guest": tols[4] + tols[5], "idle": tols[1], "host": tols[2] + tols[3],
               "unknown": tols[0]}
        for k in want:
            if abs(page[k] - want[k]) > tol[k]:
                bad.append(f"{pr['label']} {k}: page {page[k]:.0f} ns, csv {want[k]} ns, tolerance {tol[k]:.0f}")
    ok(not bad, f"{name}: per physical CPU, guest/idle/host/unknown time as in pcpus --csv",
       "\n".join(bad))
    # the guest threads against `vmscope threads --csv` (the overlays: when a thread its
    # guest thought running was stopped, and why): per thread row, its time in vmm,
    # preempted and halted
    r = subprocess.run([VMS, "threads", "--csv", *traces], capture_output=True, text=True)
    over = {}
    for o in csv.DictReader(r.stdout.splitlines()):
        s = int(next(v for k, v in o.items() if k.startswith("start")))
        e = int(next(v for k, v in o.items() if k.startswith("end")))
        key = (o["machine"], int(o["tid"]), STATES.index(o["reason"]))
        over[key] = over.get(key, 0) + e - s
    trows = [r for r in data["rows"] if r["kind"] == "thread"]
    bad = []
    for tr in trows:
        lv, shares = decode_row(blob, tr["off"], tr["len"], levels)
        got, tols = state_times(shares, w)
        for j in (3, 4, 5):
            want = over.get((tr["machine"], tr["id"], j), 0)
            if abs(got[j] - want) > tols[j]:
                bad.append(f"{tr['label']} {STATES[j]}: page {got[j]:.0f} ns, threads --csv {want} ns")
    ok(trows and not bad, f"{name}: per guest thread ({len(trows)}), vmm/preempted/halted time as "
       "in threads --csv", "\n".join(bad[:20]))
    print(f"# {name}: page {len(text)} bytes, {len(data['rows'])} rows, bucket {w} ns")
    return data


def note_of(text):
    m = re.search(r'<p class="note" id="exact-note" data-held="(\d)" data-records="(\d+)" '
                  r'data-max="(\d+)">(.*?)</p>', text, re.S)
    return (m.group(1) == "1", int(m.group(2)), int(m.group(3)), m.group(4)) if m else None


def budget_checks(name, traces):
    """Both sides of the static page's budget of exact intervals. Within it (the default on
    kvm-hip24), the page holds every piece and VM exit: per vCPU the pieces, merged where
    one state goes on, are the intervals of vcpus --csv, and the exits per reason are those
    of exits --csv (count, total ns); it says so and names `vmscope serve`. Past it
    (--exact-max below the trace's records) and with --exact-max 0: no exact data, the
    summary, and a note that says why and how to drill down."""
    page = os.path.join(TMP, name + "-exact.html")
    r = subprocess.run([VMS, "html", *traces, "-o", page], capture_output=True, text=True)
    text = open(page, encoding="utf-8").read()
    p = Scripts()
    p.feed(text)
    note = note_of(text)
    ok(note and note[0] and "vms-exact" in p.by_id and
       note[1] <= note[2] == 250000, f"{name}: within the budget (250000): the page holds the exact "
       f"intervals ({note and note[1]} records)", note)
    if not note or "vms-exact" not in p.by_id:
        return
    x = json.loads(p.by_id["vms-exact"])
    data = json.loads(p.by_id["vms-data"])
    files = " ".join(traces)
    ok(f"vmscope serve {files}" in note[3] and "fits the page" in note[3],
       f"{name}: the page says it holds them and how to drill down (vmscope serve FILES)", note[3])
    nrec = sum(len(rw) // 4 for rw in x["rows"]) + len(x["exits"])
    ok(nrec == x["records"] == note[1], f"{name}: the records held = the records said ({nrec})")
    want = {}
    for row in csv.DictReader(subprocess.run([VMS, "vcpus", "--csv", *traces], capture_output=True,
                                             text=True).stdout.splitlines()):
        want.setdefault((row["machine"], int(row["vcpu"])), []).append(
            (int(row["start_ns"]), int(row["end_ns"]), row["state"]))
    got = {}
    for k, rw in enumerate(data["rows"]):
        if rw["kind"] != "vcpu":
            continue
        merged = []
        for j in range(0, len(x["rows"][k]), 4):
            s, e, st = x["rows"][k][j], x["rows"][k][j + 1], STATES[x["rows"][k][j + 2]]
            if merged and merged[-1][2] == st and merged[-1][1] == s:
                merged[-1] = (merged[-1][0], e, st)
            else:
                merged.append((s, e, st))
        got[(rw["machine"], rw["id"])] = merged
    # vcpus --csv splits an interval where its status changes and the state does not
    for k in want:
        merged = []
        for s, e, st in want[k]:
            if merged and merged[-1][2] == st and merged[-1][1] == s:
                merged[-1] = (merged[-1][0], e, st)
            else:
                merged.append((s, e, st))
        want[k] = merged
    ok(want and got == want, f"{name}: the exact pieces of each vCPU = vcpus --csv ({sum(map(len, want.values()))} intervals)",
       str([(k, got.get(k, [])[:3], want[k][:3]) for k in want if got.get(k) != want[k]][:2]))
    vrow = {k: (rw["machine"], rw["id"]) for k, rw in enumerate(data["rows"]) if rw["kind"] == "vcpu"}
    names = {(i, rs): nm for i, rs, nm in x["reason_names"]}
    ex = {}
    for e in x["exits"]:
        key = (*vrow[e[0]], names[(e[3], e[4])])
        c, t = ex.get(key, (0, 0))
        ex[key] = (c + 1, t + (e[2] - e[1] if isinstance(e[2], int) else 0))
    want = {(row["machine"], int(row["vcpu"]), row["name"]): (int(row["count"]), int(row["total_ns"]))
            for row in csv.DictReader(subprocess.run([VMS, "exits", "--csv", *traces],
                                      capture_output=True, text=True).stdout.splitlines())}
    ok(want and ex == want, f"{name}: the exact exits = exits --csv per vCPU and reason (count, total ns; "
       f"{sum(c for c, _ in want.values())} exits)", f"{sorted(ex.items())[:3]}\n{sorted(want.items())[:3]}")
    size = os.path.getsize(page)
    ok(size <= data["page_bound_bytes"], f"{name}: the page with its exact intervals ({size} bytes) "
       f"within its bound ({data['page_bound_bytes']})")
    for opt, why in ((["--exact-max", str(note[1] - 1)], "more than the page's budget of"),
                     (["--exact-max", "0"], "summary only")):
        page2 = os.path.join(TMP, name + "-summary.html")
        r = subprocess.run([VMS, "html", *traces, *opt, "-o", page2], capture_output=True, text=True)
        t2 = open(page2, encoding="utf-8").read()
        n2 = note_of(t2)
        ok(r.returncode == 0 and n2 and not n2[0] and 'id="vms-exact"' not in t2 and
           'id="drill-section"' not in t2 and why in n2[3] and f"vmscope serve {files}" in n2[3] and
           (opt[1] == "0" or n2[1] == note[1]),
           f"{name} {' '.join(opt)}: past the budget, the summary only, and the page says why "
           f"and how to drill down", n2)
    r = subprocess.run([VMS, "html", *traces, "--exact-max", "x", "-o", page2], capture_output=True, text=True)
    ok(r.returncode == 2 and "--exact-max" in r.stderr, f"{name}: --exact-max x: a usage error (2)", r.stderr)


hip = os.path.join(SHARED, "traces", "kvm-hip24")
if os.path.exists(os.path.join(hip, "host.dat")):
    check("kvm-hip24", [os.path.join(hip, "host.dat"), os.path.join(hip, "guest-Salamander4.dat")])
    budget_checks("kvm-hip24", [os.path.join(hip, "host.dat"), os.path.join(hip, "guest-Salamander4.dat")])
else:
    skip("kvm-hip24 page", "../shared/traces/kvm-hip24 missing")
# Trace Compass's OneQemuKvm: the host's trace ends (355) before the guest's (375); pcpus says
# CPU 0 is unknown from there (tests/analysis/test_pcpu_view.c), and so must the page
oqk = os.path.join(SHARED, "traces", "tracecompass-vm", "OneQemuKvm")
if os.path.exists(os.path.join(oqk, "host.xml")):
    check("OneQemuKvm", [os.path.join(oqk, "host.xml"), os.path.join(oqk, "guest.xml")])
else:
    skip("OneQemuKvm page", "../shared/traces/tracecompass-vm missing")
small = None
syn = os.path.join(TMP, "synth")
r = subprocess.run([VMS, "synth", "--events", "100000", "--out", syn], capture_output=True, text=True)
ok(r.returncode == 0, "synth pair written", r.stderr)
if r.returncode == 0:
    pair = [os.path.join(syn, "host.dat"), os.path.join(syn, "guest.dat")]
    small = check("synth", pair)
    # the window and filter options: the page's rows are those of vcpus/pcpus/threads with
    # the same options (the pair spans 1.74 s of host time; vCPU 1 of demo-guest)
    win = check("synth-window", pair, ["--from", "+0.5s", "--to", "+1s", "--machine",
                                       "demo-guest", "--vcpu", "1"])
    if win:
        span = int(win["end_ns"]) - int(win["first_ns"])
        ok(span == 500000000, "synth-window: the page covers the window (500 ms)",
           f"{span} ns")
        ok([r["id"] for r in win["rows"] if r["kind"] == "vcpu"] == [1],
           "synth-window: --vcpu 1 draws vCPU 1 only",
           [(r["machine"], r["id"]) for r in win["rows"] if r["kind"] == "vcpu"])
    # the page's size is bounded whatever the trace's length: a pair 20 times longer with the
    # same machines gives a page under the same bound
    big = os.path.join(TMP, "synth-big")
    r = subprocess.run([VMS, "synth", "--events", "2000000", "--out", big], capture_output=True,
                       text=True)
    ok(r.returncode == 0, "a 2 M-event synth pair written", r.stderr)
    if r.returncode == 0 and small:
        bigd = check("synth-2M", [os.path.join(big, "host.dat"), os.path.join(big, "guest.dat")],
                     compare=False)
        if bigd:
            ok(bigd["page_bytes"] <= small["page_bound_bytes"] and
               bigd["page_bound_bytes"] <= 1.05 * small["page_bound_bytes"],
               "2 M events: the page within the bound of the 100 k-event page (the bound "
               "does not grow with the trace)",
               f"page {bigd['page_bytes']}, bounds {bigd['page_bound_bytes']} vs "
               f"{small['page_bound_bytes']}")
        for f in os.listdir(big):
            os.unlink(os.path.join(big, f))

def steal_rows(text):
    """the "Who took the CPU" tables: {caption: [(comm, layer or None, cells...)]}, parsed
    from the page's markup"""
    sec = text.split('<section id="steal">', 1)[1].split("</section>", 1)[0]
    out = {}
    for m in re.finditer(r"<caption>(.*?) vCPU (\d+): .*?</caption>(.*?)</table>", sec, re.S):
        rows = []
        for tr in re.findall(r"<tr><td>(.*?)</td>", m.group(3)):
            lm = re.match(r'(.*?) <span class="layer">\((.*?)\)</span>$', tr)
            rows.append((lm.group(1), lm.group(2)) if lm else (tr, None))
        out[(m.group(1), int(m.group(2)))] = rows
    return out


# nested (three layers, synth --scenario nested: thieves tid 77 + v at both L0 and L1): each
# steal row names the layer whose scheduler ran it, as report --json's "layer"; a one-layer
# page names none
nst = os.path.join(TMP, "nested")
r = subprocess.run([VMS, "synth", "--scenario", "nested", "--events", "20000", "--out", nst],
                   capture_output=True, text=True)
ok(r.returncode == 0, "nested synth written", r.stderr)
if r.returncode == 0:
    three = [os.path.join(nst, f) for f in ("host.dat", "l1.dat", "l2.dat")]
    page = os.path.join(TMP, "nested.html")
    r = subprocess.run([VMS, "html", *three, "-o", page], capture_output=True, text=True)
    rep = json.loads(subprocess.run([VMS, "report", "--json", *three], capture_output=True,
                                    text=True).stdout)
    exp = {}
    for mc in rep["machines"]:
        for v in mc["vcpus"]:
            if v["steal"]:
                exp[(mc["name"], v["vcpu"])] = [(e["comm"], e.get("layer")) for e in v["steal"]
                                                if e["kind"] != "thread" or
                                                sum(x["kind"] == "thread" for x in
                                                    v["steal"][:v["steal"].index(e)]) < 20]
    got = steal_rows(open(page, encoding="utf-8").read()) if r.returncode == 0 else {}
    layers = sorted({ly for rows in got.values() for _, ly in rows})
    ok(r.returncode == 0 and got == exp and len(layers) >= 2 and None not in layers,
       f"nested: every steal row names its layer = report --json's ({len(got)} vCPUs, "
       f"layers {layers})", (r.stderr, got, exp))
if small:
    got = steal_rows(open(os.path.join(TMP, "synth.html"), encoding="utf-8").read())
    ok(got and all(ly is None for rows in got.values() for _, ly in rows),
       "one layer: the steal rows name no layer", got)

# kvm-hip24's host recorded no sched_switch: who took the CPU is unknown (report's
# preempt_visible false), never "no vCPU was preempted"
hip_page = os.path.join(TMP, "kvm-hip24.html")
if os.path.exists(hip_page):
    sec = open(hip_page, encoding="utf-8").read().split('<section id="steal">', 1)[1].split("</section>", 1)[0]
    rep = json.loads(subprocess.run([VMS, "report", "--json", os.path.join(hip, "host.dat"),
                                     os.path.join(hip, "guest-Salamander4.dat")],
                                    capture_output=True, text=True).stdout)
    unseen = [(mc["name"], v["vcpu"]) for mc in rep["machines"] for v in (mc.get("vcpus") or [])
              if not v["preempt_visible"]]
    ok(unseen and 'id="steal-unknown"' in sec and "No vCPU was preempted" not in sec and
       all(f"{m} vCPU {c}" in sec for m, c in unseen),
       f"kvm-hip24: who took the CPU is unknown for its {len(unseen)} vCPUs (no sched_switch)", sec[:400])
else:
    skip("kvm-hip24 steal unknown", "no kvm-hip24 page")

print(f"1..{n}")
sys.exit(1 if failed else 0)

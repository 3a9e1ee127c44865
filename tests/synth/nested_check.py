#!/usr/bin/env python3
"""Compare vmscope's view of a `synth --scenario nested` stack with the truth the generator
wrote while planting it (--truth): every L2 vCPU interval (vcpus --csv: status, state, the
layer of its cause), its exits (exits --csv: count, total, min, max, unfinished, L0's part),
its time per state and who took its CPU at each layer (report --json). Prints one line per
difference and exits 1 when there is any.
usage: nested_check.py TRUTH.json VCPUS.csv EXITS.csv REPORT.json REPORT.txt"""
import csv
import json
import sys

truth_path, vcpus_path, exits_path, report_path, text_path = sys.argv[1:6]
truth = json.load(open(truth_path))
bad = []
for v in truth["l2_vcpus"]:
    m, n = v["machine"], v["vcpu"]
    want = [[str(s), str(e), str(st), name, layer or ""] for s, e, st, name, layer in v["states"]]
    got = [r[2:] for r in csv.reader(open(vcpus_path)) if r[:2] == [m, str(n)]]
    if got != want:
        for i, (w, g) in enumerate(zip(want, got)):
            if w != g:
                bad.append("vcpus row %d: want %s got %s" % (i, w, g))
                break
        if len(got) != len(want):
            bad.append("vcpus: %d rows, want %d" % (len(got), len(want)))
    rows = {int(r["reason"]): r for r in csv.DictReader(open(exits_path))
            if r["machine"] == m and r["vcpu"] == str(n)}
    if sorted(rows) != sorted(x["reason"] for x in v["exits"]):
        bad.append("exits: reasons %s, want %s" % (sorted(rows), [x["reason"] for x in v["exits"]]))
    for x in v["exits"]:
        r = rows.get(x["reason"])
        if not r:
            continue
        for col in ("count", "total_ns", "min_ns", "max_ns", "unfinished", "below_total_ns"):
            if int(r[col]) != x[col]:
                bad.append("exits %s %s: %s, want %s" % (x["name"], col, r[col], x[col]))
        for col in ("layer", "below_layer", "name"):
            if r[col] != x[col]:
                bad.append("exits %s %s: %s, want %s" % (x["name"], col, r[col], x[col]))
    rep = json.load(open(report_path))
    mach = [x for x in rep["machines"] if x["name"] == m][0]
    rv = [x for x in mach["vcpus"] if x["vcpu"] == n][0]
    for k, ns in v["ns"].items():
        if rv["ns"][k] != ns:
            bad.append("report ns.%s: %s, want %s" % (k, rv["ns"][k], ns))
    # the JSON names each thief's layer too ("layer", nested models only)
    got = sorted((s["tid"], s["comm"], s.get("layer"), s["ns"]) for s in rv["steal"] if s["ns"])
    want = sorted((s["tid"], s["comm"], s["layer"], s["ns"]) for s in v["steal"] if s["ns"])
    if got != want:
        bad.append("report steal: %s, want %s" % (got, want))
    # the layer of each thief: report's text names it after the share
    text = open(text_path).read().splitlines()
    for s in v["steal"]:
        if s["ns"] and not any(l.split()[:1] == [s["comm"]] and ("tid %d" % s["tid"]) in l
                               and l.rstrip().endswith("(%s)" % s["layer"]) for l in text):
            bad.append("report: no line for %s tid %d at %s" % (s["comm"], s["tid"], s["layer"]))
for b in bad[:20]:
    print(b)
sys.exit(1 if bad else 0)

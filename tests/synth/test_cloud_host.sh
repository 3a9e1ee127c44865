#!/usr/bin/env bash
# vmscope synth --scenario cloud-host (TAP): 64 guests x 8 vCPUs on 64 host CPUs, 4 traced.
# Every traced vCPU's states and steal by culprit from `report --json` (and its preempted
# time from `vcpus --csv`) must equal
#  (a) the planted truth (synth --truth: the generator's own bookkeeping, lib/synth), and
#  (b) an independent computation from the host trace: tests/synth/cloud_steal.py reads
#      `trace-cmd report -t` (Debian's trace-cmd decodes the file, not vmscope) and charges
#      each runnable-preempted vCPU thread's wait to the threads that ran on its CPU.
# Untraced guests' vCPU threads must be among the culprits, with QEMU's "CPU n/KVM" comm and
# their QEMU's pid; the host stress-ng must steal on the odd CPUs. The size limits are usage
# errors (exit 2).
set -u
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=${VMS_BUILD_DIR}/test-tmp/cloud-host
rm -rf "$TMP" && mkdir -p "$TMP"
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "# ${2//$'\n'/ }"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

d=$TMP/c64
if "$VMS" synth --scenario cloud-host --guests 64 --vcpus 8 --host-cpus 64 --traced 4 \
     --events 400k --out "$d" --truth "$d/truth.json" >/dev/null 2>"$TMP/synth.err"; then
  ok "synth cloud-host 64 x 8 on 64 CPUs, 4 traced"
else
  notok "synth cloud-host" "$(cat "$TMP/synth.err")"
fi
files=("$d/host.dat" "$d"/guest-{0,1,2,3}.dat)
[ "$(ls "$d" | grep -c '^guest-.*\.dat$')" = 4 ] && ok "one guest file per traced guest" \
  || notok "guest files" "$(ls "$d")"
"$VMS" report --json "${files[@]}" > "$d/report.json" 2>"$d/report.err" \
  && ok "report --json" || notok "report --json" "$(cat "$d/report.err")"
"$VMS" vcpus --csv "${files[@]}" > "$d/vcpus.csv" 2>/dev/null \
  && ok "vcpus --csv" || notok "vcpus --csv"

# (a) the planted truth
if out=$(python3 - "$d" <<'PY' 2>&1
import json, sys
d = sys.argv[1]
T = json.load(open(d + "/truth.json"))
R = json.load(open(d + "/report.json"))
M = {m["name"]: m for m in R["machines"]}
assert T["cloud"] == {"guests": 64, "vcpus": 8, "host_cpus": 64, "traced": 4}, T["cloud"]
assert len(T["guests"]) == 4 and len(T["untraced"]) == 60
checked = 0
for g in T["guests"]:
    m = M[g["name"]]
    assert m["traced"] and m["host_link"] == "guest-option", (g["name"], m["host_link"])
    rv = {v["vcpu"]: v for v in m["vcpus"]}
    assert len(rv) == 8
    for v in g["vcpus"]:
        x = rv[v["vcpu"]]
        assert x["host_tid"] == v["host_tid"], (g["name"], v["vcpu"])
        assert x["ns"] == v["ns"], (g["name"], v["vcpu"], x["ns"], v["ns"])
        ts = {(s["tid"], s["comm"]): s["ns"] for s in v["steal"]}
        rs = {(s["tid"], s["comm"]): s["ns"] for s in x["steal"] if s["kind"] == "thread"}
        assert ts == rs, (g["name"], v["vcpu"], sorted(ts.items()), sorted(rs.items()))
        assert all(s["kind"] == "thread" for s in x["steal"]), x["steal"]
        assert v["ns"]["preempted"] > 0 and sum(ts.values()) == v["ns"]["preempted"]
        checked += 1
print(checked)
PY
); then ok "report equals the truth: states and steal per culprit of all $out traced vCPUs"
else notok "report vs truth" "$out"; fi

# (b) independent, from the host trace through trace-cmd
if ! command -v trace-cmd >/dev/null; then
  skip "steal from trace-cmd report" "trace-cmd missing"
elif ! python3 "$HERE/cloud_steal.py" "$d/host.dat" > "$d/indep.json" 2>"$d/indep.err"; then
  notok "cloud_steal.py" "$(cat "$d/indep.err")"
elif out=$(python3 - "$d" <<'PY' 2>&1
import csv, json, sys
d = sys.argv[1]
I = json.load(open(d + "/indep.json"))
R = json.load(open(d + "/report.json"))
T = json.load(open(d + "/truth.json"))
traced = {g["name"] for g in T["guests"]}
untraced_pids = {m["host_pid"] for m in R["machines"] if m["name"].startswith("pid-")}
assert len(untraced_pids) == 60, len(untraced_pids)
pre_csv = {}
for row in csv.DictReader(open(d + "/vcpus.csv")):
    if row["machine"] in traced and row["state"] == "preempted":
        k = (row["machine"], int(row["vcpu"]))
        pre_csv[k] = pre_csv.get(k, 0) + int(row["end_ns"]) - int(row["start_ns"])
untraced_culprit = stress = checked = 0
for m in R["machines"]:
    if m["name"] not in traced:
        continue
    for v in m["vcpus"]:
        i = I[str(v["host_tid"])]
        assert v["ns"]["preempted"] == i["preempted_ns"] == pre_csv[(m["name"], v["vcpu"])], \
            (m["name"], v["vcpu"], v["ns"]["preempted"], i["preempted_ns"])
        rs = {"%d %s" % (s["tid"], s["comm"]): s["ns"] for s in v["steal"]}
        assert rs == i["steal"], (m["name"], v["vcpu"], rs, i["steal"])
        for s in v["steal"]:
            if s["comm"].startswith("CPU ") and s["comm"].endswith("/KVM"):
                assert s["pid"] in untraced_pids, s
                untraced_culprit += 1
            if s["comm"] == "stress-ng":
                stress += 1
        checked += 1
assert untraced_culprit >= checked, (untraced_culprit, checked)
assert stress > 0
print(checked, untraced_culprit, stress)
PY
); then
  set -- $out
  ok "report and vcpus --csv equal trace-cmd's sched_switch: preempted time and steal per culprit of $1 vCPUs ($2 culprits are untraced guests' CPU n/KVM threads, $3 host stress-ng)"
else notok "report vs trace-cmd" "$out"; fi

# deterministic from the seed
for r in a b; do
  "$VMS" synth --scenario cloud-host --guests 16 --vcpus 4 --traced 2 --events 20k --seed 5 \
    --out "$TMP/det-$r" --truth "$TMP/det-$r/truth.json" >/dev/null 2>&1
done
"$VMS" synth --scenario cloud-host --guests 16 --vcpus 4 --traced 2 --events 20k --seed 6 \
  --out "$TMP/det-c" >/dev/null 2>&1
if cmp -s "$TMP/det-a/host.dat" "$TMP/det-b/host.dat" && cmp -s "$TMP/det-a/guest-1.dat" "$TMP/det-b/guest-1.dat" \
   && ! cmp -s "$TMP/det-a/host.dat" "$TMP/det-c/host.dat" \
   && [ "$(sed 's/det-a/det-b/g' "$TMP/det-a/truth.json" | md5sum)" = "$(md5sum < "$TMP/det-b/truth.json")" ]; then
  ok "the same seed writes the same files and truth, another seed other files"
else notok "determinism"; fi

# bounds
for bad in "--guests 1025" "--guests 0" "--vcpus 65" "--traced 65 --guests 100 --host-cpus 1000" \
           "--traced 3 --guests 2" "--guests 64 --vcpus 8 --host-cpus 8" "--traced 9 --host-cpus 64"; do
  "$VMS" synth --scenario cloud-host $bad --events 2000 --out "$TMP/bad" >/dev/null 2>"$TMP/bad.err"
  st=$?
  [ $st = 2 ] && [ "$(wc -l < "$TMP/bad.err")" = 1 ] && ok "usage error: $bad" \
    || notok "usage error: $bad (status $st)" "$(cat "$TMP/bad.err")"
done
"$VMS" synth --guests 4 --out "$TMP/bad" >/dev/null 2>&1
[ $? = 2 ] && ok "--guests without cloud-host: usage error" || notok "--guests without cloud-host"
"$VMS" synth --scenario cloud-host --guests 1024 --vcpus 1 --host-cpus 32 --traced 1 --events 20k \
  --out "$TMP/max" >/dev/null 2>"$TMP/max.err" && [ -f "$TMP/max/guest-0.dat" ] \
  && ok "1024 guests (the limit) are accepted" || notok "1024 guests" "$(cat "$TMP/max.err")"
echo "1..$n"

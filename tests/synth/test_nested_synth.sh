#!/usr/bin/env bash
# vmscope synth --scenario nested (TAP): L0 (host.dat), L1 (l1.dat), L2 (l2.dat), each with
# TIME_SHIFT to the layer below. vmscope's view of the stack (vcpus --csv, exits --csv,
# report --json and its text) must equal the truth the generator wrote while planting
# (--truth): every L2 vCPU interval with its status and the layer of its cause, each exit
# reason's count/total/min/max/unfinished and L0's part, the time per state, who took the CPU
# at each layer (nested_check.py). Also given the files in another order; and the checker
# must catch a truth with one interval's layer changed (it can fail). And independently of
# the generator: the L2 exits (count, total, unfinished, L0's part) and the steal per layer
# and thief as computed from trace-cmd's reading of host.dat and l1.dat (nested_tracecmd.py:
# raw timestamps, L1's TIME_SHIFT as trace-cmd dump prints it) must equal vmscope's (skipped
# without trace-cmd); the fused view (pcpus) stacks L2's thread on L0's CPU for the truth's
# running time. Several seeds: each draws its own offsets and ratios and its own plan; and
# --vcpus 3 and 4 (seed 5), against the truth and trace-cmd's reading alike.
set -u
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=${VMS_BUILD_DIR}/test-tmp/nested-synth
rm -rf "$TMP" && mkdir -p "$TMP"
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "# ${2//$'\n'/ }"; }
echo "1..20"
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

views() {  # DIR FILES...: the four views the checker reads
  local d=$1; shift
  "$VMS" vcpus --csv "$@" > "$d/vcpus.csv" 2>"$d/err" &&
  "$VMS" exits --csv "$@" > "$d/exits.csv" 2>>"$d/err" &&
  "$VMS" report --json "$@" > "$d/report.json" 2>>"$d/err" &&
  "$VMS" report "$@" > "$d/report.txt" 2>>"$d/err"
}
tc_check() {  # DIR VCPUS: the L2 exits and steal per layer of trace-cmd's reading = vmscope's
  python3 "$HERE/nested_tracecmd.py" "$1/host.dat" "$1/l1.dat" $2 > "$1/tc.json" 2>"$1/tc.err" &&
  python3 - "$1/tc.json" "$1/exits.csv" "$1/report.json" $2 > "$1/tc.out" 2>&1 <<'PY'
import csv, json, sys
rep = json.load(open(sys.argv[3]))
vcpus = [m for m in rep["machines"] if m["name"] == "l2"][0]["vcpus"]
tcs = json.load(open(sys.argv[1]))
n = int(sys.argv[4])
assert sorted(v["vcpu"] for v in vcpus) == list(range(n))
assert sorted(int(v) for v in tcs) == list(range(n)), sorted(tcs)
for vc, tc in tcs.items():
    got = {r["name"]: [int(r["count"]), int(r["total_ns"]), int(r["unfinished"]),
                       int(r["below_total_ns"])]
           for r in csv.DictReader(open(sys.argv[2])) if r["machine"] == "l2" and r["vcpu"] == vc}
    assert got == tc["exits"], (vc, got, tc["exits"])
    v = [v for v in vcpus if v["vcpu"] == int(vc)][0]
    got = sorted((s["tid"], s["comm"], s["ns"]) for s in v["steal"])
    want = sorted((t, c, ns) for _, t, c, ns in tc["steal"])
    assert got == want, (vc, got, want)
    assert {l for l, *_ in tc["steal"]} == {"host", "l1"}
PY
}
check() {  # DIR [TRUTH]
  python3 "$HERE/nested_check.py" "${2:-$1/truth.json}" "$1/vcpus.csv" "$1/exits.csv" \
    "$1/report.json" "$1/report.txt" > "$1/check.out" 2>&1
}

for seed in 1 5 9; do
  d=$TMP/s$seed
  if ! "$VMS" synth --scenario nested --seed $seed --events 10k --out "$d" \
       --truth "$d/truth.json" > /dev/null 2>"$TMP/synth.err"; then
    notok "seed $seed: synth" "$(cat "$TMP/synth.err")"; notok "seed $seed: views"
    notok "seed $seed: other order"; notok "seed $seed: trace-cmd"; continue
  fi
  if views "$d" "$d/host.dat" "$d/l1.dat" "$d/l2.dat" && check "$d"; then
    ok "seed $seed: L2 states and layers, exit splits, steal per layer equal the truth"
  else notok "seed $seed: L2 states and layers, exit splits, steal per layer equal the truth" \
    "$(cat "$d/err" "$d/check.out" | head -5)"; fi
  mkdir -p "$d/rev" "$d/rot"
  if views "$d/rev" "$d/l2.dat" "$d/host.dat" "$d/l1.dat" && check "$d/rev" "$d/truth.json" &&
     views "$d/rot" "$d/l1.dat" "$d/l2.dat" "$d/host.dat" && check "$d/rot" "$d/truth.json"; then
    ok "seed $seed: the same given l2, host, l1 and l1, l2, host"
  else notok "seed $seed: the same given l2, host, l1 and l1, l2, host" \
    "$(cat "$d/rev/err" "$d/rev/check.out" "$d/rot/err" "$d/rot/check.out" | head -5)"; fi
  # the checker is not blind: the truth with one preemption's layer swapped must fail
  python3 - "$d/truth.json" "$d/bad.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
s = t["l2_vcpus"][0]["states"]
i = next(i for i, r in enumerate(s) if r[3] == "preempted")
s[i][4] = "l1" if s[i][4] == "host" else "host"
json.dump(t, open(sys.argv[2], "w"))
PY
  if ! check "$d" "$d/bad.json" && grep -q "vcpus row" "$d/check.out"; then
    ok "seed $seed: a truth with one layer changed is caught"
  else notok "seed $seed: a truth with one layer changed is caught" "$(cat "$d/check.out")"; fi
  if ! command -v trace-cmd > /dev/null; then
    skip "seed $seed: exits and steal per layer equal trace-cmd's reading" "no trace-cmd"
  elif tc_check "$d" 2
  then ok "seed $seed: exits and steal per layer equal trace-cmd's reading"
  else notok "seed $seed: exits and steal per layer equal trace-cmd's reading" \
    "$(cat "$d/tc.err" "$d/tc.out" | tail -3)"; fi
done

# what was planted is there at all (a scenario without its parts would pass the above)
d=$TMP/s1
if python3 - "$d/truth.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))["l2_vcpus"][0]
kinds = {(r[3], r[4]) for r in v["states"]}
need = {("vmm", "host"), ("vmm", "l1"), ("preempted", "host"), ("preempted", "l1"),
        ("idle", None), ("running", None), ("unknown", None)}
assert need <= kinds, need - kinds
assert all(s["ns"] > 0 for s in v["steal"]) and {s["layer"] for s in v["steal"]} == {"host", "l1"}
assert any(x["below_total_ns"] > 0 for x in v["exits"])
PY
then ok "the truth plants every kind: vmm and preempted at each layer, idle, L0's part of exits"
else notok "the truth plants every kind"; fi
# the fused view stacks the layers: the rows of L0's CPU v with L2's task 200+v on top last
# L2 vCPU v's running time of the truth, those with L2's idle task its idle time
"$VMS" pcpus --csv "$d/host.dat" "$d/l1.dat" "$d/l2.dat" > "$d/pcpus.csv" 2>/dev/null
if out=$(python3 - "$d" 2>&1 <<'PY'
import csv, json, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/pcpus.csv")))
for vt in json.load(open(d + "/truth.json"))["l2_vcpus"]:
    v, t = vt["vcpu"], vt["ns"]
    got = {str(200 + v): 0, "0": 0}
    for r in rows:
        if (r["host"], r["cpu"], r["up_machine"], r["up_vcpu"]) == ("host", str(v), "l2", str(v)) \
           and r["up_tid"] in got:
            got[r["up_tid"]] += int(r["end_ns"]) - int(r["start_ns"])
    assert (got[str(200 + v)], got["0"]) == (t["running"], t["idle"]) and t["running"], (v, got, t)
PY
); then ok "pcpus: each L0 CPU stacks its L2 vCPU's thread for its running time, idle for idle"
else notok "pcpus: each L0 CPU stacks its L2 vCPU's thread for its running time, idle for idle" "$out"; fi
# the same seed gives the same files
"$VMS" synth --scenario nested --seed 1 --events 10k --out "$TMP/again" > /dev/null 2>&1
if cmp -s "$d/l2.dat" "$TMP/again/l2.dat" && cmp -s "$d/host.dat" "$TMP/again/host.dat"; then
  ok "deterministic from the seed"
else notok "deterministic from the seed"; fi
# --vcpus: 3 and 4 vCPUs at each layer (seed 5): every L2 vCPU against the truth, and the
# exits and steal per layer against trace-cmd's reading
for nv in 3 4; do
  d=$TMP/v$nv
  if ! "$VMS" synth --scenario nested --vcpus $nv --seed 5 --events 10k --out "$d" \
       --truth "$d/truth.json" > /dev/null 2>"$TMP/synth.err"; then
    notok "--vcpus $nv: synth" "$(cat "$TMP/synth.err")"; notok "--vcpus $nv: trace-cmd"; continue
  fi
  if views "$d" "$d/host.dat" "$d/l1.dat" "$d/l2.dat" && check "$d" &&
     python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))["l2_vcpus"]
r = [m for m in json.load(open(sys.argv[2]))["machines"] if m["name"] == "l2"][0]["vcpus"]
n = int(sys.argv[3])
sys.exit(0 if [v["vcpu"] for v in t] == list(range(n)) and len(r) == n and
         all(v["ns"]["running"] > 0 for v in t) else 1)' "$d/truth.json" "$d/report.json" $nv; then
    ok "--vcpus $nv: $nv L2 vCPUs, states and layers, exit splits, steal per layer equal the truth"
  else notok "--vcpus $nv: $nv L2 vCPUs, states and layers, exit splits, steal per layer equal the truth" \
    "$(cat "$d/err" "$d/check.out" | head -5)"; fi
  if ! command -v trace-cmd > /dev/null; then
    skip "--vcpus $nv: exits and steal per layer equal trace-cmd's reading" "no trace-cmd"
  elif tc_check "$d" $nv
  then ok "--vcpus $nv: exits and steal per layer equal trace-cmd's reading"
  else notok "--vcpus $nv: exits and steal per layer equal trace-cmd's reading" \
    "$(cat "$d/tc.err" "$d/tc.out" | tail -3)"; fi
done
# nested has no --truth-wakeups (a usage error)
"$VMS" synth --scenario nested --truth-wakeups "$TMP/w.csv" --out "$TMP/u" > /dev/null 2>&1
[ $? = 2 ] && ok "nested --truth-wakeups: exit 2" || notok "nested --truth-wakeups: exit 2"

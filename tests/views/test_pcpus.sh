#!/usr/bin/env bash
# vmscope pcpus end to end. Expected values: OneQemuKvm rows derived by hand from the XML
# (the derivation is in tests/analysis/test_pcpu_view.c, test_onequemukvm); on the kvm-hip24
# pair, an independent check of the host CPU rows against `vmscope vcpus` (the vCPU state
# machine's own intervals): a vCPU is in guest mode on at most one host CPU at a time, and
# from the first moment the host's CPUs are known, the guest-mode time of each vCPU in
# `pcpus` is exactly its idle/running/unknown time in `vcpus` (not vmm, preempted, halted).
# Speaks TAP.
set -u
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
SHARED=${VMS_SHARED_DIR:?}/traces
TMP=${VMS_BUILD_DIR}/test-tmp/pcpus
rm -rf "$TMP" && mkdir -p "$TMP"
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "# $2"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

OQK=$SHARED/tracecompass-vm/OneQemuKvm
if [ -r "$OQK/host.xml" ]; then
  "$VMS" pcpus --csv "$OQK/host.xml" "$OQK/guest.xml" > "$TMP/oqk.csv" 2>"$TMP/oqk.err"; st=$?
  # by hand (see test_pcpu_view.c): CPU 0 of the host from its first event at t=1; the
  # guest's clock is the host's (--clock-model auto: slope 1, offset 0; see test_pcpu_view.c)
  cat > "$TMP/oqk.want" <<'CSV'
host,cpu,start_ns,end_ns,machine,vcpu,tid,comm
host,0,1,5,host,,31,qemucpu1
host,0,5,10,guest,0,,
host,0,10,35,guest,0,131,any2
host,0,35,45,guest,0,130,any
host,0,45,60,host,,31,qemucpu1
host,0,60,75,guest,0,130,any
host,0,75,95,guest,0,131,any2
host,0,95,100,host,,31,qemucpu1
host,0,100,150,host,,30,any
host,0,150,155,host,,31,qemucpu1
host,0,155,175,guest,0,131,any2
host,0,175,195,guest,0,130,any
host,0,195,210,host,,31,qemucpu1
host,0,210,225,guest,0,130,any
host,0,225,245,guest,0,131,any2
host,0,245,260,host,,31,qemucpu1
host,0,260,275,guest,0,131,any2
host,0,275,295,guest,0,130,any
host,0,295,300,host,,31,qemucpu1
host,0,300,350,host,,30,any
host,0,350,355,host,,31,qemucpu1
host,0,355,375,guest,0,130,any
CSV
  if [ $st -eq 0 ] && diff "$TMP/oqk.want" "$TMP/oqk.csv" >"$TMP/oqk.diff"; then
    ok "OneQemuKvm pcpus --csv: the rows derived by hand"
  else notok "OneQemuKvm pcpus --csv" "status $st: $(head -5 "$TMP/oqk.diff") $(cat "$TMP/oqk.err")"; fi
  # --clock-model linear: Trace Compass's hull, t_ref = 1.0025078369905955 t - 0.3824, moves
  # only the guest's last event (375 -> 375.56 -> 376): the last row ends at 376
  "$VMS" pcpus --csv --clock-model linear "$OQK/host.xml" "$OQK/guest.xml" > "$TMP/oqk-lin.csv" 2>>"$TMP/oqk.err"; st=$?
  sed -e '$s/,375,guest,/,376,guest,/' "$TMP/oqk.want" > "$TMP/oqk-lin.want"
  if [ $st -eq 0 ] && diff "$TMP/oqk-lin.want" "$TMP/oqk-lin.csv" >"$TMP/oqk.diff"; then
    ok "OneQemuKvm pcpus --csv --clock-model linear: the hull's rows (the last ends at 376)"
  else notok "OneQemuKvm pcpus --clock-model linear" "status $st: $(head -5 "$TMP/oqk.diff")"; fi
  "$VMS" pcpus --json "$OQK/host.xml" "$OQK/guest.xml" > "$TMP/oqk.jsonl" 2>>"$TMP/oqk.err"
  if python3 - "$TMP/oqk.jsonl" "$TMP/oqk.csv" <<'PY'
import csv, json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
head, rows = rows[0], rows[1:]
assert head["schema_version"] == 3 and head["command"] == "pcpus" and head["time_unit"] == "ns", head
want = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == len(want), (len(rows), len(want))
for j, c in zip(rows, want):
    assert list(j) == ["host", "cpu", "start_ns", "end_ns", "machine", "vcpu", "tid", "comm"], list(j)
    for k in j:
        v = "" if j[k] is None else str(j[k])
        assert v == c[k], (k, j, c)
PY
  then ok "OneQemuKvm pcpus --json: JSON Lines, the same rows"; else notok "OneQemuKvm pcpus --json"; fi
else
  skip "OneQemuKvm pcpus --csv" "shared traces missing"
  skip "OneQemuKvm pcpus --clock-model linear" "shared traces missing"
  skip "OneQemuKvm pcpus --json" "shared traces missing"
fi

HOST=$SHARED/kvm-hip24/host.dat
GUEST=$SHARED/kvm-hip24/guest-Salamander4.dat
if [ -r "$HOST" ]; then
  "$VMS" pcpus --csv "$HOST" "$GUEST" > "$TMP/p.csv" 2>"$TMP/p.err"; st=$?
  "$VMS" vcpus --csv "$HOST" "$GUEST" > "$TMP/v.csv" 2>>"$TMP/p.err"
  if [ $st -eq 0 ] && python3 - "$TMP/p.csv" "$TMP/v.csv" <<'PY'
import csv, sys
P = list(csv.DictReader(open(sys.argv[1])))
V = list(csv.DictReader(open(sys.argv[2])))
for r in P:  # pcpus --csv names its time columns with their unit too
    r["start"], r["end"] = r["start_ns"], r["end_ns"]
for r in V:  # vcpus --csv names its time columns with their unit
    r.setdefault("start", r.get("start_ns"))
    r.setdefault("end", r.get("end_ns"))
# maximal rows, tiling each CPU without overlap
by_cpu = {}
for r in P:
    by_cpu.setdefault((r["host"], r["cpu"]), []).append(r)
for rows in by_cpu.values():
    for a, b in zip(rows, rows[1:]):
        assert int(a["end"]) <= int(b["start"]), (a, b)
        if a["end"] == b["start"]:
            assert (a["machine"], a["vcpu"], a["tid"]) != (b["machine"], b["vcpu"], b["tid"]), (a, b)
first = min(int(r["start"]) for r in P)
last = max(int(r["end"]) for r in P)
def merged(iv):
    out = []
    for s, e in sorted(iv):
        if out and out[-1][1] == s:
            out[-1][1] = e
        else:
            out.append([s, e])
    return out
g = "guest-Salamander4"
vcpus = sorted({r["vcpu"] for r in V if r["machine"] == g})
assert vcpus == ["0"], vcpus
for n in vcpus:
    p = merged((int(r["start"]), int(r["end"])) for r in P if r["machine"] == g and r["vcpu"] == n)
    for a, b in zip(p, p[1:]):   # never on two host CPUs at once
        assert a[1] <= b[0], (a, b)
    # guest mode: neither the VMM nor the preempted flag (a HLT exit's halt carries the VMM
    # flag, whatever its state), inside the host's coverage
    v = merged((max(int(r["start"]), first), min(int(r["end"]), last)) for r in V
               if r["machine"] == g and r["vcpu"] == n and int(r["end"]) > first
               and int(r["start"]) < last and not int(r["status"]) & 384)
    assert len(p) > 1000, len(p)
    assert p == v, [x for x in zip(p, v) if x[0] != x[1]][:3]
print("# %d pcpus rows, %d guest-mode intervals of vCPU 0 agree" % (len(P), len(p)))
PY
  then ok "kvm-hip24 pcpus: host CPU rows agree with the vCPU rows"; else notok "kvm-hip24 pcpus" "$(cat "$TMP/p.err")"; fi
else
  skip "kvm-hip24 pcpus" "shared traces missing"
fi
echo "1..$n"

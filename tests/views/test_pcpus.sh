#!/usr/bin/env bash
# vmscope pcpus end to end. Expected values: OneQemuKvm rows derived by hand from the XML
# (the derivation is in tests/analysis/test_pcpu_view.c, test_onequemukvm); on the kvm-hip24
# pair, an independent check of the host CPU rows against `vmscope vcpus` (the vCPU state
# machine's own intervals): a vCPU is in guest mode on at most one host CPU at a time, and
# from the first moment the host's CPUs are known, the guest-mode time of each vCPU in
# `pcpus` is exactly its idle/running/unknown time in `vcpus` (not vmm, preempted, halted);
# and, since that host recorded no sched_switch, from its raw events: no vCPU or thread on
# two CPUs at once, and the unknown share (below). Speaks TAP.
set -u
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
SHARED=${VMS_SHARED_DIR:?}/traces
TMP=${VMS_BUILD_DIR}/test-tmp/pcpus
rm -rf "$TMP" && mkdir -p "$TMP"
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "# $2"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

# rows_by_hand NAME SHARE WHAT: pcpus --csv of NAME.dat (status $st) against NAME.want, the rows
# of each CPU in time order (the CPUs' rows interleave as intervals close), and the warning
# stating the unknown share SHARE
rows_by_hand() {
  { head -1 "$TMP/$1.csv"; tail -n +2 "$TMP/$1.csv" | sort -t, -k2,2n -k3,3n; } > "$TMP/$1.sorted"
  if [ $st -eq 0 ] && diff "$TMP/$1.want" "$TMP/$1.sorted" > "$TMP/$1.diff" &&
     grep -q "not known for $2" "$TMP/$1.err"; then
    ok "$3"
  else notok "$3" "status $st: $(head -5 "$TMP/$1.diff") $(cat "$TMP/$1.err")"; fi
}

# A host trace with no sched_switch, whose vCPU thread moves from CPU 0 to CPU 1 and back
# with no switch recorded (tests/cli/mk_trace.c "moving": its events and, derived by hand
# from them, these rows): each CPU shows the vCPU in its kvm_entry..kvm_exit windows only,
# and unknown between them and after the last, never the thread carried forward.
MK=${VMS_MK_TRACE:?}
if "$MK" moving "$TMP/moving.dat" 2>"$TMP/mv.err"; then
  "$VMS" pcpus --csv "$TMP/moving.dat" > "$TMP/mv.csv" 2>>"$TMP/mv.err"; st=$?
  cat > "$TMP/mv.want" <<'CSV'
host,cpu,start_ns,end_ns,machine,vcpu,tid,comm
moving,0,1000,5000,tid-2001,0,,
moving,0,5000,7000,unknown,,,
moving,0,7000,10000,tid-2001,0,,
moving,0,10000,30000,unknown,,,
moving,0,30000,32000,tid-2001,0,,
moving,1,16000,20000,tid-2001,0,,
moving,1,20000,21000,unknown,,,
moving,1,21000,25000,tid-2001,0,,
moving,1,25000,32000,unknown,,,
CSV
  rows_by_hand mv "63.83% of their time (30.00 us of 47.00 us" \
    "a vCPU thread moving CPUs without sched_switch: the rows derived by hand, 63.83% unknown"
  "$VMS" pcpus --json "$TMP/moving.dat" 2>/dev/null | tail -1 > "$TMP/mv.last"
  want='{"unknown":{"covered_ns":47000,"unknown_ns":30000,"cpus":[{"host":"moving","cpu":0,"covered_ns":31000,"unknown_ns":22000},{"host":"moving","cpu":1,"covered_ns":16000,"unknown_ns":8000}]}}'
  if [ "$(cat "$TMP/mv.last")" = "$want" ]; then
    ok "the same, --json: the unknown share per CPU and in all, by hand"
  else notok "the same, --json: the unknown share" "$(cat "$TMP/mv.last")"; fi
else
  notok "mk_trace moving" "$(cat "$TMP/mv.err")"
  notok "the same, --json"
fi

# A host trace with sched_switch where thread 77 comes on CPU 1 while CPU 0, whose switch
# away from it was lost, still shows it (tests/cli/mk_trace.c "lostswitch": its events and,
# derived by hand from them, these rows): CPU 0 shows 77 up to its last event there (3000),
# then unknown until the next switch there (7000), not 77 carried on while it runs on CPU 1.
if "$MK" lostswitch "$TMP/lostswitch.dat" 2>"$TMP/ls.err"; then
  "$VMS" pcpus --csv "$TMP/lostswitch.dat" > "$TMP/ls.csv" 2>>"$TMP/ls.err"; st=$?
  cat > "$TMP/ls.want" <<'CSV'
host,cpu,start_ns,end_ns,machine,vcpu,tid,comm
lostswitch,0,1000,3000,lostswitch,,77,task-77
lostswitch,0,3000,7000,unknown,,,
lostswitch,0,7000,8000,lostswitch,,0,task-0
lostswitch,1,2000,2500,lostswitch,,2001,task-2001
lostswitch,1,2500,4000,tid-2001,0,,
lostswitch,1,4000,4500,lostswitch,,2001,task-2001
lostswitch,1,4500,6000,lostswitch,,77,task-77
lostswitch,1,6000,6500,lostswitch,,2001,task-2001
lostswitch,1,6500,8000,tid-2001,0,,
CSV
  rows_by_hand ls "30.77% of their time (4.00 us of 13.00 us" \
    "a host thread on a second CPU after a lost switch: the CPU it left is unknown from its last event there, by hand"
else
  notok "mk_trace lostswitch" "$(cat "$TMP/ls.err")"
fi

OQK=$SHARED/tracecompass-vm/OneQemuKvm
if [ -r "$OQK/host.xml" ]; then
  "$VMS" pcpus --csv "$OQK/host.xml" "$OQK/guest.xml" > "$TMP/oqk.csv" 2>"$TMP/oqk.err"; st=$?
  # by hand (see test_pcpu_view.c): CPU 0 of the host from its first event at t=1; the
  # guest's clock is the host's (--clock-model auto: slope 1, offset 0; see test_pcpu_view.c);
  # the host's last event is at 355: from there to the guest's last (375) who ran is unknown
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
host,0,355,375,unknown,,,
CSV
  if [ $st -eq 0 ] && diff "$TMP/oqk.want" "$TMP/oqk.csv" >"$TMP/oqk.diff"; then
    ok "OneQemuKvm pcpus --csv: the rows derived by hand"
  else notok "OneQemuKvm pcpus --csv" "status $st: $(head -5 "$TMP/oqk.diff") $(cat "$TMP/oqk.err")"; fi
  # --clock-model linear: Trace Compass's hull, t_ref = 1.0025078369905955 t - 0.3824, moves
  # only the guest's last event (375 -> 375.56 -> 376): the last row ends at 376
  "$VMS" pcpus --csv --clock-model linear "$OQK/host.xml" "$OQK/guest.xml" > "$TMP/oqk-lin.csv" 2>>"$TMP/oqk.err"; st=$?
  sed -e '$s/,375,unknown,/,376,unknown,/' "$TMP/oqk.want" > "$TMP/oqk-lin.want"
  if [ $st -eq 0 ] && diff "$TMP/oqk-lin.want" "$TMP/oqk-lin.csv" >"$TMP/oqk.diff"; then
    ok "OneQemuKvm pcpus --csv --clock-model linear: the hull's rows (the last ends at 376)"
  else notok "OneQemuKvm pcpus --clock-model linear" "status $st: $(head -5 "$TMP/oqk.diff")"; fi
  "$VMS" pcpus --json "$OQK/host.xml" "$OQK/guest.xml" > "$TMP/oqk.jsonl" 2>>"$TMP/oqk.err"
  if python3 - "$TMP/oqk.jsonl" "$TMP/oqk.csv" <<'PY'
import csv, json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
head, rows, share = rows[0], rows[1:-1], rows[-1]
assert head["schema_version"] == 3 and head["command"] == "pcpus" and head["time_unit"] == "ns", head
# by hand: CPU 0 from its first row at 1 to the end at 375 (374 ns), unknown after the host's
# trace ended at 355 (20 ns)
assert share == {"unknown": {"covered_ns": 374, "unknown_ns": 20, "cpus": [
    {"host": "host", "cpu": 0, "covered_ns": 374, "unknown_ns": 20}]}}, share
want = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == len(want), (len(rows), len(want))
for j, c in zip(rows, want):
    assert list(j) == ["host", "cpu", "start_ns", "end_ns", "machine", "vcpu", "tid", "comm"], list(j)
    for k in j:
        v = "" if j[k] is None else str(j[k])
        assert v == c[k], (k, j, c)
PY
  then ok "OneQemuKvm pcpus --json: JSON Lines, the same rows"; else notok "OneQemuKvm pcpus --json"; fi
  # the vCPU view says the same of the time after the host's trace: its last interval, from
  # the host's last event (355) to the end (375), is unknown (start, end, state)
  last=$("$VMS" vcpus --csv "$OQK/host.xml" "$OQK/guest.xml" 2>/dev/null | tail -1)
  if [ "$(cut -d, -f3,4,6 <<<"$last")" = "355,375,unknown" ]; then
    ok "OneQemuKvm vcpus: the same span after the host's trace is unknown"
  else notok "OneQemuKvm vcpus after the host's trace" "$last"; fi
else
  skip "OneQemuKvm pcpus --csv" "shared traces missing"
  skip "OneQemuKvm pcpus --clock-model linear" "shared traces missing"
  skip "OneQemuKvm pcpus --json" "shared traces missing"
  skip "OneQemuKvm vcpus after the host's trace" "shared traces missing"
fi

HOST=$SHARED/kvm-hip24/host.dat
GUEST=$SHARED/kvm-hip24/guest-Salamander4.dat
if [ -r "$HOST" ]; then
  "$VMS" pcpus --csv "$HOST" "$GUEST" > "$TMP/p.csv" 2>"$TMP/p.err"; st=$?
  "$VMS" vcpus --csv "$HOST" "$GUEST" > "$TMP/v.csv" 2>>"$TMP/p.err"
  if [ $st -eq 0 ] && python3 - "$TMP/p.csv" "$TMP/v.csv" <<'PY'
import csv, os, sys
sys.path.insert(0, os.path.join(os.environ["VMS_SOURCE_DIR"], "tests", "views"))
from pcpus_rows import merged
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

# kvm-hip24's host recorded kvm_entry/kvm_exit and no sched_switch: what is known of its
# CPUs is the [kvm_entry, next kvm event of that thread) windows, nothing else (spec §7).
# Checked independently of the analysis, from the host's raw events (`vmscope dump --raw`:
# the TSC of each event; ns = tsc * mult >> shift, the TSC2NSEC option that info prints):
# every vCPU and every host thread on at most one CPU at any instant, each CPU's known rows
# exactly those windows, and the unknown share (per CPU from its first row, i.e. its first
# kvm_entry, to the end of the traces; in all) as the JSON's last object and the warning say.
if [ -r "$HOST" ]; then
  "$VMS" pcpus --json "$HOST" "$GUEST" > "$TMP/p.jsonl" 2>"$TMP/pj.err"; st=$?
  "$VMS" dump --raw "$HOST" > "$TMP/raw.txt" 2>>"$TMP/pj.err"
  "$VMS" info --json "$HOST" "$GUEST" > "$TMP/info.json" 2>>"$TMP/pj.err"
  if [ $st -eq 0 ] && python3 - "$TMP/p.csv" "$TMP/p.jsonl" "$TMP/raw.txt" "$TMP/info.json" "$TMP/p.err" <<'PY'
import collections, csv, json, os, re, sys
sys.path.insert(0, os.path.join(os.environ["VMS_SOURCE_DIR"], "tests", "views"))
from pcpus_rows import merged
P = list(csv.DictReader(open(sys.argv[1])))
J = [json.loads(l) for l in open(sys.argv[2])]
info = json.load(open(sys.argv[4]))
host = next(t for t in info["traces"] if t["path"].endswith("host.dat"))
mult, shift = host["tsc2nsec"]["mult"], host["tsc2nsec"]["shift"]
t_end = max(t["last_ns"] for t in info["traces"])
# the windows, from the raw events alone
windows = collections.defaultdict(list)   # cpu -> [(s, e)]
open_at = {}                              # tid -> (cpu, s)
for line in open(sys.argv[3]):
    m = re.match(r"(\d+) cpu=(\d+) tid=(\d+) (kvm_entry|kvm_exit):", line)
    if not m:
        continue
    t, cpu, tid = (int(m.group(1)) * mult) >> shift, int(m.group(2)), int(m.group(3))
    if tid in open_at:
        c, s = open_at.pop(tid)
        if t > s:
            windows[c].append((s, t))
    if m.group(4) == "kvm_entry":
        open_at[tid] = (cpu, t)
for tid, (c, s) in open_at.items():
    if t_end > s:
        windows[c].append((s, t_end))
unknown = lambda r: r["machine"] == "unknown" and r["vcpu"] == "" and r["tid"] == ""
# no vCPU and no host thread on two CPUs at once
who = collections.defaultdict(list)
for r in P:
    if unknown(r):
        continue
    key = (r["machine"], r["vcpu"]) if r["vcpu"] != "" else ("host thread", r["tid"])
    who[key].append((int(r["start_ns"]), int(r["end_ns"]), r["cpu"]))
for key, iv in who.items():
    iv.sort()
    for a, b in zip(iv, iv[1:]):
        assert a[1] <= b[0] or a[2] == b[2], ("on two CPUs at once", key, a, b)
assert ("guest-Salamander4", "0") in who, sorted(who)
# per CPU: the known rows are the windows; the unknown rows the rest from the first row
cov = unk = 0
share = {}
for cpu in sorted(windows):
    rows = [r for r in P if r["cpu"] == str(cpu)]
    known = merged((int(r["start_ns"]), int(r["end_ns"])) for r in rows if not unknown(r))
    assert known == merged(windows[cpu]), (cpu, known[:3], merged(windows[cpu])[:3])
    first = min(s for s, e in windows[cpu])
    assert min(int(r["start_ns"]) for r in rows) == first, cpu
    k = sum(e - s for s, e in known)
    u = sum(int(r["end_ns"]) - int(r["start_ns"]) for r in rows if unknown(r))
    assert u == (t_end - first) - k, (cpu, u, t_end - first, k)
    share[cpu] = (t_end - first, u)
    cov += t_end - first
    unk += u
assert {int(r["cpu"]) for r in P} == set(windows)
tail = J[-1]["unknown"]
assert tail["covered_ns"] == cov and tail["unknown_ns"] == unk, (tail, cov, unk)
assert {c["cpu"]: (c["covered_ns"], c["unknown_ns"]) for c in tail["cpus"]} == share
rows = [r for r in J[1:-1]]
assert len(rows) == len(P) and sum(1 for r in rows if r["machine"] == "unknown" and r["tid"] is None) == sum(1 for r in P if unknown(r))
pct = "%.2f%%" % (100.0 * unk / cov)
err = open(sys.argv[5]).read()
assert "not known for " + pct in err, err
print("# kvm-hip24: %d CPUs, %d of %d ns unknown (%s); vCPU 0's thread on one CPU at a time"
      % (len(windows), unk, cov, pct))
PY
  then ok "kvm-hip24 pcpus without sched_switch: one CPU at a time, known = the kvm_entry..kvm_exit windows, the unknown share stated"
  else notok "kvm-hip24 pcpus without sched_switch" "$(cat "$TMP/pj.err")"; fi
else
  skip "kvm-hip24 pcpus without sched_switch" "shared traces missing"
fi
echo "1..$n"

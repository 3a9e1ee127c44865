#!/usr/bin/env bash
# The CLI's contract, end to end on the built binary: exit statuses (0 ok, 1 failure, 2 bad
# input or usage), --help on every command, the CSV headers scripts parse, JSON that parses,
# one clear line for a damaged trace, and the results on the shared KVM traces.
# Speaks TAP. Expected values: the headers and statuses are the documented contract; the
# kvm-hip24 facts (vCPU 0 -> host thread 483882, TIME_SHIFT) are in docs/formats.md, read by
# hand from the files.
set -u
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
SHARED=${VMS_SHARED_DIR:?}/traces
TMP=${VMS_BUILD_DIR}/test-tmp/cli
rm -rf "$TMP" && mkdir -p "$TMP"
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "# $2"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else notok "$name"; fi; }
status_is() { local want=$1; shift; "$@" >/dev/null 2>&1; [ $? -eq "$want" ]; }

check "no command: usage, exit 2" status_is 2 "$VMS"
check "--help: exit 0" status_is 0 "$VMS" --help
check "unknown command: exit 2" status_is 2 "$VMS" frobnicate
for c in info report html serve index vcpus pcpus export threads exits latency containers sync synth demo dump ctl db; do
  out=$("$VMS" $c --help 2>&1); st=$?
  if [ $st -eq 0 ] && grep -q "usage: vmscope $c" <<<"$out"; then ok "$c --help"; else notok "$c --help" "status $st"; fi
done
# a man page per command, naming every long option its --help names
SRC=${VMS_SOURCE_DIR:?}
for c in info report html serve index vcpus pcpus export threads exits latency containers sync synth demo dump ctl db; do
  page=$SRC/man/vmscope-$c.1
  if [ ! -f "$page" ]; then notok "man page for $c" "missing $page"; continue; fi
  missing=""
  for o in $("$VMS" $c --help 2>/dev/null | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    grep -q -- "$(sed 's/-/\\\\-/g' <<<"$o")\|$o" "$page" || missing="$missing $o"
  done
  if [ -z "$missing" ]; then ok "man page for $c names its options"; else notok "man page for $c" "not in the page:$missing"; fi
done
check "vcpus without a trace: exit 2" status_is 2 "$VMS" vcpus --csv
check "unknown option: exit 2" status_is 2 "$VMS" report --frobnicate x
check "--json with --csv: exit 2" status_is 2 "$VMS" vcpus --json --csv x
check "bad --map: exit 2" status_is 2 "$VMS" report --map nonsense x
err=$("$VMS" report /nonexistent/file.dat 2>&1 >/dev/null); st=$?
if [ $st -eq 2 ] && [ "$(wc -l <<<"$err")" -eq 1 ] && grep -q "/nonexistent/file.dat" <<<"$err"; then
  ok "missing file: one line naming it, exit 2"; else notok "missing file" "status $st: $err"; fi
printf 'this is not a trace\n' > "$TMP/garbage.dat"
err=$("$VMS" info "$TMP/garbage.dat" 2>&1 >/dev/null); st=$?
if [ $st -eq 2 ] && [ "$(wc -l <<<"$err")" -eq 1 ]; then ok "not a trace: one line, exit 2"; else notok "not a trace" "status $st: $err"; fi

HOST=$SHARED/kvm-hip24/host.dat
GUEST=$SHARED/kvm-hip24/guest-Salamander4.dat
if [ -r "$HOST" ]; then
  head -c 300000 "$HOST" > "$TMP/truncated.dat"
  err=$("$VMS" report "$TMP/truncated.dat" 2>&1 >/dev/null); st=$?
  if [ $st -eq 2 ] && [ "$(wc -l <<<"$err")" -eq 1 ] && grep -q "truncated.dat" <<<"$err" && grep -q "byte offset" <<<"$err"; then
    ok "truncated trace.dat: one line with file and byte offset, exit 2"
  else notok "truncated trace.dat" "status $st: $err"; fi

  "$VMS" sync --json "$HOST" "$GUEST" > "$TMP/sync.json" 2>"$TMP/sync.err"; st=$?
  if [ $st -eq 0 ] && python3 - "$TMP/sync.json" "$GUEST" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema_version"] == 3 and d["command"] == "sync" and d["time_unit"] == "ns", d
d = d["machines"]
assert isinstance(d, list) and len(d) >= 2, d
keys = {"machine", "reference", "method", "slope", "offset_ns", "quality", "pairs", "containment"}
for m in d:
    assert keys <= set(m), m
g = [m for m in d if m["method"] == "timeshift"]
assert len(g) == 1, d
c = g[0]["containment"]
assert c and c["total"] > 1000 and c["inside"] / c["total"] > 0.95, c
# TIME_SHIFT: 2 samples with one offset, scaling 1: slope 1 exactly, and offset_ns is that
# offset (host cycles) converted by TSC2NSEC (mult 735842807, shift 31, formats.md); the
# offset is read here from the guest file's options by a walk of their own (not vmscope's)
import struct, zlib
data = open(sys.argv[2], 'rb').read()
p = data.index(b'\0', 10) + 1 + 6
p = data.index(b'\0', data.index(b'\0', p) + 1) + 1
(off,) = struct.unpack_from('<Q', data, p)
offsets = []
while off:
    sid, flags, _, size = struct.unpack_from('<HHIQ', data, off)
    body = data[off + 16:off + 16 + size]
    if flags & 1:
        csize, usize = struct.unpack_from('<II', body, 0)
        body = zlib.decompress(body[8:8 + csize])
    q, off = 0, 0
    while q < len(body):
        oid, osz = struct.unpack_from('<HI', body, q)
        od = body[q + 6:q + 6 + osz]
        q += 6 + osz
        if oid == 0:
            (off,) = struct.unpack_from('<Q', od, 0)
            break
        if oid == 12:
            n = struct.unpack_from('<I', od, 16)[0]
            offsets = list(struct.unpack_from('<%dq' % n, od, 20 + 8 * n))
assert len(offsets) == 2 and offsets[0] == offsets[1], offsets
assert abs(g[0]["slope"] - 1.0) < 1e-9, g[0]
assert abs(g[0]["offset_ns"] - offsets[0] * 735842807 / 2**31) < 2, (g[0], offsets)
PY
  then ok "kvm-hip24 sync --json: guest by TIME_SHIFT, slope 1, containment > 95%"; else notok "kvm-hip24 sync --json" "$(cat "$TMP/sync.err")"; fi

  "$VMS" report --json "$HOST" "$GUEST" > "$TMP/report.json" 2>"$TMP/report.err"; st=$?
  if [ $st -eq 0 ] && python3 - "$TMP/report.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ms = {m["name"]: m for m in d["machines"]}
g = [m for m in d["machines"] if "guest" in m["roles"] and m["traced"]]
assert len(g) == 1, list(ms)
g = g[0]
assert g["name"] == "guest-Salamander4", g["name"]   # GUEST option name is empty: file name
v = g["vcpus"]
assert len(v) == 1 and v[0]["vcpu"] == 0 and v[0]["host_tid"] == 483882, v
assert v[0]["link"] == "guest-option", v[0]["link"]
assert sum(e["count"] for e in v[0]["exits"]) > 0
# the shares add up to 1; what cannot be seen is null in ns and share alike: the host
# recorded no sched_switch, so preempted (and it only) is unknown
assert abs(sum(x for x in v[0]["share"].values() if x is not None) - 1.0) < 1e-6, v[0]["share"]
assert [k for k, x in v[0]["share"].items() if x is None] == ["preempted"], v[0]["share"]
assert [k for k, x in v[0]["ns"].items() if x is None] == ["preempted"], v[0]["ns"]
assert all(t["preempted_ns"] is None and t["vmm_ns"] is not None for t in g["threads"]), g["threads"][:3]
# untraced guests: host vCPU threads of other VMs are analysed too (formats.md); their
# guest-mode time cannot be told idle from running: both null, the time is unknown
u = [m for m in d["machines"] if not m["traced"]]
assert u, list(ms)
for m in u:
    for v in m["vcpus"]:
        for k in ("idle", "running"):
            assert v["ns"][k] is None and v["share"][k] is None, (m["name"], v["ns"], v["share"])
        assert v["ns"]["unknown"] > 0 and v["ns"]["halted"] > 0, v["ns"]
PY
  then ok "kvm-hip24 report --json: vCPU 0 -> 483882 by GUEST option, exits, untraced guests"; else notok "kvm-hip24 report --json" "$(cat "$TMP/report.err")"; fi

  "$VMS" vcpus --csv "$HOST" "$GUEST" > "$TMP/vcpus.csv" 2>"$TMP/vcpus.err"; st=$?
  if [ $st -eq 0 ] && python3 - "$TMP/vcpus.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
assert rows[0] == ["machine", "vcpu", "start_ns", "end_ns", "status", "state"], rows[0]
names = {"unknown": None, "idle": 1, "running": 2, "vmm": None, "preempted": None, "halted": None}
last = {}
for r in rows[1:]:
    m, vcpu, s, e, st, state = r[0], int(r[1]), int(r[2]), int(r[3]), int(r[4]), r[5]
    assert s < e, r
    assert state in names, r
    # the state follows from the status by the precedence of the spec; "unknown" outside
    # the traces' coverage whatever the status; a HLT exit's halt is halted, not vmm
    if state == "unknown": pass
    elif st & 256: assert state in ("preempted", "halted"), r
    elif st & 128: assert state in ("vmm", "halted"), r
    elif st == 2: assert state == "running", r
    elif st == 1: assert state == "idle", r
    else: assert False, r
    k = (m, vcpu)
    if k in last:
        pe, pst, pstate = last[k]
        assert s == pe, ("gap or overlap", r)        # intervals tile the timeline
        assert (st, state) != (pst, pstate), ("not maximal", r)
    last[k] = (e, st, state)
assert len(rows) > 100
# the guest (1 vCPU) halts: the host recorded only kvm_entry/kvm_exit, so its HLT exits are
# halted as a whole (status VMM, state halted), and they are most of its time
g = [r for r in rows[1:] if r[0] == "guest-Salamander4"]
halted = sum(int(r[3]) - int(r[2]) for r in g if r[5] == "halted" and int(r[4]) & 128)
vmm = sum(int(r[3]) - int(r[2]) for r in g if r[5] == "vmm")
assert halted > 10 * vmm, (halted, vmm)
PY
  then ok "kvm-hip24 vcpus --csv: header, tiling, maximal intervals, state precedence"; else notok "kvm-hip24 vcpus --csv" "$(cat "$TMP/vcpus.err")"; fi

  "$VMS" exits --csv "$HOST" "$GUEST" > "$TMP/exits.csv" 2>"$TMP/exits.err"; st=$?
  if [ $st -eq 0 ] && [ "$(head -1 "$TMP/exits.csv")" = "machine,vcpu,isa,reason,name,count,total_ns,min_ns,max_ns,mean_ns,p50_ns,p90_ns,p99_ns,unfinished" ] && python3 - "$TMP/exits.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows
for r in rows:
    n = int(r["count"]); lo = int(r["min_ns"]); hi = int(r["max_ns"])
    assert n > 0 and 0 <= int(r["unfinished"]) <= n, r
    if int(r["unfinished"]) == n: continue  # no finished exit: no times
    assert lo <= int(r["p50_ns"]) <= int(r["p90_ns"]) <= int(r["p99_ns"]) <= hi, r
    assert lo <= int(r["mean_ns"]) <= hi, r
    assert r["isa"] in ("1", "2"), r
PY
  then ok "kvm-hip24 exits --csv: header and consistent statistics"; else notok "kvm-hip24 exits --csv" "$(cat "$TMP/exits.err")"; fi

  # per guest = the sum over its vCPUs (count, total), min of mins, max of maxes
  "$VMS" exits --csv --per-guest "$HOST" "$GUEST" > "$TMP/exits-guest.csv" 2>"$TMP/exits.err"; st=$?
  if [ $st -eq 0 ] && python3 - "$TMP/exits.csv" "$TMP/exits-guest.csv" <<'PY'
import csv, sys
from collections import defaultdict
agg = defaultdict(lambda: [0, 0, None, 0])
for r in csv.DictReader(open(sys.argv[1])):
    a = agg[(r["machine"], r["isa"], r["reason"])]
    a[0] += int(r["count"]); a[1] += int(r["total_ns"])
    a[2] = int(r["min_ns"]) if a[2] is None else min(a[2], int(r["min_ns"]))
    a[3] = max(a[3], int(r["max_ns"]))
rows = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == len(agg), (len(rows), len(agg))
for r in rows:
    assert r["vcpu"] == "", r
    assert agg[(r["machine"], r["isa"], r["reason"])] == [int(r["count"]), int(r["total_ns"]), int(r["min_ns"]), int(r["max_ns"])], r
PY
  then ok "exits --per-guest: the sums of the vCPU rows"; else notok "exits --per-guest" "$(cat "$TMP/exits.err")"; fi

  # nothing is known outside a trace's own time (issue 6): the guest trace ends ~382 ms before
  # the host's; after its last event (info's last_ns, the reference time the merged dump test
  # checks) no guest thread interval exists and the vCPU is never running or idle: only
  # what the host sees (its HLT exits: halted; other exits: vmm) or unknown
  "$VMS" threads --csv "$HOST" "$GUEST" > "$TMP/threads-cov.csv" 2>/dev/null
  "$VMS" info --json "$HOST" "$GUEST" > "$TMP/info-cov.json" 2>/dev/null
  if python3 - "$TMP/threads-cov.csv" "$TMP/vcpus.csv" "$TMP/info-cov.json" <<'PY'
import csv, json, sys
ts = json.load(open(sys.argv[3]))["traces"]
t = [x for x in ts if x["machine"] == "guest-Salamander4"][0]
host = [x for x in ts if x["machine"] == "host"][0]
first, last = t["first_ns"], t["last_ns"]
assert host["last_ns"] - last > 300_000_000, (host["last_ns"], last)
th = [r for r in csv.DictReader(open(sys.argv[1])) if r["machine"] == "guest-Salamander4"]
assert th and all(first <= int(r["start_ns"]) < int(r["end_ns"]) <= last for r in th), \
    max(int(r["end_ns"]) for r in th)
after = {}
for r in csv.DictReader(open(sys.argv[2])):
    if r["machine"] == "guest-Salamander4" and int(r["end_ns"]) > last:
        after[r["state"]] = after.get(r["state"], 0) + int(r["end_ns"]) - max(int(r["start_ns"]), last)
assert set(after) <= {"halted", "vmm", "unknown"} and after.get("halted", 0) > 300_000_000, after
PY
  then ok "kvm-hip24: no guest thread and no running/idle after the guest trace's end"; else notok "kvm-hip24 coverage"; fi

  "$VMS" threads --csv "$HOST" "$GUEST" > "$TMP/threads.csv" 2>"$TMP/threads.err"; st=$?
  if [ $st -eq 0 ] && [ "$(head -1 "$TMP/threads.csv")" = "machine,tid,start_ns,end_ns,reason,exit_reason,host_tid" ]; then
    ok "kvm-hip24 threads --csv: header"; else notok "kvm-hip24 threads --csv" "$(cat "$TMP/threads.err")"; fi

  "$VMS" info --json "$HOST" > "$TMP/info.json" 2>"$TMP/info.err"; st=$?
  if [ $st -eq 0 ] && python3 - "$TMP/info.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema_version"] == 3 and d["command"] == "info", d
d = d["traces"][0]
assert d["roles"] == ["host"], d["roles"]
assert d["tsc2nsec"]["mult"] == 735842807 and d["tsc2nsec"]["shift"] == 31
assert d["cpus"] == 20, d["cpus"]
g = d["guests"][0]
assert g["trace_id"] == "0x5d2b93f358166218" and g["name"] == ""
assert g["vcpus"] == [{"vcpu": 0, "host_tid": 483882}]
assert d["event_counts"].get("kvm:kvm_entry", 0) > 0
PY
  then ok "kvm-hip24 info --json: role, TSC2NSEC, CPUs, GUEST option"; else notok "kvm-hip24 info --json" "$(cat "$TMP/info.err")"; fi
else
  for t in truncated sync report vcpus exits exits-per-guest coverage threads info; do skip "kvm-hip24 $t" "shared traces missing"; done
fi

OQK=$SHARED/tracecompass-vm/OneQemuKvm
if [ -r "$OQK/host.xml" ]; then
  "$VMS" vcpus --csv "$OQK/host.xml" "$OQK/guest.xml" > "$TMP/oqk.csv" 2>"$TMP/oqk.err"; st=$?
  if [ $st -eq 0 ] && [ "$(head -1 "$TMP/oqk.csv")" = "machine,vcpu,start_ns,end_ns,status,state" ] && [ "$(wc -l < "$TMP/oqk.csv")" -gt 3 ]; then
    ok "OneQemuKvm vcpus --csv"; else notok "OneQemuKvm vcpus --csv" "$(cat "$TMP/oqk.err")"; fi
  # roles and names forced on the command line; a user map (it wins: it is forced)
  "$VMS" report --json --host "$OQK/host.xml" --guest myvm="$OQK/guest.xml" > "$TMP/oqk-forced.json" 2>"$TMP/oqk.err"
  "$VMS" report --json --map guest:0=31 "$OQK/guest.xml" "$OQK/host.xml" > "$TMP/oqk-map.json" 2>>"$TMP/oqk.err"
  if python3 - "$TMP/oqk-forced.json" "$TMP/oqk-map.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ms = [(m["name"], m["roles"], m.get("host")) for m in d["machines"]]
assert ms == [("host", ["host"], None), ("myvm", ["guest"], "host")], ms
d = json.load(open(sys.argv[2]))
g = [m for m in d["machines"] if m["name"] == "guest"][0]
assert [(v["vcpu"], v["host_tid"], v["link"]) for v in g["vcpus"]] == [(0, 31, "user")], g["vcpus"]
# the host is found from the data even when given second: it is the reference
assert g["sync"]["reference"] == "host", g["sync"]
PY
  then ok "OneQemuKvm --host/--guest/--map"; else notok "OneQemuKvm --host/--guest/--map" "$(cat "$TMP/oqk.err")"; fi
  err=$("$VMS" report --map nosuch:0=31 "$OQK/host.xml" "$OQK/guest.xml" 2>&1 >/dev/null); st=$?
  if [ $st -eq 2 ] && grep -q "nosuch" <<<"$err"; then ok "--map to an unknown guest: exit 2"; else notok "--map unknown" "status $st: $err"; fi
else
  skip "OneQemuKvm vcpus --csv" "shared traces missing"
  skip "OneQemuKvm --host/--guest/--map" "shared traces missing"
  skip "--map to an unknown guest" "shared traces missing"
fi

# ---- the command line behaves like the tools around it (issue 6) ----
MK=${VMS_MK_TRACE:?}
"$MK" tsc "$TMP/tsc.dat" && "$MK" ns "$TMP/ns.dat" && "$MK" nokvm "$TMP/nokvm.dat" || notok "mk_trace"
# options after the traces, --opt=value and --opt value alike
a=$("$VMS" exits "$TMP/ns.dat" --csv 2>/dev/null); b=$("$VMS" exits --csv "$TMP/ns.dat" 2>/dev/null)
"$VMS" exits "$TMP/ns.dat" --output="$TMP/eq.csv" --csv 2>/dev/null
"$VMS" exits "$TMP/ns.dat" --output "$TMP/sp.csv" --csv 2>/dev/null
if [ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" = "$(cat "$TMP/eq.csv")" ] && [ "$a" = "$(cat "$TMP/sp.csv")" ]; then
  ok "options after the traces; --output=FILE and --output FILE"; else notok "options anywhere" "$a"; fi
# vmscope help CMD, --version on every command
bad=""
for c in info report vcpus pcpus threads exits sync synth demo dump ctl; do
  [ "$("$VMS" help $c 2>&1)" = "$("$VMS" $c --help 2>&1)" ] || bad="$bad help-$c"
  [ "$("$VMS" $c --version 2>&1)" = "$("$VMS" --version)" ] || bad="$bad version-$c"
done
if [ -z "$bad" ]; then ok "vmscope help CMD and CMD --version on every command"; else notok "help/version" "$bad"; fi
# a missing file is exit 2 in every command that reads traces
bad=""
for c in info report vcpus pcpus threads exits sync dump; do
  "$VMS" $c "$TMP/no-such.dat" >/dev/null 2>&1; st=$?; [ $st -eq 2 ] || bad="$bad $c:$st"
done
if [ -z "$bad" ]; then ok "missing file: exit 2 in every command"; else notok "missing file status" "$bad"; fi
# a failed write to stdout: one message, exit 1; a closed pipe: quiet (SIGPIPE, or EPIPE when
# SIGPIPE is ignored), for text, CSV and JSON alike
bad=""
for fmt in "" --csv --json; do
  err=$("$VMS" vcpus $fmt "$TMP/ns.dat" 2>&1 >/dev/full); st=$?
  { [ $st -eq 1 ] && grep -q "cannot write the output" <<<"$err"; } || bad="$bad full$fmt:$st"
done
for fmt in --csv --json; do
  err=$("$VMS" report $fmt "$TMP/ns.dat" 2>&1 >/dev/full); st=$?
  [ $st -eq 1 ] || [ "$fmt" = --csv ] || bad="$bad report-full$fmt:$st"
done
if [ -z "$bad" ]; then ok "write to a full device: message and exit 1"; else notok "failed write" "$bad"; fi
if [ -r "$SHARED/kvm-hip24/host.dat" ]; then
  bad=""
  for fmt in "" --csv --json; do
    "$VMS" vcpus $fmt "$SHARED/kvm-hip24/host.dat" "$SHARED/kvm-hip24/guest-Salamander4.dat" 2>"$TMP/pipe.err" | head -1 >/dev/null
    grep -v ": warning: " "$TMP/pipe.err" | grep -q . && bad="$bad sigpipe$fmt"
    (trap '' PIPE; "$VMS" vcpus $fmt "$SHARED/kvm-hip24/host.dat" "$SHARED/kvm-hip24/guest-Salamander4.dat" 2>"$TMP/pipe.err" | head -1 >/dev/null)
    grep -v ": warning: " "$TMP/pipe.err" | grep -q . && bad="$bad epipe$fmt"
  done
  (trap '' PIPE; "$VMS" dump "$SHARED/kvm-hip24/host.dat" 2>"$TMP/pipe.err" | head -1 >/dev/null)
  grep -v ": warning: " "$TMP/pipe.err" | grep -q . && bad="$bad dump"
  if [ -z "$bad" ]; then ok "closed pipe: quiet (text, CSV, JSON, dump)"; else notok "closed pipe" "$bad: $(cat "$TMP/pipe.err")"; fi
else skip "closed pipe" "shared traces missing"; fi
# unsupported inputs are named, with the formats vmscope reads: hand-made an LTTng CTF
# directory (packetized metadata magic 0x75d11d57, then text naming lttng), a xentrace file
# (first record TRC_TRACE_CPU_CHANGE 0x0001f003 with 2 extra words: header 0x2001f003), a
# plain directory
mkdir -p "$TMP/lttng/kernel" "$TMP/emptydir"
printf '\x57\x1d\xd1\x75 env { tracer_name = "lttng-modules"; };' > "$TMP/lttng/kernel/metadata"
printf '\x03\xf0\x01\x20\x00\x00\x00\x00\x00\x10\x00\x00' > "$TMP/xen.bin"
bad=""
for x in "xen.bin:xentrace file (not supported yet)" "emptydir:is a directory"; do
  f=${x%%:*}; want=${x#*:}
  for c in info report dump; do
    err=$("$VMS" $c "$TMP/$f" 2>&1 >/dev/null); st=$?
    # once the xentrace reader is in, a 12-byte file is a damaged one: exit 2, one line
    if [ "$f" = xen.bin ] && ! grep -qF "not supported yet" <<<"$err"; then
      { [ $st -eq 2 ] && grep -qF "$TMP/$f" <<<"$err" && [ "$(wc -l <<<"$err")" -eq 1 ]; } || bad="$bad $c:$f:$st"
      continue
    fi
    { [ $st -eq 2 ] && grep -qF "$TMP/$f: $want" <<<"$err" && grep -q "vmscope reads trace-cmd trace.dat" <<<"$err" \
      && [ "$(wc -l <<<"$err")" -eq 1 ]; } || bad="$bad $c:$f:$st"
  done
done
if [ -z "$bad" ]; then ok "unsupported inputs named (xentrace, directory), exit 2"; else notok "unsupported inputs" "$bad"; fi
# the hand-made LTTng directory is CTF the reader takes, and damaged: its metadata packet's
# header is text (compression and checksum bytes not 0): one line naming the file and the
# offset, exit 2
bad=""
for f in lttng lttng/kernel; do
  for c in info report dump; do
    err=$("$VMS" $c "$TMP/$f" 2>&1 >/dev/null); st=$?
    { [ $st -eq 2 ] && grep -qF "$TMP/lttng/kernel/metadata: compressed, encrypted or checksummed metadata packet at byte offset 0" <<<"$err" \
      && [ "$(wc -l <<<"$err")" -eq 1 ]; } || bad="$bad $c:$f:$st"
  done
done
if [ -z "$bad" ]; then ok "damaged LTTng metadata: one line with the file and offset, exit 2"; else notok "damaged LTTng metadata" "$bad"; fi
if [ -d "$SHARED/tcp-sync/scp_dest" ]; then
  if "$VMS" info "$SHARED/tcp-sync/scp_dest" >/dev/null 2>"$TMP/scp.err"; then
    ok "the shared LTTng trace is read"; else notok "shared LTTng trace" "$(cat "$TMP/scp.err")"; fi
else skip "the shared LTTng trace" "shared traces missing"; fi
# JSON: schema_version in every document, JSON Lines for the interval commands, floats stay
# floats
if python3 - "$VMS" "$TMP/ns.dat" <<'PY'
import json, subprocess, sys
vms, t = sys.argv[1], sys.argv[2]
def run(*a):
    return subprocess.run([vms, *a, t], capture_output=True, text=True, check=True).stdout
for c in ("report", "sync", "info", "exits"):
    d = json.loads(run(c, "--json"))
    assert d["schema_version"] == 3 and d["command"] == c and d["time_unit"] == "ns", (c, d)
for c in ("vcpus", "threads", "pcpus"):
    lines = run(c, "--json").splitlines()
    head = json.loads(lines[0])
    assert head["schema_version"] == 3 and head["command"] == c and head["time_unit"] == "ns", head
    rows = [json.loads(l) for l in lines[1:]]
    assert all("machine" in r and "start_ns" in r and "end_ns" in r for r in rows), rows
    if c == "vcpus":
        # the hand-made trace: vCPU 0 of tid-2001 in guest mode 1000-5000, 7000-10000, ...
        assert len(rows) > 3, rows
d = json.loads(run("report", "--json"))
for m in d["machines"]:
    for v in m["vcpus"]:
        for k, x in v["share"].items():
            # null exactly where the state cannot be seen (ns null too), else a float
            assert isinstance(x, float) or (x is None and v["ns"][k] is None), (k, x)
        for e in v["exits"]:
            assert isinstance(e["count_share"], float) and isinstance(e["time_share"], float), e
            assert isinstance(e["count"], int) and isinstance(e["total_ns"], int), e
PY
then ok "JSON: schema_version everywhere, JSON Lines for vcpus/threads, floats stay floats"; else notok "JSON shapes"; fi
if "$VMS" synth --events 2000 --out "$TMP/truth" --truth - 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["schema_version"] == 1 and d["command"] == "synth-truth", d'; then
  ok "synth --truth: its document says its schema version"; else notok "synth truth schema_version"; fi
# a guest-only report: what the host would show is unknown (null), never 0, in the vCPU's
# ns, share, hypervisor and halt-polling times and in every guest thread's row
if [ -r "$SHARED/kvm-hip24/guest-Salamander4.dat" ]; then
  if "$VMS" report --json "$SHARED/kvm-hip24/guest-Salamander4.dat" 2>/dev/null | python3 -c '
import json, sys
m = json.load(sys.stdin)["machines"]
assert len(m) == 1 and m[0]["vcpus"][0]["host_visible"] is False, m
v = m[0]["vcpus"][0]
for k in ("vmm", "preempted", "halted"):
    assert v["ns"][k] is None and v["share"][k] is None, (k, v["ns"], v["share"])
assert v["hypervisor_ns"] is None and v["halt_poll_ns"] is None, v
assert v["ns"]["running"] > 0 and isinstance(v["share"]["idle"], float), v
ts = m[0]["threads"]
assert ts and all(t[k] is None for t in ts for k in ("vmm_ns", "preempted_ns", "halted_ns")), ts[:2]
assert all(isinstance(t["running_ns"], int) for t in ts)'; then
    ok "guest-only report --json: the host-side times are null, not 0"; else notok "guest-only report --json"; fi
  out=$("$VMS" report "$SHARED/kvm-hip24/guest-Salamander4.dat" 2>/dev/null)
  if grep -q "vmm unknown  preempted unknown  halted unknown" <<<"$out" \
     && grep -q "no host trace: time in the hypervisor and preemption cannot be seen" <<<"$out"; then
    ok "guest-only report text: vmm, preempted, halted unknown"; else notok "guest-only report text" "$out"; fi
else skip "guest-only report --json" "shared traces missing"; skip "guest-only report text" "shared traces missing"; fi
# cycles are not nanoseconds: the hand-made x86-tsc trace (no TSC2NSEC), values from mk_trace.c
out=$("$VMS" exits --csv "$TMP/tsc.dat" 2>"$TMP/tsc.err"); st=$?
want='machine,vcpu,isa,reason,name,count,total_cycles,min_cycles,max_cycles,mean_cycles,p50_cycles,p90_cycles,p99_cycles,unfinished'
if [ $st -eq 0 ] && [ "$(head -1 <<<"$out")" = "$want" ] && grep -q ",1,30,IO_INSTRUCTION,2,3000,1000,2000,1500," <<<"$out" \
   && grep -q ",1,1,EXTERNAL_INTERRUPT,1,6000,6000,6000,6000," <<<"$out" && grep -q -- "--tsc-hz" "$TMP/tsc.err"; then
  ok "x86-tsc without TSC2NSEC: exits in cycles, labelled, with the --tsc-hz hint"; else notok "cycles" "$out $(cat "$TMP/tsc.err")"; fi
out=$("$VMS" exits --csv --tsc-hz 2G "$TMP/tsc.dat" 2>"$TMP/tsc.err")
if grep -q "total_ns" <<<"$out" && grep -q ",1,30,IO_INSTRUCTION,2,1500,500,1000,750," <<<"$out" \
   && grep -q ",1,1,EXTERNAL_INTERRUPT,1,3000,3000,3000,3000," <<<"$out" && ! grep -q "cycles" "$TMP/tsc.err"; then
  ok "--tsc-hz 2G: a tick is 0.5 ns"; else notok "--tsc-hz" "$out"; fi
out=$("$VMS" report "$TMP/tsc.dat" 2>/dev/null)
if grep -q "9000 cycles in the hypervisor" <<<"$out" && ! grep -qE "[0-9] (s|ms|us|ns)\b" <<<"$out"; then
  ok "report on cycles: no time shown as seconds"; else notok "report cycles" "$out"; fi
# findings on cycles (mk_trace.c tscsteal, derived there): thread 77 stole 2 M of the vCPU's
# 10 M ticks, from tick 2999000 to 4999000 after the first event; at --tsc-hz 2G that is 1 ms
# of 5 ms, from 1.4995 ms to 2.4995 ms
"$MK" tscsteal "$TMP/steal.dat" || notok "mk_trace tscsteal"
out=$("$VMS" report "$TMP/steal.dat" 2>/dev/null | grep "lost 20% of its time")
out2=$("$VMS" report --tsc-hz 2G "$TMP/steal.dat" 2>/dev/null | grep "lost 20% of its time")
if grep -q "(2000.00 k cycles) to host thread task-77 (tid 77) between 2999.00 k cycles and 4999.00 k cycles$" <<<"$out" \
   && ! grep -qE "[0-9] (s|ms|us|ns)\b" <<<"$out" \
   && grep -q "(1.00 ms) to host thread task-77 (tid 77) between 0.001 s and 0.002 s$" <<<"$out2"; then
  ok "report's findings on cycles say cycles (seconds with --tsc-hz)"; else notok "findings cycles" "$out / $out2"; fi
# the HTML page's own tables (steal, histograms) write cycles as report does: task-77's
# 2 M ticks are "2000.00 k cycles" there too, and no time is shown as seconds
"$VMS" html "$TMP/steal.dat" -o "$TMP/steal.html" 2>/dev/null
if grep -q "task-77.*2000.00 k cycles\|2000.00 k cycles.*task-77" "$TMP/steal.html" \
   && ! grep -qE "[0-9] (s|ms|us|ns)<" "$TMP/steal.html"; then
  ok "html on cycles: the steal table in cycles as report writes them"; else notok "html cycles" "$(grep -o "task-77.\{0,200\}" "$TMP/steal.html" | head -3)"; fi
d=$("$VMS" report --json "$TMP/tsc.dat" 2>/dev/null)
if python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["time_unit"]=="cycles"; assert not any(k.endswith("_ns") for k in d), d.keys(); assert "first_cycles" in d' "$d"; then
  ok "report --json on cycles: time_unit cycles, keys _cycles"; else notok "report json cycles"; fi
out=$("$VMS" dump --limit 2 "$TMP/tsc.dat" 2>/dev/null); out2=$("$VMS" dump --limit 2 --tsc-hz 2G "$TMP/tsc.dat" 2>/dev/null)
if [ "$(cut -d' ' -f1 <<<"$out" | tr '\n' ' ')" = "1000c 5000c " ] && [ "$(cut -d' ' -f1 <<<"$out2" | tr '\n' ' ')" = "0.000001 0.000003 " ]; then
  ok "dump on cycles: cycles (suffix c), or seconds with --tsc-hz"; else notok "dump cycles" "$out / $out2"; fi
# warnings reach stderr for every command
bad=""
for c in info report vcpus pcpus threads exits sync dump; do
  err=$("$VMS" $c "$TMP/nokvm.dat" 2>&1 >/dev/null)
  [ $c = dump ] || grep -q "vCPU states not available: no kvm_entry/kvm_exit in any trace.*docs/recording.md" <<<"$err" || bad="$bad nokvm-$c"
  err=$("$VMS" $c "$TMP/ns.dat" "$TMP/ns.dat" 2>&1 >/dev/null)
  [ $c = dump ] || grep -q "is the same file as" <<<"$err" || bad="$bad twice-$c"
  # mk_trace's host has kvm events and no sched_switch: preemption cannot be seen
  [ $c = dump ] || grep -q "ns recorded no sched_switch" <<<"$err" || bad="$bad nosched-$c"
done
if [ -z "$bad" ]; then ok "no KVM events, no sched_switch, the same file twice: warned on stderr by every command"; else notok "warnings" "$bad"; fi
n1=$("$VMS" report --json "$TMP/ns.dat" 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["machines"]))')
n2=$("$VMS" report --json "$TMP/ns.dat" "$TMP/ns.dat" 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["machines"]))')
if [ "$n1" = 2 ] && [ "$n2" = 2 ]; then ok "the same file twice is read once"; else notok "same file twice" "$n1 $n2"; fi
err=$("$VMS" report --guest vm="$TMP/ns.dat" 2>&1 >/dev/null)
if grep -q "its data says it is a host" <<<"$err"; then ok "--guest on a host's trace: warned"; else notok "forced role warning" "$err"; fi
err=$("$VMS" report --host "$TMP/nokvm.dat" "$TMP/ns.dat" 2>&1 >/dev/null)
if grep -q -- "--host .*nokvm.dat: its data has no kvm_exit" <<<"$err" && grep -q "ns.dat\|shares no clock" <<<"$err"; then
  ok "--host on a trace without KVM events: warned"; else notok "--host warning" "$err"; fi
err=$("$VMS" sync "$TMP/ns.dat" "$TMP/nokvm.dat" 2>&1 >/dev/null)
if grep -q "nokvm shares no clock with" <<<"$err"; then ok "traces that share no clock: warned"; else notok "no shared clock" "$err"; fi
# no sched_switch on the host: report says so in the availability table's words and points to
# the recipes (a bare "trace-cmd record -e kvm -e sched" would record no guest)
out=$("$VMS" report "$TMP/ns.dat" 2>/dev/null)
if grep -qF "    preemption and steal not available: ns recorded no sched_switch: when its vCPU threads were preempted cannot be seen (docs/recording.md says how to record it)" <<<"$out" \
   && ! grep -q "trace-cmd record" <<<"$out"; then
  ok "report without host sched_switch: the availability wording and docs/recording.md"
else notok "report without sched_switch" "$(grep -i preempt <<<"$out")"; fi
# unknown pid: what is known (tid and name), never "pid ?"
out=$("$VMS" report "$TMP/ns.dat" 2>/dev/null)
if grep -q "the process of thread 2001 (CPU 0/KVM), pid not recorded" <<<"$out" && ! grep -q "pid ?" <<<"$out"; then
  ok "unknown pid: the thread and its name"; else notok "unknown pid" "$out"; fi
# dump: seconds as trace-cmd prints them, merged in reference time
if [ -r "$SHARED/local/sched-syscalls-2cpu.dat" ] && command -v trace-cmd >/dev/null; then
  a=$("$VMS" dump --limit 200 "$SHARED/local/sched-syscalls-2cpu.dat" 2>/dev/null | cut -d' ' -f1)
  b=$(cd "$TMP" && trace-cmd report "$SHARED/local/sched-syscalls-2cpu.dat" 2>/dev/null | grep -v '^cpus=' | head -200 | sed -E 's/^.*\[[0-9]+\] +([0-9]+\.[0-9]+):.*/\1/')
  if [ -n "$a" ] && [ "$a" = "$b" ]; then ok "dump: seconds exactly as trace-cmd report prints them"; else notok "dump seconds vs trace-cmd" "$(diff <(echo "$a") <(echo "$b") | head -5)"; fi
else skip "dump seconds vs trace-cmd" "trace-cmd or the shared trace missing"; fi
if [ -r "$SHARED/kvm-hip24/host.dat" ]; then
  H=$SHARED/kvm-hip24/host.dat; G=$SHARED/kvm-hip24/guest-Salamander4.dat
  # merged dump: in time order, both machines, and the guest's events at the reference times
  # that vcpus uses: the guest's first event is where its vCPU's first interval starts
  if python3 - "$VMS" "$H" "$G" <<'PY'
import subprocess, sys, json
vms, h, g = sys.argv[1:]
import re
out = subprocess.run([vms, "dump", h, g], capture_output=True, text=True, check=True).stdout.splitlines()
out = [l for l in out if re.match(r"\d+\.\d{6} ", l)]   # (a printk text may hold newlines)
assert len(out) > 100000, len(out)
ts = [float(l.split()[0]) for l in out]
assert ts == sorted(ts)
names = {l.split()[1] for l in out}
assert names == {"host", "guest-Salamander4"}, names
first_guest = next(l for l in out if l.split()[1] == "guest-Salamander4").split()[0]
rows = subprocess.run([vms, "vcpus", "--json", h, g], capture_output=True, text=True, check=True).stdout.splitlines()[1:]
start = min(json.loads(r)["start_ns"] for r in rows if json.loads(r)["machine"] == "guest-Salamander4")
us = (start + 500) // 1000
assert first_guest == "%d.%06d" % (us // 10**6, us % 10**6), (first_guest, start)
PY
  then ok "dump host + guest: merged in reference time, as vcpus counts it"; else notok "merged dump"; fi
  # sync's text: the offset exactly (the JSON double, printed to 17 digits)
  o=$("$VMS" sync "$H" "$G" 2>/dev/null | grep guest-Salamander4)
  j=$("$VMS" sync --json "$H" "$G" 2>/dev/null | python3 -c 'import json,sys; print([m for m in json.load(sys.stdin)["machines"] if m["machine"]=="guest-Salamander4"][0]["offset_ns"])')
  if grep -q "t_ref = 1 \* t + ${j%.0} ns" <<<"$o" && ! grep -q "e+" <<<"$o"; then ok "sync text: the offset exactly"; else notok "sync offset" "$o / $j"; fi
  # --map replaces: vCPU 0 forced onto another VM's thread (453724, 'CPU 0/KVM'): one vCPU,
  # one thread, and containment on that mapping only (the truth: almost nothing inside)
  "$VMS" report --json "$H" "$G" --map guest-Salamander4:0=453724 > "$TMP/map.json" 2>"$TMP/map.err"
  if python3 - "$TMP/map.json" <<'PY' && grep -q "containment" "$TMP/map.err"
import json, sys
d = json.load(open(sys.argv[1]))
g = [m for m in d["machines"] if m["name"] == "guest-Salamander4"][0]
assert [(v["vcpu"], v["host_tid"], v["link"]) for v in g["vcpus"]] == [(0, 453724, "user")], g["vcpus"]
c = g["sync"]["containment"]
assert c["inside"] / c["total"] < 0.01, c
# the thread the GUEST option had linked is no longer fed into vCPU 0: it is left unclaimed,
# an untraced guest of its own
others = [v for m in d["machines"] if m["name"] != "guest-Salamander4" for v in m["vcpus"]]
assert any(v["host_tid"] == 483882 for v in others), others
PY
  then ok "--map replaces the GUEST option's link; containment on the mapping used, warned"; else notok "--map replaces" "$(cat "$TMP/map.err")"; fi
else
  skip "merged dump" "shared traces missing"; skip "sync offset" "shared traces missing"; skip "--map replaces" "shared traces missing"
fi

out=$("$VMS" demo --events 20000 --dir "$TMP/demo" 2>&1); st=$?
if [ $st -eq 0 ] && grep -q "SIMULATED" <<<"$out" && grep -q "vCPU 0" <<<"$out"; then
  ok "demo: simulated pair reported"; else notok "demo" "status $st"; fi
if grep -q "$TMP/demo/report.html" <<<"$out" && grep -q '<canvas id="canvas">' "$TMP/demo/report.html"; then
  ok "demo: writes report.html beside the traces and says where"; else notok "demo: report.html" "not written or not said"; fi
# options anywhere: the page after the traces; a page on an unknown file fails with exit 2
"$VMS" html "$TMP/demo/host.dat" "$TMP/demo/guest.dat" -o "$TMP/demo/again.html" 2>/dev/null
check "html TRACE... -o FILE writes the page" test -s "$TMP/demo/again.html"
check "html on a missing file: exit 2" status_is 2 "$VMS" html /nonexistent.dat -o "$TMP/x.html"

echo "1..$n"

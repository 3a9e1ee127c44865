#!/usr/bin/env bash
# --from/--to/--machine/--vcpu on the analysis commands and the views. Expected values are
# derived by hand from Trace Compass's OneQemuKvm XML (the full rows are derived in
# tests/analysis/test_pcpu_view.c and onequemukvm_expected.h): a window shows the rows that
# overlap it, cut at its bounds, with the state known at its start. Speaks TAP.
set -u
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
SHARED=${VMS_SHARED_DIR:?}/traces
TMP=${VMS_BUILD_DIR}/test-tmp/window
rm -rf "$TMP" && mkdir -p "$TMP"
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "# $2"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
same() {  # NAME WANT-FILE CMD...
  local name=$1 want=$2; shift 2
  if "$@" > "$TMP/got" 2>"$TMP/err" && diff "$want" "$TMP/got" > "$TMP/diff"; then ok "$name"
  else notok "$name" "$(head -4 "$TMP/diff" | tr '\n' ' ') $(head -2 "$TMP/err")"; fi
}
OQK=$SHARED/tracecompass-vm/OneQemuKvm
if [ ! -r "$OQK/host.xml" ]; then skip "window tests" "shared traces missing"; echo "1..$n"; exit 0; fi
X=("$OQK/host.xml" "$OQK/guest.xml")

# vCPU 0's rows over the whole trace: [1,10) unknown, [10,45) running, [45,60) vmm, [60,95)
# running, [95,100) vmm, [100,150) preempted, [150,155) vmm, [155,195) running, [195,210) vmm...
# The window [50,200): [45,60) becomes [50,60), [195,210) becomes [195,200).
cat > "$TMP/vcpus.want" <<'CSV'
machine,vcpu,start_ns,end_ns,status,state
guest,0,50,60,130,vmm
guest,0,60,95,2,running
guest,0,95,100,130,vmm
guest,0,100,150,386,preempted
guest,0,150,155,130,vmm
guest,0,155,195,2,running
guest,0,195,200,130,vmm
CSV
same "vcpus --from 50 --to 200: the rows cut at the window" "$TMP/vcpus.want" "$VMS" vcpus --csv --from 50 --to 200 "${X[@]}"
# the first event is at t=1: +49ns is 50, +0.000000199s is 200
same "vcpus --from +49ns --to +0.000000199s: relative to the trace's start" "$TMP/vcpus.want" "$VMS" vcpus --csv --from +49ns --to +0.000000199s "${X[@]}"

# the fused view from 51 (= +50ns) to 200: host thread 31 since its exit at 45, ...
cat > "$TMP/pcpus.want" <<'CSV'
host,cpu,start_ns,end_ns,machine,vcpu,tid,comm
host,0,51,60,host,,31,qemucpu1
host,0,60,75,guest,0,130,any
host,0,75,95,guest,0,131,any2
host,0,95,100,host,,31,qemucpu1
host,0,100,150,host,,30,any
host,0,150,155,host,,31,qemucpu1
host,0,155,175,guest,0,131,any2
host,0,175,195,guest,0,130,any
host,0,195,200,host,,31,qemucpu1
CSV
same "pcpus --from +50ns --to 200" "$TMP/pcpus.want" "$VMS" pcpus --csv --from +50ns --to 200 "${X[@]}"
# --machine guest: only the rows where the guest runs
grep -e '^host,cpu' -e ',guest,' "$TMP/pcpus.want" > "$TMP/pcpus-guest.want"
same "pcpus --machine guest: the guest's rows only" "$TMP/pcpus-guest.want" "$VMS" pcpus --csv --machine guest --from +50ns --to 200 "${X[@]}"

# exits in [50,200): the one pending at 50 (since 45) ends at 60 (15 ns, its whole cost),
# 95->155 (60 ns), and the one at 195 is still open at 200: 3 exits, 2 costs (total 75, mean
# 37.5 -> 38, nearest-rank p50 15, p90/p99 60), 1 unfinished
cat > "$TMP/exits.want" <<'CSV'
machine,vcpu,isa,reason,name,count,total_ns,min_ns,max_ns,mean_ns,p50_ns,p90_ns,p99_ns,unfinished
guest,0,1,32,MSR_WRITE,3,75,15,60,38,15,60,60,1
CSV
same "exits --from 50 --to 200" "$TMP/exits.want" "$VMS" exits --csv --from 50 --to 200 "${X[@]}"

# overlays cut at the window (thread 130 in VMM from 45, 131 across the preemption)
cat > "$TMP/threads.want" <<'CSV'
machine,tid,start_ns,end_ns,reason,exit_reason,host_tid
guest,130,50,60,vmm,MSR_WRITE,31
guest,131,95,100,vmm,MSR_WRITE,31
guest,131,100,150,preempted,,30
guest,131,150,155,vmm,MSR_WRITE,31
guest,130,195,200,vmm,MSR_WRITE,31
CSV
same "threads --from 50 --to 200" "$TMP/threads.want" "$VMS" threads --csv --from 50 --to 200 "${X[@]}"

# report: the time per state of vCPU 0 within [50,200): vmm 10+5+5+5 = 25, running 35+40 = 75,
# preempted 50
"$VMS" report --json --from 50 --to 200 "${X[@]}" > "$TMP/r.json" 2>"$TMP/err"
if python3 - "$TMP/r.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
g = [m for m in d["machines"] if m["name"] == "guest"][0]
ns = g["vcpus"][0]["ns"]
assert (ns["vmm"], ns["running"], ns["preempted"]) == (25, 75, 50), ns
assert sum(ns.values()) == 150, ns
PY
then ok "report --from 50 --to 200: time per state inside the window"; else notok "report window" "$(cat "$TMP/err")"; fi

printf 'machine,vcpu,start_ns,end_ns,status,state\n' > "$TMP/none.want"
# the guest has one vCPU: --vcpu 1 selects nothing, a usage error (not an empty table)
st=0; "$VMS" vcpus --csv --vcpu 1 "${X[@]}" >"$TMP/got" 2>"$TMP/err" || st=$?
if [ $st -eq 2 ] && [ "$(wc -l < "$TMP/err")" -eq 1 ] && grep -q -- "--vcpu 1" "$TMP/err" && [ ! -s "$TMP/got" ]; then
  ok "vcpus --vcpu 1: no such vCPU, exit 2 and one line"; else notok "vcpus --vcpu 1" "status $st: $(cat "$TMP/err")"; fi
same "vcpus --machine host: a host has no vCPU rows" "$TMP/none.want" "$VMS" vcpus --csv --machine host "${X[@]}"
st=0; "$VMS" vcpus --csv --machine nosuch "${X[@]}" >/dev/null 2>"$TMP/err" || st=$?
if [ $st -eq 2 ] && grep -q nosuch "$TMP/err"; then ok "--machine nosuch: exit 2, named"; else notok "--machine nosuch" "status $st"; fi
st=0; "$VMS" export --machine nosuch -o "$TMP/nosuch.pftrace" "${X[@]}" >/dev/null 2>"$TMP/err" || st=$?
if [ $st -eq 2 ] && grep -q nosuch "$TMP/err" && [ ! -e "$TMP/nosuch.pftrace" ]; then ok "export --machine nosuch: exit 2, no partial file left"
else notok "export --machine nosuch" "status $st; $(ls -l "$TMP/nosuch.pftrace" 2>&1)"; fi
st=0; "$VMS" vcpus --csv --from yesterday "${X[@]}" >/dev/null 2>&1 || st=$?
if [ $st -eq 2 ]; then ok "--from yesterday: exit 2"; else notok "--from yesterday" "status $st"; fi
echo "1..$n"

#!/usr/bin/env bash
# vmscope containers and report's Containers section (issue 23 item 2). Speaks TAP.
#
# 1. ../shared/traces/tracecompass-vm/Containers/withContainers.xml (Trace Compass's stub; a
#    lone trace, no host). Its 15 events, by hand (times in ns):
#      1  cpu0 switch 30 -> 31 (R)          4  statedump 40: level 1 ns 654321
#      4  cpu1 switch 41 -> 42 (41 left R)  6  statedump 40: level 0 ns 4026531836 (root)
#     10  statedump 41: level 1 ns 654321  11  statedump 41: level 0 root
#     13  statedump 42: level 2 ns 987654  14  statedump 42: level 1 ns 654321
#     15  statedump 42: level 0 root       17  cpu1 switch 42 -> 41 (42 left R)
#     24  cpu1 switch 41 -> 42 (41 left R) 25  fork 42 -> 43 myapp, vtids 43,4,2, ns 987654
#     30  cpu0 switch 31 -> 43             30  fork 42 -> 44 myapp2, vtids 44,5,3, ns 987654
#     35  cpu0 switch 43 -> 44 (43 left R): the last event, the end.
#    Containers: 654321 (level 1, in the root 4026531836): threads 40, 41 (deepest level 1);
#    987654 (level 2, in 654321): 42 (statedump), 43 and 44 (forks: 3 levels, ns 987654).
#    Running (from each CPU's first switch, 1 on cpu0 and 4 on cpu1; open ones end at 35):
#      40 0 (never ran)  41 [17,24) 7  42 [4,17) + [24,35) 24  43 [30,35) 5  44 0 (in at 35)
#    Run queue (from a switch that left it runnable, or its fork, to the switch that runs it):
#      40 0  41 [4,17) + [24,35) 24  42 [17,24) 7  43 [25,30) 5 + [35,35) 0  44 [30,35) 5
#    Totals: 654321 running 7, runqueue 24; 987654 running 29, runqueue 17. No host: vmm and
#    preempted unknown (empty in CSV, null in JSON, "unknown" in text, a warning on stderr).
# 2. The OneQemuKvm pair (host.xml as it is; guest.xml with statedump records at t=12 putting
#    guest thread 131 in ns 777 and 130 in ns 888, level 1 each). The vCPU's timeline and the
#    guest thread current on it are derived by hand in tests/analysis/onequemukvm_expected.h:
#    131 current [10,35) [75,175) [225,275) from 375; 130 [35,75) [175,225) [275,375).
#      131: running 25+100+50+0 = 175; runqueue [35,75) [175,225) [275,375) = 190;
#           vmm [95,100) [150,155) [245,260) = 25; preempted [100,150) = 50
#      130: running 40+50+100 = 190; runqueue [10,35) [75,175) [225,275) [375,375) = 175;
#           vmm [45,60) [195,210) [295,300) [350,355) = 40; preempted [300,350) = 50
set -u
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
SHARED=${VMS_SHARED_DIR:?}/traces
TMP=${VMS_BUILD_DIR}/test-tmp/containers
rm -rf "$TMP" && mkdir -p "$TMP"
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "# $2" | head -20; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else notok "$1" "got: $2 | want: $3"; fi; }

WC=$SHARED/tracecompass-vm/Containers/withContainers.xml
if [ ! -f "$WC" ]; then
  for i in 1 2 3 4 5 6; do skip "withContainers.xml" "shared trace missing: $WC"; done
else
  got=$("$VMS" containers --csv "$WC" 2>"$TMP/err"); rc=$?
  want='machine,container,level,parent,tid,comm,running_ns,runqueue_ns,vmm_ns,preempted_ns
withContainers,654321,1,4026531836,40,init,0,0,,
withContainers,654321,1,4026531836,41,lxc-start,7,24,,
withContainers,987654,2,654321,42,init,24,7,,
withContainers,987654,2,654321,43,myapp,5,5,,
withContainers,987654,2,654321,44,myapp2,0,5,,'
  check "withContainers: containers --csv, per thread (exit $rc)" "$got" "$want"
  if grep -q "withContainers: not a guest with its host's trace: the time its containers lost to the VMM and to host preemption is unknown" "$TMP/err"
  then ok "withContainers: the layers below said unknown on stderr"
  else notok "withContainers warning" "$(cat "$TMP/err")"; fi
  got=$("$VMS" containers --json "$WC" 2>/dev/null | python3 -c 'import json,sys
d=json.load(sys.stdin)
for k in d["containers"]:
    print(k["machine"], k["ns_inum"], k["ns_level"], k["parent"], k["running_ns"], k["runqueue_ns"], k["vmm_ns"], k["preempted_ns"], k["below_known"], [t["tid"] for t in k["threads"]])')
  want="withContainers 654321 1 4026531836 7 24 None None False [40, 41]
withContainers 987654 2 654321 29 17 None None False [42, 43, 44]"
  check "withContainers: containers --json, per container totals" "$got" "$want"
  out=$("$VMS" report "$WC" 2>/dev/null)
  sect=$(sed -n '/^Containers /,$p' <<<"$out")
  if grep -q "^  withContainers: container 987654 (level 2, in 654321), 3 threads$" <<<"$sect" &&
     grep -qE "^    42 +init +24 ns +7 ns +unknown +unknown$" <<<"$sect" &&
     grep -qE "^    all +29 ns +17 ns +unknown +unknown$" <<<"$sect" &&
     grep -q "^  withContainers: container 654321 (level 1, in 4026531836), 2 threads$" <<<"$sect"
  then ok "withContainers: report's Containers section"
  else notok "report Containers section" "$sect"; fi
  got=$("$VMS" report --json "$WC" 2>/dev/null | python3 -c 'import json,sys
d=json.load(sys.stdin); print(len(d["containers"]), d["containers"][1]["threads"][0])')
  check "withContainers: report --json containers" "$got" \
    "2 {'tid': 42, 'comm': 'init', 'running_ns': 24, 'runqueue_ns': 7, 'vmm_ns': None, 'preempted_ns': None}"
  "$VMS" containers --bogus "$WC" >/dev/null 2>&1
  check "containers: a bad option is a usage error (exit 2)" "$?" "2"
fi

OQ=$SHARED/tracecompass-vm/OneQemuKvm
if [ ! -f "$OQ/guest.xml" ]; then
  for i in 1 2 3; do skip "OneQemuKvm with containers" "shared trace missing: $OQ"; done
else
  # the guest with its threads' namespaces: statedump records at t=12 (vCPU 0 runs guest code)
  python3 - "$OQ/guest.xml" "$TMP/guest.xml" <<'PY'
import sys
src = open(sys.argv[1]).read()
def sd(tid, level, inum):
    f = [("cpu", 0, "int"), ("tid", tid, "long"), ("pid", tid, "long"), ("name", "t%d" % tid, "string"),
         ("ns_level", level, "long"), ("ns_inum", inum, "long")]
    return ('<event timestamp="12" name="lttng_statedump_process_state">\n' +
            "".join('<field name="%s" value="%s" type="%s" />\n' % x for x in f) + "</event>\n")
add = sd(131, 1, 777) + sd(131, 0, 4026531836) + sd(130, 1, 888) + sd(130, 0, 4026531836)
cut = src.index('<event timestamp="35"')
open(sys.argv[2], "w").write(src[:cut] + add + src[cut:])
PY
  # --offset guest=0: the hand-made timeline is on the two clocks as they are; the convex hull
  # would stretch the guest's by 0.25% (vmscope sync), moving guest boundaries by up to 1 ns
  got=$("$VMS" containers --csv --offset guest=0 "$OQ/host.xml" "$TMP/guest.xml" 2>"$TMP/err2")
  want='machine,container,level,parent,tid,comm,running_ns,runqueue_ns,vmm_ns,preempted_ns
guest,777,1,4026531836,131,any2,175,190,25,50
guest,888,1,4026531836,130,any,190,175,40,50'
  check "OneQemuKvm + namespaces: vmm and preempted per container thread" "$got" "$want"
  check "OneQemuKvm + namespaces: no warning (the host is traced)" "$(cat "$TMP/err2" | grep -c containers)" "0"
  # no namespaces: report says nothing of containers, text or JSON
  out=$("$VMS" report "$OQ/host.xml" "$OQ/guest.xml" 2>&1)
  js=$("$VMS" report --json "$OQ/host.xml" "$OQ/guest.xml" 2>/dev/null)
  if ! grep -q "^Containers" <<<"$out" && ! grep -q '"containers"' <<<"$js"; then
    ok "OneQemuKvm: no namespaces, no Containers section"
  else notok "no namespaces" "$(grep -e '^Containers' -e '"containers"' <<<"$out$js")"; fi
fi
echo "1..$n"

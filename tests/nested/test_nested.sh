#!/usr/bin/env bash
# Nested KVM (issue 23 item 1) on a hand-made three-layer recording (mk_nested.c: L0 the
# physical host, L1 its guest and L2's hypervisor, L2 L1's guest; the events are listed in
# its header, in L0 ns t). Every row below is derived by hand from those events; speaks TAP.
#
# Clocks compose: L2's raw TSC r2 -> L1's TSC (r2 - 500000) / 2 (L2's TIME_SHIFT: offset
# -500000, scaling 2) -> L0's TSC (r1 - 1000000) (L1's TIME_SHIFT) -> ns (L0's TSC2NSEC,
# mult 1 shift 0). L2's switch to task-200 is recorded at r2 = 2505000: (2505000 - 500000) / 2
# = 1002500, - 1000000 = 2500. Without the second hop it would land at 1002500.
#
# The L2 vCPU (l2 vCPU 0, thread 4001 of L1, on L1 vCPU 0 = thread 3001 of L0):
#   [1000, 2500)  unknown: L1's trace starts at 2000, L2's first event (its base) is at 2500
#   [2500, 3000)  running (L1: 4001 in guest mode since 2100; L0: 3001 in guest mode)
#   [3000, 3400)  vmm at l0: L0's EPT_VIOLATION exit of 3001 while L1 thought L2 ran
#                 (status 2: L1's own view says running)
#   [3400, 4000)  running
#   [4000, 4200)  vmm at l0 (L0's EXTERNAL_INTERRUPT exit, reflected to L1 at 4300)
#   [4200, 4300)  running (L0 entered L1 at 4200; L1's kvm_exit of 4001 comes at 4300)
#   [4300, 4500)  vmm at l1 (L1 handles L2's EXTERNAL_INTERRUPT; status 130)
#   [4500, 4700)  vmm at l0 (L1's vCPU in L0's VMREAD exit, within L1's handling)
#   [4700, 5000)  vmm at l1 (until L1's kvm_entry of 4001 at 5000)
#   [5000, 6000)  running
#   [6000, 6100)  vmm at l0 (L0's exit of 3001)
#   [6100, 7000)  preempted at l0 (3001 switched out runnable for L0's task-77)
#   [7000, 7100)  vmm at l0 (3001 back on its CPU, still in its exit until 7100)
#   [7100, 8000)  running
#   [8000, 8100)  vmm at l1 (L1's exit of 4001)
#   [8100, 9000)  preempted at l1 (4001 switched out runnable for L1's own task-77, another
#                 thread than L0's task-77 with the same tid; status 386)
#   [9000, 9100)  vmm at l1
#   [9100, 9500)  running
#   [9500, 10500) idle (L2 switched to its idle task; status 1)
#   [10500, 11000) unknown: L2's trace ends at 10500 (its last event), its base is unknown
#   [11000, 12000) unknown: L1's trace ends at 11000 (its kvm_exit there lasts 0 ns), so
#                 L1's view is unknown to the end (12000, L0's last event)
# The L1 vCPU (l1 vCPU 0) is the one-layer answer L0's events give, unchanged.
#
# Exits (exits --csv): L2's EXTERNAL_INTERRUPT exits [4300, 5000) and [8000, 9100) cost
# 700 + 1100 = 1800 ns, of which L0 took [4500, 4700) = 200 (below_total_ns), L1 1600; the
# IO_INSTRUCTION exit at 11000 is unfinished. L1's exits in L0: EPT_VIOLATION [3000, 3400)
# 400; EXTERNAL_INTERRUPT [4000, 4200) 200 + [6000, 7100) 1100 = 1300, and 12000 unfinished
# (count 3); VMREAD [4500, 4700) 200.
#
# The fused view (pcpus --csv) of L0's CPU 0 stacks L1's CPU 0 (= L1 vCPU 0) on it: while
# L0 shows l1 vCPU 0 in guest mode running L1 thread 4001 and L1 shows 4001 in guest mode
# (l2 vCPU 0), the row names l2 vCPU 0 and its thread (up_ columns). E.g. [4300, 4500): L1 is
# in its exit handling (L1 CPU 0 shows 4001 in host mode): nothing stacked; [9500, 10500):
# L2's idle. L1's own CPU rows are as one layer would give them.
set -u
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
MK=${VMS_MK_NESTED:?}
TMP=${VMS_BUILD_DIR}/test-tmp/nested
rm -rf "$TMP" && mkdir -p "$TMP"
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "# $2"; }
echo "1..27"

if ! "$MK" "$TMP" 2>"$TMP/mk.err"; then
  for i in $(seq 27); do notok "mk_nested" "$(cat "$TMP/mk.err")"; done; exit 0
fi
L0=$TMP/l0.dat L1=$TMP/l1.dat L2=$TMP/l2.dat

cat > "$TMP/l2.want" <<'CSV'
l2,0,1000,2500,0,unknown,
l2,0,2500,3000,2,running,
l2,0,3000,3400,2,vmm,l0
l2,0,3400,4000,2,running,
l2,0,4000,4200,2,vmm,l0
l2,0,4200,4300,2,running,
l2,0,4300,4500,130,vmm,l1
l2,0,4500,4700,130,vmm,l0
l2,0,4700,5000,130,vmm,l1
l2,0,5000,6000,2,running,
l2,0,6000,6100,2,vmm,l0
l2,0,6100,7000,2,preempted,l0
l2,0,7000,7100,2,vmm,l0
l2,0,7100,8000,2,running,
l2,0,8000,8100,130,vmm,l1
l2,0,8100,9000,386,preempted,l1
l2,0,9000,9100,130,vmm,l1
l2,0,9100,9500,2,running,
l2,0,9500,10500,1,idle,
l2,0,10500,11000,0,unknown,
l2,0,11000,12000,0,unknown,
CSV
# L1's vCPU: [1000, 2000) unknown (its base: L1's first event); running; L0's exits vmm at
# l0 ([3000,3400) [4000,4200) [4500,4700) [6000,6100) [7000,7100)), preempted [6100,7000);
# unknown from L1's end at 11000
cat > "$TMP/l1.want" <<'CSV'
l1,0,1000,2000,0,unknown,
l1,0,2000,3000,2,running,
l1,0,3000,3400,130,vmm,l0
l1,0,3400,4000,2,running,
l1,0,4000,4200,130,vmm,l0
l1,0,4200,4500,2,running,
l1,0,4500,4700,130,vmm,l0
l1,0,4700,6000,2,running,
l1,0,6000,6100,130,vmm,l0
l1,0,6100,7000,386,preempted,l0
l1,0,7000,7100,130,vmm,l0
l1,0,7100,11000,2,running,
l1,0,11000,12000,0,unknown,
CSV

"$VMS" vcpus --csv "$L0" "$L1" "$L2" > "$TMP/v.csv" 2>"$TMP/v.err"; st=$?
if [ $st -eq 0 ] && [ "$(head -1 "$TMP/v.csv")" = "machine,vcpu,start_ns,end_ns,status,state,layer" ] &&
   grep '^l2,' "$TMP/v.csv" | diff "$TMP/l2.want" - > "$TMP/v.diff"; then
  ok "vcpus: every L2 vCPU interval and the layer of its cause, by hand"
else notok "vcpus: every L2 vCPU interval and the layer of its cause, by hand" \
  "status $st: $(head -3 "$TMP/v.csv") $(head -8 "$TMP/v.diff") $(cat "$TMP/v.err")"; fi
if grep '^l1,' "$TMP/v.csv" | diff "$TMP/l1.want" - > "$TMP/v1.diff"; then
  ok "vcpus: the L1 vCPU, by hand"
else notok "vcpus: the L1 vCPU, by hand" "$(head -8 "$TMP/v1.diff")"; fi

# The reference is the root of the tree of hosts whatever the order of the files (L1, a host
# that is a guest, is never it): the same rows given L2, L1, L0
"$VMS" vcpus --csv "$L2" "$L1" "$L0" > "$TMP/v2.csv" 2>/dev/null
if sort "$TMP/v.csv" | diff - <(sort "$TMP/v2.csv") > /dev/null; then
  ok "the files in the other order: the same rows (l0 is the reference)"
else notok "the files in the other order: the same rows (l0 is the reference)" \
  "$(grep '^l2,' "$TMP/v2.csv" | head -4)"; fi

# JSON names the layer too (null where there is none)
"$VMS" vcpus --json "$L0" "$L1" "$L2" > "$TMP/v.json" 2>/dev/null
if grep -q '"machine":"l2","vcpu":0,"start_ns":6100,"end_ns":7000,"status":2,"state":"preempted","layer":"l0"' "$TMP/v.json" &&
   grep -q '"start_ns":9500,"end_ns":10500,"status":1,"state":"idle","layer":null' "$TMP/v.json"; then
  ok "vcpus --json: the layer of the L2 vCPU's preemption"
else notok "vcpus --json: the layer of the L2 vCPU's preemption" "$(grep 6100 "$TMP/v.json")"; fi

"$VMS" exits --csv "$L0" "$L1" "$L2" > "$TMP/e.csv" 2>/dev/null
cat > "$TMP/e.want" <<'CSV'
machine,vcpu,isa,reason,name,count,total_ns,min_ns,max_ns,mean_ns,p50_ns,p90_ns,p99_ns,unfinished,layer,below_layer,below_total_ns
l1,0,1,1,EXTERNAL_INTERRUPT,3,1300,200,1100,650,200,1100,1100,1,l0,,0
l1,0,1,48,EPT_VIOLATION,1,400,400,400,400,400,400,400,0,l0,,0
l1,0,1,23,VMREAD,1,200,200,200,200,200,200,200,0,l0,,0
l2,0,1,1,EXTERNAL_INTERRUPT,2,1800,700,1100,900,700,1100,1100,0,l1,l0,200
l2,0,1,30,IO_INSTRUCTION,1,0,0,0,0,0,0,0,1,l1,l0,0
CSV
if diff "$TMP/e.want" "$TMP/e.csv" > "$TMP/e.diff"; then
  ok "exits: an L2 exit's cost split into L0's part and L1's part, by hand"
else notok "exits: an L2 exit's cost split into L0's part and L1's part, by hand" "$(cat "$TMP/e.diff")"; fi

cat > "$TMP/p.want" <<'CSV'
l0,0,1000,1100,l0,,3001,task-3001,,,,
l0,0,1100,2000,l1,0,,,,,,
l0,0,2000,2100,l1,0,4001,task-4001,,,,
l0,0,2100,2500,l1,0,4001,task-4001,l2,0,,
l0,0,2500,3000,l1,0,4001,task-4001,l2,0,200,task-200
l0,0,3000,3400,l0,,3001,task-3001,,,,
l0,0,3400,4000,l1,0,4001,task-4001,l2,0,200,task-200
l0,0,4000,4200,l0,,3001,task-3001,,,,
l0,0,4200,4300,l1,0,4001,task-4001,l2,0,200,task-200
l0,0,4300,4500,l1,0,4001,task-4001,,,,
l0,0,4500,4700,l0,,3001,task-3001,,,,
l0,0,4700,5000,l1,0,4001,task-4001,,,,
l0,0,5000,6000,l1,0,4001,task-4001,l2,0,200,task-200
l0,0,6000,6100,l0,,3001,task-3001,,,,
l0,0,6100,7000,l0,,77,task-77,,,,
l0,0,7000,7100,l0,,3001,task-3001,,,,
l0,0,7100,8000,l1,0,4001,task-4001,l2,0,200,task-200
l0,0,8000,8100,l1,0,4001,task-4001,,,,
l0,0,8100,9000,l1,0,77,task-77,,,,
l0,0,9000,9100,l1,0,4001,task-4001,,,,
l0,0,9100,9500,l1,0,4001,task-4001,l2,0,200,task-200
l0,0,9500,10500,l1,0,4001,task-4001,l2,0,0,idle
l0,0,10500,11000,l1,0,4001,task-4001,l2,0,,
l0,0,11000,12000,l1,0,,,,,,
l1,0,2000,2100,l1,,4001,task-4001,,,,
l1,0,2100,2500,l2,0,,,,,,
l1,0,2500,4300,l2,0,200,task-200,,,,
l1,0,4300,5000,l1,,4001,task-4001,,,,
l1,0,5000,8000,l2,0,200,task-200,,,,
l1,0,8000,8100,l1,,4001,task-4001,,,,
l1,0,8100,9000,l1,,77,task-77,,,,
l1,0,9000,9100,l1,,4001,task-4001,,,,
l1,0,9100,9500,l2,0,200,task-200,,,,
l1,0,9500,10500,l2,0,0,idle,,,,
l1,0,10500,11000,l2,0,,,,,,
l1,0,11000,12000,unknown,,,,,,,
CSV
"$VMS" pcpus --csv "$L0" "$L1" "$L2" > "$TMP/p.csv" 2>"$TMP/p.err"; st=$?
if [ $st -eq 0 ] &&
   [ "$(head -1 "$TMP/p.csv")" = "host,cpu,start_ns,end_ns,machine,vcpu,tid,comm,up_machine,up_vcpu,up_tid,up_comm" ] &&
   tail -n +2 "$TMP/p.csv" | sort -t, -k1,1 -k2,2n -k3,3n | diff "$TMP/p.want" - > "$TMP/p.diff"; then
  ok "pcpus: physical CPU -> L1 vCPU -> L2 vCPU -> L2 thread, by hand"
else notok "pcpus: physical CPU -> L1 vCPU -> L2 vCPU -> L2 thread, by hand" \
  "status $st: $(head -8 "$TMP/p.diff") $(cat "$TMP/p.err")"; fi
# the unknown share: L0 CPU 0 covered 11000 ns, none unknown; L1 CPU 0 10000 ns, [11000,
# 12000) unknown: 1000 of 21000 = 4.76%
if grep -q "not known for 4.76% of their time (1.00 us of 21.00 us" "$TMP/p.err"; then
  ok "pcpus: the unknown share, by hand"
else notok "pcpus: the unknown share, by hand" "$(cat "$TMP/p.err")"; fi

# Without L2's trace (L0 + L1): L1's vCPU thread 4001 is an untraced guest of L1 (tid-4001),
# still nested. In guest mode its state is unknown (no trace of its own says running or idle,
# as for any untraced guest); L1's exits and preemption are at l1, and L0's VMREAD exit inside
# L1's handling [4300, 5000) is at l0 (status 128: L1's view, VMM over an unknown base)
cat > "$TMP/untraced.want" <<'CSV'
tid-4001,0,1000,4300,0,unknown,
tid-4001,0,4300,4500,128,vmm,l1
tid-4001,0,4500,4700,128,vmm,l0
tid-4001,0,4700,5000,128,vmm,l1
tid-4001,0,5000,8000,0,unknown,
tid-4001,0,8000,8100,128,vmm,l1
tid-4001,0,8100,9000,384,preempted,l1
tid-4001,0,9000,9100,128,vmm,l1
tid-4001,0,9100,11000,0,unknown,
tid-4001,0,11000,12000,0,unknown,
CSV
"$VMS" vcpus --csv "$L0" "$L1" > "$TMP/one.csv" 2>/dev/null
if grep '^tid-4001,' "$TMP/one.csv" | diff "$TMP/untraced.want" - > "$TMP/one.diff"; then
  ok "L0 + L1 alone: the untraced L2's layers, by hand"
else notok "L0 + L1 alone: the untraced L2's layers, by hand" "$(cat "$TMP/one.diff")"; fi

# report: L2's clock chain, and what L0 took of the L2 vCPU (vcpus' rows at l0): vmm
# [3000,3400) 400 + [4000,4200) 200 + [4500,4700) 200 + [6000,6100) 100 + [7000,7100) 100
# = 1000 ns; preempted [6100,7000) 900 ns
"$VMS" report "$L0" "$L1" "$L2" > "$TMP/r.txt" 2>/dev/null
if grep -q "clock: timeshift to l0 via l1 (quality exact" "$TMP/r.txt" &&
   grep -q "of which at l0 (the layer below l1):  vmm 1.00 us  preempted 900 ns  halted 0 ns" "$TMP/r.txt"; then
  ok "report: L2's clock via l1, and L0's part of its time, by hand"
else notok "report: L2's clock via l1, and L0's part of its time, by hand" "$(grep -e 'clock:' -e 'of which at' "$TMP/r.txt")"; fi
# who took the L2 vCPU's CPU, per layer: L1's tid 77 [8100, 9000) and L0's tid 77 [6100,
# 7000), 900 ns each (8.2% of 11000), two threads though one tid
if grep -q "task-77              tid 77                       900 ns  8.2% of the time  (l1)" "$TMP/r.txt" &&
   grep -q "task-77              tid 77                       900 ns  8.2% of the time  (l0)" "$TMP/r.txt" &&
   [ "$(grep -c 'task-77 .*(l[01])$' "$TMP/r.txt")" = 3 ]; then
  ok "report: the L2 vCPU's thieves at each layer, one tid at two layers kept apart"
else notok "report: the L2 vCPU's thieves at each layer, one tid at two layers kept apart" "$(grep -A3 'taken by' "$TMP/r.txt")"; fi

# L0's nested events (l0n.dat: L0 again, with kernel 6.8's kvm_entry guest_mode and the
# kvm_nested_* events, listed in mk_nested.c's header) are read: the L2 vCPU's layer comes
# from L0 where L0 says. Against the rows above, by hand:
#   [4000, 4100)  vmm at l0: L2's exit (kvm_nested_vmexit) until L0 reflects it at 4100
#   [4100, 4300)  vmm at l1 (status 2: L1's trace has no exit yet): L0's part of the
#                 reflected exit ended at the inject; from 4200 L1 runs its own code
#                 (kvm_entry guest_mode 0), L1's kvm_exit comes at 4300 (it was "running")
#   [5000, 5050)  vmm at l1: L1's kvm_entry of 4001 is traced before its VMRESUME, L0 says
#                 L1's own code runs until L0's VMRESUME exit [5050, 5150) (vmm at l0:
#                 kvm_nested_vmenter at 5100, L2 entered at 5150 with guest_mode 1)
#   [7900, 7950)  vmm at l0, [7950, 8000) vmm at l1 (kvm_nested_intr_vmexit at 7950)
#   [9100, 9150)  vmm at l1, [9150, 9250) vmm at l0 (VMRESUME), running from 9250
#   [2200, 2250)  vmm at l0n before L2's trace begins (its base unknown, status 0): L0
#                 prepares L2's first entry (kvm_nested_vmenter in L1's VMLAUNCH exit)
# The file is named l0n, so is the machine.
L0N=$TMP/l0n.dat
cat > "$TMP/n2.want" <<'CSV'
l2,0,1000,2200,0,unknown,
l2,0,2200,2250,0,vmm,l0n
l2,0,2250,2500,0,unknown,
l2,0,2500,3000,2,running,
l2,0,3000,3400,2,vmm,l0n
l2,0,3400,4000,2,running,
l2,0,4000,4100,2,vmm,l0n
l2,0,4100,4300,2,vmm,l1
l2,0,4300,4500,130,vmm,l1
l2,0,4500,4700,130,vmm,l0n
l2,0,4700,5000,130,vmm,l1
l2,0,5000,5050,2,vmm,l1
l2,0,5050,5150,2,vmm,l0n
l2,0,5150,6000,2,running,
l2,0,6000,6100,2,vmm,l0n
l2,0,6100,7000,2,preempted,l0n
l2,0,7000,7100,2,vmm,l0n
l2,0,7100,7900,2,running,
l2,0,7900,7950,2,vmm,l0n
l2,0,7950,8000,2,vmm,l1
l2,0,8000,8100,130,vmm,l1
l2,0,8100,9000,386,preempted,l1
l2,0,9000,9100,130,vmm,l1
l2,0,9100,9150,2,vmm,l1
l2,0,9150,9250,2,vmm,l0n
l2,0,9250,9500,2,running,
l2,0,9500,10500,1,idle,
l2,0,10500,11000,0,unknown,
l2,0,11000,12000,0,unknown,
CSV
# L1's vCPU is L0's one-layer answer: the added exits VMLAUNCH [2150, 2250), VMRESUME
# [5050, 5150) and [9150, 9250), EXTERNAL_INTERRUPT [7900, 7980) are vmm at l0n
cat > "$TMP/n1.want" <<'CSV'
l1,0,1000,2000,0,unknown,
l1,0,2000,2150,2,running,
l1,0,2150,2250,130,vmm,l0n
l1,0,2250,3000,2,running,
l1,0,3000,3400,130,vmm,l0n
l1,0,3400,4000,2,running,
l1,0,4000,4200,130,vmm,l0n
l1,0,4200,4500,2,running,
l1,0,4500,4700,130,vmm,l0n
l1,0,4700,5050,2,running,
l1,0,5050,5150,130,vmm,l0n
l1,0,5150,6000,2,running,
l1,0,6000,6100,130,vmm,l0n
l1,0,6100,7000,386,preempted,l0n
l1,0,7000,7100,130,vmm,l0n
l1,0,7100,7900,2,running,
l1,0,7900,7980,130,vmm,l0n
l1,0,7980,9150,2,running,
l1,0,9150,9250,130,vmm,l0n
l1,0,9250,11000,2,running,
l1,0,11000,12000,0,unknown,
CSV
"$VMS" vcpus --csv "$L0N" "$L1" "$L2" > "$TMP/n.csv" 2>"$TMP/n.err"; st=$?
if [ $st -eq 0 ] && grep '^l2,' "$TMP/n.csv" | diff "$TMP/n2.want" - > "$TMP/n2.diff"; then
  ok "vcpus with L0's nested events: the reflected exits' L1 part from the inject, by hand"
else notok "vcpus with L0's nested events: the reflected exits' L1 part from the inject, by hand" \
  "status $st: $(head -12 "$TMP/n2.diff") $(cat "$TMP/n.err")"; fi
if grep '^l1,' "$TMP/n.csv" | diff "$TMP/n1.want" - > "$TMP/n1.diff"; then
  ok "vcpus with L0's nested events: the L1 vCPU, by hand"
else notok "vcpus with L0's nested events: the L1 vCPU, by hand" "$(head -8 "$TMP/n1.diff")"; fi
# exits: L2's EXTERNAL_INTERRUPT exits (L1's [4300, 5000) and [8000, 9100)) as before, L0's
# VMREAD [4500, 4700) within; L1's EXTERNAL_INTERRUPT exits in L0 [4000, 4200) 200, [6000,
# 7100) 1100, [7900, 7980) 80, 12000 unfinished: 4, 1380 ns, min 80, p50 200
"$VMS" exits --csv "$L0N" "$L1" "$L2" > "$TMP/ne.csv" 2>/dev/null
if grep -qx 'l2,0,1,1,EXTERNAL_INTERRUPT,2,1800,700,1100,900,700,1100,1100,0,l1,l0n,200' "$TMP/ne.csv" &&
   grep -qx 'l1,0,1,1,EXTERNAL_INTERRUPT,4,1380,80,1100,460,200,1100,1100,1,l0n,,0' "$TMP/ne.csv" &&
   grep -qx 'l1,0,1,24,VMRESUME,2,200,100,100,100,100,100,100,0,l0n,,0' "$TMP/ne.csv"; then
  ok "exits with L0's nested events, by hand"
else notok "exits with L0's nested events, by hand" "$(cat "$TMP/ne.csv")"; fi

# latency names the layer of each cause (l2w.dat: L2 with task-300 woken at 5900, run at
# 9500; mk_nested.c). With l0.dat the wait's L2 rows above give: guest-runqueue [5900,
# 6000) + [7100, 8000) + [9100, 9500) = 1400; preempted at l0 [6100, 7000) 900 + at l1
# [8100, 9000) 900 = 1800 (task-77 at each layer: two culprits of 900, the first, L0's,
# named); exits at l0 [6000, 6100) + [7000, 7100) = 200, at l1 [8000, 8100) + [9000, 9100)
# = 200. Below the guest's host (l1): preempted 900, exits 200.
H='machine,tid,comm,wakeup,run,latency_ns,guest_runqueue_ns,preempted_ns,exits_ns,halted_wakeup_ns,unknown_ns,top_cause,culprit,layer,below_layer,below_preempted_ns,below_exits_ns,below_halted_wakeup_ns'
"$VMS" latency --csv "$L0" "$L1" "$TMP/l2w.dat" > "$TMP/lat.csv" 2>"$TMP/lat.err"
if [ "$(head -1 "$TMP/lat.csv")" = "$H" ] &&
   grep -qx 'l2,300,task-300,5900,9500,3600,1400,1800,400,0,0,preempted,host task-77 (tid 77) at l0,l0,l0,900,200,0' "$TMP/lat.csv"; then
  ok "latency: each cause's layer (preempted and exits at l0 and l1), by hand"
else notok "latency: each cause's layer (preempted and exits at l0 and l1), by hand" "$(cat "$TMP/lat.csv" "$TMP/lat.err")"; fi
# With L0's nested events (l0n.dat; the L2 rows of the nested-events test): guest-runqueue
# [5900, 6000) + [7100, 7900) + [9250, 9500) = 1150; preempted as above; exits at l0n
# [6000, 6100) + [7000, 7100) + [7900, 7950) + [9150, 9250) = 350, at l1 [7950, 8000) +
# [8000, 8100) + [9000, 9100) + [9100, 9150) = 300
"$VMS" latency --json "$L0N" "$L1" "$TMP/l2w.dat" > "$TMP/lat.json" 2>/dev/null
if grep -q '"latency_ns":3600,"ns":{"guest-runqueue":1150,"preempted":1800,"exits":650,"halted-wakeup":0,"unknown":0},"top_cause":"preempted","culprit":"host task-77 (tid 77) at l0n","layer":"l0n","below_layer":"l0n","below":{"ns":{"preempted":900,"exits":350,"halted-wakeup":0}}' "$TMP/lat.json"; then
  ok "latency --json with L0's nested events: the layers of the causes, by hand"
else notok "latency --json with L0's nested events: the layers of the causes, by hand" "$(head -2 "$TMP/lat.json")"; fi

# The Perfetto export names the layer: every l2 vcpus row with a layer (by hand above, with
# L0's nested events) is a slice "STATE at LAYER" of the same start and length on l2's vCPU
# 0 track (the Chrome JSON form of the same timeline: us), and no other slice there has one
"$VMS" export -o "$TMP/n.json" "$L0N" "$L1" "$L2" > /dev/null 2>"$TMP/x.err"
if python3 - "$TMP/n.json" "$TMP/n2.want" > "$TMP/x.diff" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d['traceEvents'] if isinstance(d, dict) else d
pid = [e['pid'] for e in ev if e.get('ph') == 'M' and e.get('name') == 'process_name'
       and e['args']['name'].startswith('l2 ')][0]
tid = [e['tid'] for e in ev if e.get('ph') == 'M' and e.get('name') == 'thread_name'
       and e['pid'] == pid and e['args']['name'] == 'vCPU 0'][0]
got = sorted((round(e['ts'] * 1000), round(e['dur'] * 1000), e['name']) for e in ev
             if e.get('ph') == 'X' and e['pid'] == pid and e['tid'] == tid and ' at ' in e['name'])
want = []
for line in open(sys.argv[2]):
    m, v, a, b, st, state, layer = line.strip().split(',')
    if layer:
        want.append((int(a), int(b) - int(a), state + ' at ' + layer))
if got != sorted(want) or len(want) != 19:
    print('got', got, 'want', sorted(want))
    sys.exit(1)
PY
then ok "export: the L2 vCPU's slices named with their layer (vmm at l0n, preempted at l1), = vcpus"
else notok "export: the L2 vCPU's slices named with their layer (vmm at l0n, preempted at l1), = vcpus" "$(head -c 600 "$TMP/x.diff") $(cat "$TMP/x.err")"; fi

# The HTML page's slices name the layer (its tooltips show a slice's name): L0's VMREAD in
# L1's handling of L2's exit "exit VMREAD at l0n", L1's handling "exit EXTERNAL_INTERRUPT at
# l1", who ran instead at each layer "instead: task-77 (77) at l0n" / "... at l1"
"$VMS" html -o "$TMP/n.html" "$L0N" "$L1" "$L2" > /dev/null 2>&1
miss=""
for nm in "exit VMREAD at l0n" "exit EXTERNAL_INTERRUPT at l1" "exit EPT_VIOLATION at l0n" \
          "instead: task-77 (77) at l0n" "instead: task-77 (77) at l1"; do
  grep -qF "\"$nm\"" "$TMP/n.html" || miss="$miss [$nm]"
done
if [ -z "$miss" ]; then
  ok "html: the slices of a nested model name their layer"
else notok "html: the slices of a nested model name their layer" "missing:$miss"; fi

# L0's nested events without L2's trace (l0n + l1): L1 does not say what tid-4001 runs in
# guest mode (unknown, as in the test without them), but L0 does where L0 itself handles L2's
# code: in L0's exits after kvm_nested_vmexit or kvm_nested_vmenter, and off its CPU while
# L2's code ran (status 0: L1's view unknown). By hand from l0n's events:
#   vmm at l0n [2200, 2250) (vmenter .. entry), [3000, 3400), [4000, 4100) (.. the
#   inject), [5100, 5150), [6000, 6100), [7000, 7100), [7900, 7950), [9200, 9250);
#   preempted at l0n [6100, 7000); L1's own rows as without them; unknown elsewhere
cat > "$TMP/nu.want" <<'CSV'
tid-4001,0,1000,2200,0,unknown,
tid-4001,0,2200,2250,0,vmm,l0n
tid-4001,0,2250,3000,0,unknown,
tid-4001,0,3000,3400,0,vmm,l0n
tid-4001,0,3400,4000,0,unknown,
tid-4001,0,4000,4100,0,vmm,l0n
tid-4001,0,4100,4300,0,unknown,
tid-4001,0,4300,4500,128,vmm,l1
tid-4001,0,4500,4700,128,vmm,l0n
tid-4001,0,4700,5000,128,vmm,l1
tid-4001,0,5000,5100,0,unknown,
tid-4001,0,5100,5150,0,vmm,l0n
tid-4001,0,5150,6000,0,unknown,
tid-4001,0,6000,6100,0,vmm,l0n
tid-4001,0,6100,7000,0,preempted,l0n
tid-4001,0,7000,7100,0,vmm,l0n
tid-4001,0,7100,7900,0,unknown,
tid-4001,0,7900,7950,0,vmm,l0n
tid-4001,0,7950,8000,0,unknown,
tid-4001,0,8000,8100,128,vmm,l1
tid-4001,0,8100,9000,384,preempted,l1
tid-4001,0,9000,9100,128,vmm,l1
tid-4001,0,9100,9200,0,unknown,
tid-4001,0,9200,9250,0,vmm,l0n
tid-4001,0,9250,11000,0,unknown,
tid-4001,0,11000,12000,0,unknown,
CSV
"$VMS" vcpus --csv "$L0N" "$L1" > "$TMP/nu.csv" 2>/dev/null
if grep '^tid-4001,' "$TMP/nu.csv" | diff "$TMP/nu.want" - > "$TMP/nu.diff"; then
  ok "L0 (nested events) + L1 alone: L0's part of the untraced L2's time, by hand"
else notok "L0 (nested events) + L1 alone: L0's part of the untraced L2's time, by hand" "$(cat "$TMP/nu.diff")"; fi

# --map NAME@HOST (l2u.dat: L2 with no link to L1, mk_nested.c: another TRACEID, no
# TIME_SHIFT; its own ns are t + 1250000). Mapped by hand into L1 (thread 4001 of l1) and
# offset back to L0's ns, it is the linked L2: every interval and cause of l2.want above,
# and its exits' L0/L1 split
U="$L0 $L1 $TMP/l2u.dat --offset l2u=-1250000"
"$VMS" vcpus --csv $U --map l2u@l1:0=4001 > "$TMP/u.csv" 2>"$TMP/u.err"; st=$?
if [ $st -eq 0 ] && grep '^l2u,' "$TMP/u.csv" | sed 's/^l2u,/l2,/' | diff "$TMP/l2.want" - > "$TMP/u.diff" &&
   grep '^l1,' "$TMP/u.csv" | diff "$TMP/l1.want" - > /dev/null; then
  ok "--map l2u@l1:0=4001: the unlinked L2 mapped into L1, the linked L2's rows"
else notok "--map l2u@l1:0=4001: the unlinked L2 mapped into L1, the linked L2's rows" \
  "status $st: $(head -8 "$TMP/u.diff") $(cat "$TMP/u.err")"; fi
"$VMS" exits --csv $U --map l2u@l1:0=4001 > "$TMP/ue.csv" 2>/dev/null
if grep '^l2,' "$TMP/e.want" | diff - <(grep '^l2u,' "$TMP/ue.csv" | sed 's/^l2u,/l2,/') > /dev/null; then
  ok "--map NAME@HOST: exits (a single checked pass) split at l0 and l1 as the linked L2's"
else notok "--map NAME@HOST: exits (a single checked pass) split at l0 and l1 as the linked L2's" "$(cat "$TMP/ue.csv")"; fi
# without the host, the map goes to the reference (l0), which never shows thread 4001; a
# host that contradicts the trace's link, or names no trace, is refused (exit 2, one line)
"$VMS" vcpus --csv $U --map l2u:0=4001 > /dev/null 2>"$TMP/u1.err"; st1=$?
"$VMS" vcpus --csv "$L0" "$L1" "$L2" --map l2@l0:0=3001 > "$TMP/u2.out" 2>"$TMP/u2.err"; st2=$?
"$VMS" vcpus --csv $U --map l2u@nosuch:0=4001 > /dev/null 2>"$TMP/u3.err"; st3=$?
if [ $st1 = 2 ] && grep -qx 'vmscope vcpus: --map l2u:0=4001: no event of l0 shows thread 4001' "$TMP/u1.err" &&
   [ $st2 = 2 ] && [ ! -s "$TMP/u2.out" ] &&
   grep -qx "vmscope vcpus: --map l2@l0:0=3001: l2's trace links it to l1" "$TMP/u2.err" &&
   [ $st3 = 2 ] && grep -qx 'vmscope vcpus: --map l2u@nosuch: no trace named nosuch' "$TMP/u3.err"; then
  ok "--map NAME@HOST: without it l0's thread; a contradicting or unknown host refused"
else notok "--map NAME@HOST: without it l0's thread; a contradicting or unknown host refused" \
  "$st1 $(cat "$TMP/u1.err") / $st2 $(cat "$TMP/u2.err") / $st3 $(cat "$TMP/u3.err")"; fi

# L0 as LTTng records it (l0c/: a CTF kernel trace of l0n's events with lttng-modules' names,
# mk_nested.c: kvm_x86_nested_vmrun, kvm_x86_nested_vmexit, kvm_x86_nested_vmexit_inject,
# kvm_x86_nested_intr_vmexit; kvm_x86_entry without guest_mode). The CTF trace has no
# TRACEID, so L1 is linked by hand (--map l1:0=3001; its clock --offset l1=-1000000: L1's
# ns are t + 1000000) and L2 follows L1 by its TIME_SHIFT (L1's offset included). By hand:
# the mode LTTng's nested events imply is the one l0n's guest_mode fields state (vmrun at
# 2200, 5100, 9200 and the exits of L2's code at 3000, 4000, 6000, 7900 put the L1 vCPU in
# L2's code, the inject at 4100 and the interrupt's exit at 7950 in L1's: each entry's
# guest_mode in l0n), so every L2 and L1 row is l0n's above, the layer named l0c
C="$TMP/l0c $L1 $L2 --map l1:0=3001 --offset l1=-1000000"
"$VMS" vcpus --csv $C > "$TMP/c.csv" 2>"$TMP/c.err"; st=$?
if [ $st -eq 0 ] && [ ! -s "$TMP/c.err" ] &&
   grep '^l2,' "$TMP/c.csv" | sed 's/,l0c$/,l0n/' | diff "$TMP/n2.want" - > "$TMP/c.diff" &&
   grep '^l1,' "$TMP/c.csv" | sed 's/,l0c$/,l0n/' | diff "$TMP/n1.want" - >> "$TMP/c.diff"; then
  ok "LTTng L0 (CTF, kvm_x86_nested_*): the L2 and L1 vCPUs' intervals and layers, by hand"
else notok "LTTng L0 (CTF, kvm_x86_nested_*): the L2 and L1 vCPUs' intervals and layers, by hand" \
  "status $st: $(head -12 "$TMP/c.diff") $(cat "$TMP/c.err")"; fi
# exits as with l0n (above), and L2's clock: TIME_SHIFT to L1, whose clock the user gave
"$VMS" exits --csv $C > "$TMP/ce.csv" 2>/dev/null
"$VMS" report $C > "$TMP/cr.txt" 2>/dev/null
if grep -qx 'l2,0,1,1,EXTERNAL_INTERRUPT,2,1800,700,1100,900,700,1100,1100,0,l1,l0c,200' "$TMP/ce.csv" &&
   grep -qx 'l1,0,1,1,EXTERNAL_INTERRUPT,4,1380,80,1100,460,200,1100,1100,1,l0c,,0' "$TMP/ce.csv" &&
   grep -qx 'l1,0,1,24,VMRESUME,2,200,100,100,100,100,100,100,0,l0c,,0' "$TMP/ce.csv" &&
   grep -q 'clock: timeshift to l0c via l1 (quality approximate' "$TMP/cr.txt"; then
  ok "LTTng L0: exits split as with trace.dat's nested events; L2's clock through L1's --offset"
else notok "LTTng L0: exits split as with trace.dat's nested events; L2's clock through L1's --offset" \
  "$(cat "$TMP/ce.csv") $(grep clock: "$TMP/cr.txt")"; fi

# Containers by layer (l2c/: l2w's events as LTTng records them in a guest with two PID
# namespaces, mk_nested.c; no TIME_SHIFT: mapped into L1 by --map l2c@l1, its clock is L0's
# ns). Its vCPU is l2.want's to 9100, then running [9100, 10500) (task-300 from 9500, not
# idle), unknown from L2's end. By hand:
#   task-200 (container 4026532100) runs [2500, 9500) and [10500, 12000: the end) = 8500;
#     of it vmm at l1 [4300,4500) + [4700,5000) + [8000,8100) + [9000,9100) = 700 and at
#     l0 [3000,3400) + [4000,4200) + [4500,4700) + [6000,6100) + [7000,7100) = 1000: 1700,
#     below (l0) 1000; preempted at l1 [8100,9000) 900 and at l0 [6100,7000) 900: 1800,
#     below 900; never in the run queue (it blocks at 9500: S)
#   task-300 (4026532200) woken at 5900, runs at 9500: runqueue 3600; runs [9500, 10500)
#     1000 with its vCPU running: vmm 0, preempted 0
C2="$L0 $L1 $TMP/l2c --map l2c@l1:0=4001 --offset l2c=0"
"$VMS" containers --csv $C2 > "$TMP/k.csv" 2>"$TMP/k.err"; st=$?
cat > "$TMP/k.want" <<'CSV'
machine,container,level,parent,tid,comm,running_ns,runqueue_ns,vmm_ns,preempted_ns,layer,below_layer,below_vmm_ns,below_preempted_ns
l2c,4026532100,1,4026531836,200,task-200,8500,0,1700,1800,l1,l0,1000,900
l2c,4026532200,1,4026531836,300,task-300,1000,3600,0,0,l1,l0,0,0
CSV
if [ $st -eq 0 ] && diff "$TMP/k.want" "$TMP/k.csv" > "$TMP/k.diff"; then
  ok "containers --csv: an L2 container's lost time at l1 and at l0, by hand"
else notok "containers --csv: an L2 container's lost time at l1 and at l0, by hand" \
  "status $st: $(cat "$TMP/k.diff" "$TMP/k.err")"; fi
"$VMS" containers --json $C2 > "$TMP/k.json" 2>/dev/null
"$VMS" containers $C2 > "$TMP/k.txt" 2>/dev/null
if python3 - "$TMP/k.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
k = d['containers'][0]
want = {'machine': 'l2c', 'ns_inum': 4026532100, 'layer': 'l1', 'below_layer': 'l0',
        'vmm_ns': 1700, 'preempted_ns': 1800, 'below_vmm_ns': 1000, 'below_preempted_ns': 900}
t = k['threads'][0]
sys.exit(0 if all(k[x] == v for x, v in want.items()) and t['tid'] == 200 and
         t['below_vmm_ns'] == 1000 and t['below_preempted_ns'] == 900 else 1)
PY
then
  if grep -q 'l2c: container 4026532100 (level 1, in 4026531836), 1 thread; vmm and preempted at l1 or below, the part below at l0' "$TMP/k.txt" &&
     grep -qE '^ +200 +task-200 +8.50 us +0 ns +1.70 us +1.80 us +1.00 us +900 ns$' "$TMP/k.txt"; then
    ok "containers --json and text: the layers named, the part at l0"
  else notok "containers --json and text: the layers named, the part at l0" "$(cat "$TMP/k.txt")"; fi
else notok "containers --json and text: the layers named, the part at l0" "$(head -c 800 "$TMP/k.json")"; fi

# steal's "other threads" per layer (l0s, l1s, l2s: l0, l1, l2 with each preemption taken by
# 300 threads in turn, tids 1000 .. 1299 on both L0 and L1, 3 ns each; mk_nested.c). The L2
# vCPU loses its CPU first at L0 [6100, 7000): L0's 1000 .. 1255 are its first 256 thieves
# (VMS_STEAL_MAX_THIEVES), itemised, 768 ns; L0's 1256 .. 1299 are "other threads" at l0s:
# 44 threads, 132 ns. Then at L1 [8100, 9000) the table is full: all 300 of L1's threads,
# 900 ns, are "other threads" at l1 (merged with L0's they would be 1032 ns and, the tids
# being the same numbers, 300 distinct instead of 344). The L1 vCPU: the same 256 + 44 at
# l0s, 132 ns, and nothing at l1.
"$VMS" report --json "$TMP/l0s.dat" "$TMP/l1s.dat" "$TMP/l2s.dat" > "$TMP/s.json" 2>"$TMP/s.err"; st=$?
if [ $st -eq 0 ] && python3 - "$TMP/s.json" > "$TMP/s.out" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
def vcpu(name):
    for m in d['machines']:
        if m['name'] == name:
            return m['vcpus'][0]
def check(name, want_others):
    st = vcpu(name)['steal']
    th = [e for e in st if e['kind'] == 'thread']
    ot = [(e['layer'], e['ns'], e['threads'], e['threads_at_least']) for e in st
          if e['kind'] == 'other threads']
    ok = (len(th) == 256 and sum(e['ns'] for e in th) == 768 and
          all(e['layer'] == 'l0s' for e in th) and
          sorted(e['tid'] for e in th) == list(range(1000, 1256)) and ot == want_others)
    if not ok:
        print(name, len(th), sum(e['ns'] for e in th), ot)
    return ok
sys.exit(0 if check('l2', [('l0s', 132, 44, False), ('l1', 900, 300, False)]) and
         check('l1', [('l0s', 132, 44, False)]) else 1)
PY
then ok "steal: other threads kept per layer (44 at l0s, 300 at l1), by hand"
else notok "steal: other threads kept per layer (44 at l0s, 300 at l1), by hand" "status $st: $(cat "$TMP/s.out") $(head -c 300 "$TMP/s.err")"; fi
if grep -q 'vmscope report: warning: 2 vCPUs had their CPU taken by more threads than are itemised (the first 256 of each, 1048576 in all): the others. 1.16 us is summed as "other threads"' "$TMP/s.err"; then
  ok "steal: the warning counts each vCPU once (2 vCPUs, 132 + 132 + 900 ns)"
else notok "steal: the warning counts each vCPU once (2 vCPUs, 132 + 132 + 900 ns)" "$(cat "$TMP/s.err")"; fi

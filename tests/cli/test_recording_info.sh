#!/usr/bin/env bash
# `vmscope info`'s table of what can be known (docs/recording.md), on every shared trace, a
# synthesized pair and a trace recorded here; and the demo's closing line. Speaks TAP.
#
# Expected tables, by hand from what each trace holds (../shared/README.md, docs/formats.md,
# the event counts `trace-cmd report` / babeltrace2 / xenalyze show):
# - kvm-hip24: the host recorded kvm_entry and kvm_exit only (no sched_switch, no
#   sched_wakeup); the guest sched_switch and sched_wakeup, TIME_SHIFT to the host. So exits
#   and the clock are known; preemption and halted vs preempted are not; vCPU states,
#   overlays, latency and the fused view are partial, each for the host's missing
#   sched_switch. Its host alone: the same host rows; no guest trace for the guest rows.
# - tracecompass-vm/OneQemuKvm: host sched_switch, kvm_entry/exit, vmsync; guest
#   sched_switch and vmsync (no sched_wakeup anywhere, no kvm_vcpu_wakeup): preemption
#   partial (sched_wakeup), halted partial (kvm_vcpu_wakeup), latency not available (the
#   guest's sched_wakeup), the rest available (clock by the vmsync hull).
# - tcp-sync: two LTTng kernel traces, no KVM event: nothing about vCPUs; the clocks by the
#   TCP hull (inet_sock_local_out/in).
# - xen/xentrace.bin: a Xen host (runstates are scheduling, VMEXIT/VMENTRY the exits), no
#   guest trace: host rows available, guest rows not, vCPU states and fused view partial.
# - a synthesized pair (vmscope synth: every kind on both sides, GUEST and TIME_SHIFT):
#   everything available.
# - a trace recorded here (root: tracefs, sched events in an instance of our own, `trace-cmd
#   extract -B`): no KVM events; its sched_switch count equals trace-cmd report's.
set -u
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
SHARED=${VMS_SHARED_DIR:?}/traces
TMP=${VMS_BUILD_DIR}/test-tmp/recording-info
rm -rf "$TMP" && mkdir -p "$TMP"
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "# $2"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

# table NAME WANT TRACE...: WANT is "key=level[:missing] ..." in the table's order, level
# yes / partial / no
table() {
  local name=$1 want=$2; shift 2
  local got
  got=$("$VMS" info --json "$@" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
lv = {"available": "yes", "partial": "partial", "not available": "no"}
print(" ".join(a["analysis"] + "=" + lv[a["availability"]] + (":" + a["missing"] if a["missing"] else "")
               for a in d["analyses"]))')
  if [ "$got" = "$want" ]; then ok "$name: the table expected by hand"; else notok "$name" "want $want
# got  $got"; fi
}

H=$SHARED/kvm-hip24/host.dat G=$SHARED/kvm-hip24/guest-Salamander4.dat
if [ -r "$H" ] && [ -r "$G" ]; then
  table "kvm-hip24 pair" "vcpu_states=partial:sched_switch preemption=no:sched_switch halted_vs_preempted=no:sched_switch exits=yes guest_threads=partial:sched_switch latency=partial:sched_switch pcpu_view=partial:sched_switch clock_sync=yes" "$H" "$G"
  table "kvm-hip24 host alone" "vcpu_states=partial:sched_switch preemption=no:sched_switch halted_vs_preempted=no:sched_switch exits=yes guest_threads=no:guest trace latency=no:guest trace pcpu_view=partial:sched_switch clock_sync=yes" "$H"
  out=$("$VMS" info "$H" "$G" 2>&1)
  if grep -q "^  preemption and steal   not available  host recorded no sched_switch" <<<"$out" \
     && grep -q "^what can be known (docs/recording.md" <<<"$out" \
     && grep -q "^  clock sync             available      guest-Salamander4 to host by timeshift" <<<"$out"; then
    ok "kvm-hip24: the text table names the host's missing sched_switch and the TIME_SHIFT sync"
  else notok "kvm-hip24 text table" "$(sed -n '/^what can/,$p' <<<"$out")"; fi
  # the other commands warn in the same words, pointing to docs/recording.md
  bad=""
  for c in report vcpus exits threads latency pcpus; do
    err=$("$VMS" $c "$H" "$G" 2>&1 >/dev/null)
    grep -q "warning: preemption and steal not available: host recorded no sched_switch: when its vCPU threads were preempted cannot be seen (docs/recording.md says how to record it)" <<<"$err" || bad="$bad $c"
  done
  if [ -z "$bad" ]; then ok "kvm-hip24: every command warns with the table's words and docs/recording.md"; else notok "warnings" "not in:$bad"; fi
else
  skip "kvm-hip24 tables" "../shared/traces/kvm-hip24 missing"
fi
X=$SHARED/tracecompass-vm/OneQemuKvm
if [ -r "$X/host.xml" ]; then
  table "tracecompass-vm OneQemuKvm" "vcpu_states=yes preemption=partial:sched_wakeup halted_vs_preempted=partial:kvm_vcpu_wakeup exits=yes guest_threads=yes latency=no:sched_wakeup pcpu_view=yes clock_sync=yes" "$X/host.xml" "$X/guest.xml"
else skip "tracecompass-vm table" "../shared/traces/tracecompass-vm missing"; fi
if [ -d "$SHARED/tcp-sync/scp_src" ]; then
  table "tcp-sync LTTng pair" "vcpu_states=no:kvm_entry preemption=no:kvm_entry halted_vs_preempted=no:kvm_entry exits=no:kvm_exit guest_threads=no:guest trace latency=no:guest trace pcpu_view=no:kvm_entry clock_sync=yes" "$SHARED/tcp-sync/scp_src" "$SHARED/tcp-sync/scp_dest"
else skip "tcp-sync table" "../shared/traces/tcp-sync missing"; fi
if [ -r "$SHARED/xen/xentrace.bin" ]; then
  table "xentrace" "vcpu_states=partial:guest trace preemption=yes halted_vs_preempted=yes exits=yes guest_threads=no:guest trace latency=no:guest trace pcpu_view=partial:guest trace clock_sync=yes" "$SHARED/xen/xentrace.bin"
else skip "xentrace table" "../shared/traces/xen missing"; fi

"$VMS" synth --events 20000 --out "$TMP/pair" >/dev/null 2>&1
table "synthesized pair" "vcpu_states=yes preemption=yes halted_vs_preempted=yes exits=yes guest_threads=yes latency=yes pcpu_view=yes clock_sync=yes" "$TMP/pair/host.dat" "$TMP/pair/guest.dat"
# folded over guests: the pair plus kvm-hip24's guest, whose TIME_SHIFT names a host not
# given (no host trace, no clock): one guest of two for the guest rows, partial
if [ -r "$G" ]; then
  table "synthesized pair + a guest without its host" "vcpu_states=yes preemption=yes halted_vs_preempted=yes exits=yes guest_threads=partial:host trace latency=partial:host trace pcpu_view=yes clock_sync=partial:clock sync" "$TMP/pair/host.dat" "$TMP/pair/guest.dat" "$G"
  "$VMS" info "$TMP/pair/host.dat" "$TMP/pair/guest.dat" "$G" 2>/dev/null | grep -q "^  clock sync             partial        guest-Salamander4 shares no clock with host (its TIME_SHIFT names a host trace not given" \
    && ok "a guest without its host: the clock row says its TIME_SHIFT names a host not given" || notok "TIME_SHIFT without host"
fi
# the synthesized guest alone: its own view only, and nothing of the host's
table "synthesized guest alone" "vcpu_states=partial:kvm_entry preemption=no:kvm_entry halted_vs_preempted=no:kvm_entry exits=no:kvm_exit guest_threads=no:host trace latency=no:host trace pcpu_view=no:kvm_entry clock_sync=yes" "$TMP/pair/guest.dat"

# the demo's next step: the recording command and the report on one's own files
out=$("$VMS" demo --events 20000 --dir "$TMP/demo" 2>/dev/null)
if tail -n 3 <<<"$out" | grep -q "trace-cmd record .*-A " && tail -n 3 <<<"$out" | grep -q "vmscope report trace.dat trace-GUEST.dat" \
   && tail -n 3 <<<"$out" | grep -q "docs/recording.md"; then
  ok "demo: ends with how to record one's own host and report on it"
else notok "demo next step" "$(tail -n 3 <<<"$out")"; fi

# recording here: root, trace-cmd, tracefs (mounted by this test when it is not, and
# unmounted again); events in an instance of our own, so that nothing else tracing on this
# machine (tests/tracedat's recording test uses the top buffer) is disturbed
T=/sys/kernel/tracing
if [ "$(id -u)" != 0 ]; then skip "a trace recorded here" "needs root (tracefs)";
elif ! command -v trace-cmd >/dev/null; then skip "a trace recorded here" "trace-cmd is not installed";
else
  mounted=""
  if [ ! -d "$T/instances" ] && mount -t tracefs nodev "$T" 2>/dev/null; then mounted=1; fi
  if [ ! -w "$T/instances" ]; then skip "a trace recorded here" "tracefs cannot be mounted at $T"
  else
    inst=vmscope-rec-$$
    I=$T/instances/$inst
    mkdir "$I" && echo 0 > "$I/tracing_on" \
      && echo 'sched:sched_switch sched:sched_wakeup sched:sched_process_fork sched:sched_process_exec' > "$I/set_event" \
      && echo 1 > "$I/tracing_on"
    for i in 1 2 3 4 5 6 7 8; do /bin/true; sleep 0.01; done
    echo 0 > "$I/tracing_on"
    trace-cmd extract -B "$inst" -o "$TMP/rec.dat" >/dev/null 2>&1
    rmdir "$I" 2>/dev/null
    [ -n "$mounted" ] && umount "$T"
    want=$(trace-cmd report "$TMP/rec.dat" 2>/dev/null | grep -c " sched_switch: ")
    got=$("$VMS" info --json "$TMP/rec.dat" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(v for k, v in d["traces"][0]["event_counts"].items() if k.endswith("sched_switch")))' 2>/dev/null)
    if [ -s "$TMP/rec.dat" ] && [ "${want:-0}" -gt 0 ] && [ "$got" = "$want" ]; then
      ok "a trace recorded here (trace-cmd extract -B): info reads it, $got sched_switch as trace-cmd report"
    else notok "recorded trace" "trace-cmd report: ${want:-?} sched_switch, vmscope info: ${got:-?}"; fi
    table "a trace recorded here" "vcpu_states=no:kvm_entry preemption=no:kvm_entry halted_vs_preempted=no:kvm_entry exits=no:kvm_exit guest_threads=no:guest trace latency=no:guest trace pcpu_view=no:kvm_entry clock_sync=yes" "$TMP/rec.dat"
  fi
fi
echo "1..$n"

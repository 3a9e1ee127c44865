#!/usr/bin/env bash
# The .pftrace follows the rules of Perfetto's trace processor that it relies on (docs/perfetto.md,
# each rule with the line of Perfetto's code that applies it): check_perfetto_rules.py decodes
# the file by itself (its own wire decoder) and checks sequence flags, interning, clocks, track
# descriptors, slice nesting per track and the thread/process ids in names against the ids the
# trace records, read by another tool than the export (trace_ids.py): trace-cmd report for the
# synthesized pair (exported to a file, and to a FIFO: the model pass, which names pids),
# Trace Compass XML fields for OneQemuKvm, `vmscope dump` (the reader, not the export) for
# kvm-hip24 (trace-cmd 3.1 cannot open its zlib-compressed v7 files), none for xentrace.bin
# (Xen records domains and vCPUs, no thread ids: a tid in a name would be made up). Then the
# checker is shown to fail on files that break one rule each (mutate_pftrace.py). TAP.
set -u
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
SHARED=${VMS_SHARED_DIR:?}
SRC=${VMS_SOURCE_DIR:?}
TMP=${VMS_BUILD_DIR}/test-tmp/perfetto-rules
T=$SRC/tests/views
rm -rf "$TMP" && mkdir -p "$TMP"
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "# $2"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

rules() {   # NAME PFTRACE IDS-ARGS...: the checker passes
  local name=$1 f=$2; shift 2
  if out=$(python3 "$T/check_perfetto_rules.py" "$f" "$@" 2>&1); then
    ok "$name: the .pftrace follows Perfetto's rules (docs/perfetto.md)"; echo "$out"
  else notok "$name: the .pftrace follows Perfetto's rules" "$(tail -2 <<<"$out" | tr '\n' ' ')"; fi
}

export_to() {   # OUT TRACE...
  "$VMS" export -o "$@" 2>>"$TMP/err"
}

H=$SHARED/traces/kvm-hip24
if [ -r "$H/host.dat" ]; then
  d=$TMP/kvm && mkdir -p "$d"
  if export_to "$d/t.pftrace" "$H/host.dat" "$H/guest-Salamander4.dat" &&
     "$VMS" dump "$H/host.dat" 2>>"$TMP/err" | python3 "$T/trace_ids.py" dump > "$d/host.ids" &&
     "$VMS" dump "$H/guest-Salamander4.dat" 2>>"$TMP/err" | python3 "$T/trace_ids.py" dump > "$d/guest.ids"; then
    rules kvm-hip24 "$d/t.pftrace" --ids host="$d/host.ids" --ids guest-Salamander4="$d/guest.ids"
  else notok "kvm-hip24: export and ids" "$(tail -2 "$TMP/err")"; fi
else skip "kvm-hip24 rules" "shared traces missing"; fi

O=$SHARED/traces/tracecompass-vm/OneQemuKvm
if [ -r "$O/host.xml" ]; then
  d=$TMP/oqk && mkdir -p "$d"
  if export_to "$d/t.pftrace" "$O/host.xml" "$O/guest.xml" &&
     python3 "$T/trace_ids.py" xml "$O/host.xml" > "$d/host.ids" &&
     python3 "$T/trace_ids.py" xml "$O/guest.xml" > "$d/guest.ids"; then
    rules OneQemuKvm "$d/t.pftrace" --ids host="$d/host.ids" --ids guest="$d/guest.ids"
    # one rule broken at a time: the checker must say so (exit 1, "broken rule")
    for w in noneeds noclear iid pid tid cross; do
      if ! python3 "$T/mutate_pftrace.py" "$d/t.pftrace" "$d/m-$w.pftrace" $w 2>"$d/m-$w.err"; then
        notok "mutation $w" "$(cat "$d/m-$w.err")"; continue; fi
      st=0; out=$(python3 "$T/check_perfetto_rules.py" "$d/m-$w.pftrace" --ids host="$d/host.ids" \
                  --ids guest="$d/guest.ids" 2>&1) || st=$?
      if [ $st = 1 ] && grep -q "^broken rule: " <<<"$out"; then ok "OneQemuKvm, $w: the checker fails ($out)"
      else notok "OneQemuKvm, $w: the checker fails" "status $st: $out"; fi
    done
  else notok "OneQemuKvm: export and ids" "$(tail -2 "$TMP/err")"; fi
else skip "OneQemuKvm rules" "shared traces missing"; fi

X=$SHARED/traces/xen/xentrace.bin
if [ -r "$X" ]; then
  d=$TMP/xen && mkdir -p "$d"
  if export_to "$d/t.pftrace" --cpu-hz 2.4G "$X" && python3 "$T/trace_ids.py" none > "$d/none.ids"; then
    rules xentrace.bin "$d/t.pftrace" --ids xentrace="$d/none.ids" --ids d0="$d/none.ids" --ids d14="$d/none.ids"
  else notok "xentrace.bin: export" "$(tail -2 "$TMP/err")"; fi
else skip "xentrace.bin rules" "shared traces missing"; fi

# lanes: 60 host threads that each run instead of the vCPUs waiting on CPU 0 (hostile_gen
# xml-entry-tids, as in test_export.sh): 1,770 slices on lanes, whose descriptors and events
# are on their group's sequence, each naming its lane
d=$TMP/lanes && mkdir -p "$d"
if "${VMS_BUILD_DIR}/tests/hostile/hostile_gen" xml-entry-tids 60 "$d/h.xml" && export_to "$d/t.pftrace" "$d/h.xml" &&
   python3 "$T/trace_ids.py" xml "$d/h.xml" > "$d/h.ids"; then
  rules lanes "$d/t.pftrace" --ids h="$d/h.ids"
else notok "lanes: hostile_gen, export, ids" "$(tail -2 "$TMP/err")"; fi

d=$TMP/synth && mkdir -p "$d"
if ! command -v trace-cmd >/dev/null; then skip "synth rules" "trace-cmd missing (the ids' reference)"
elif "$VMS" synth --events 20000 --out "$d" >/dev/null 2>&1 &&
   trace-cmd report -i "$d/host.dat" 2>/dev/null | python3 "$T/trace_ids.py" tracecmd > "$d/host.ids" &&
   trace-cmd report -i "$d/guest.dat" 2>/dev/null | python3 "$T/trace_ids.py" tracecmd > "$d/guest.ids" &&
   export_to "$d/t.pftrace" "$d/host.dat" "$d/guest.dat"; then
  rules synth "$d/t.pftrace" --ids host="$d/host.ids" --ids demo-guest="$d/guest.ids"
  # to a FIFO: the model pass, which knows the VMM's pid from exec and fork (names say it)
  rm -f "$d/fifo" && mkfifo "$d/fifo" && { cat "$d/fifo" > "$d/fifo.pftrace" & }
  if export_to "$d/fifo" "$d/host.dat" "$d/guest.dat" && wait && grep -aq ", pid 4242" "$d/fifo.pftrace"; then
    rules "synth (FIFO: pids)" "$d/fifo.pftrace" --ids host="$d/host.ids" --ids demo-guest="$d/guest.ids"
  else notok "synth to a FIFO names pid 4242" "$(tail -2 "$TMP/err")"; fi
else notok "synth pair, ids and export" "$(tail -2 "$TMP/err")"; fi
echo "1..$n"

#!/usr/bin/env bash
# vmscope export end to end: the .pftrace decodes with protoc against Perfetto's own merged
# proto (../shared/reference/perfetto/perfetto_trace.proto), and check_export.py compares
# its tracks and slices with pcpus/vcpus/threads/exits/report on the same input (see its
# docstring), and the Chrome JSON with the .pftrace. Inputs: the kvm-hip24 pair (every exit
# of the guest a slice), Trace Compass's OneQemuKvm, and a simulated pair with steal
# (vmscope synth, 20 k events). Speaks TAP.
set -u
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
SHARED=${VMS_SHARED_DIR:?}
SRC=${VMS_SOURCE_DIR:?}
TMP=${VMS_BUILD_DIR}/test-tmp/export
rm -rf "$TMP" && mkdir -p "$TMP"
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "# $2"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
PROTO=$SHARED/reference/perfetto

st=0; "$VMS" export "$SHARED/traces/tracecompass-vm/OneQemuKvm/host.xml" >/dev/null 2>&1 || st=$?
if [ $st -eq 2 ]; then ok "export without -o: exit 2"; else notok "export without -o" "status $st"; fi

check() {   # NAME TRACE...
  local name=$1; shift
  local d=$TMP/$name
  mkdir -p "$d"
  if ! "$VMS" export -o "$d/t.pftrace" "$@" 2>"$d/err" || ! "$VMS" export -o "$d/t.json" "$@" 2>>"$d/err"; then
    notok "$name: export" "$(cat "$d/err")"; return; fi
  if ! command -v protoc >/dev/null; then skip "$name: export decodes and agrees" "protoc missing (scripts/deps.sh installs protobuf-compiler)"; return; fi
  if [ ! -r "$PROTO/perfetto_trace.proto" ]; then skip "$name: export decodes and agrees" "$PROTO missing"; return; fi
  if ! protoc --proto_path="$PROTO" --decode=perfetto.protos.Trace perfetto_trace.proto < "$d/t.pftrace" > "$d/t.txt" 2>"$d/err"; then
    notok "$name: protoc decodes the .pftrace" "$(head -3 "$d/err")"; return; fi
  ok "$name: protoc --decode=perfetto.protos.Trace reads the .pftrace"
  # to a regular file the export takes the session's checked single pass (its file emptied
  # and written again when the events link more than the metadata: kvm-hip24); to a FIFO,
  # which cannot be rewritten, the model pass first: the same bytes. (Not on the synthesized
  # pair: its VMM's pid is said only by events, exec and fork, so the model pass names its
  # threads "comm (tid), pid N" and the single pass cannot: vmscope/export.h.)
  case $name in kvm-hip24|OneQemuKvm)
    rm -f "$d/fifo" && mkfifo "$d/fifo" && { cat "$d/fifo" > "$d/fifo.pftrace" & }
    if "$VMS" export -o "$d/fifo" "$@" 2>>"$d/err" && wait && cmp -s "$d/fifo.pftrace" "$d/t.pftrace"; then
      ok "$name: the one-pass export (file) equals the model-pass export (FIFO)"
    else notok "$name: the one-pass export (file) equals the model-pass export (FIFO)" "$(cmp "$d/fifo.pftrace" "$d/t.pftrace" 2>&1)"; fi;;
  esac
  "$VMS" pcpus --csv "$@" > "$d/p.csv" 2>>"$d/err" &&
  "$VMS" vcpus --csv "$@" > "$d/v.csv" 2>>"$d/err" &&
  "$VMS" threads --csv "$@" > "$d/t.csv" 2>>"$d/err" &&
  "$VMS" exits --json "$@" > "$d/e.json" 2>>"$d/err" &&
  "$VMS" report --json --top 1000000 "$@" > "$d/r.json" 2>>"$d/err"
  if out=$(python3 "$SRC/tests/views/check_export.py" "$d/t.txt" "$d/t.json" "$d/p.csv" "$d/v.csv" \
           "$d/t.csv" "$d/e.json" "$d/r.json" 2>&1); then
    ok "$name: tracks and slices agree with pcpus/vcpus/threads/exits/report; JSON nests"; echo "$out"
  else notok "$name: tracks and slices agree" "$(tail -3 <<<"$out" | tr '\n' ' ')"; fi
}

HOST=$SHARED/traces/kvm-hip24/host.dat
if [ -r "$HOST" ]; then check kvm-hip24 "$HOST" "$SHARED/traces/kvm-hip24/guest-Salamander4.dat"
else skip "kvm-hip24 export" "shared traces missing"; fi
OQK=$SHARED/traces/tracecompass-vm/OneQemuKvm
if [ -r "$OQK/host.xml" ]; then check OneQemuKvm "$OQK/host.xml" "$OQK/guest.xml"
else skip "OneQemuKvm export" "shared traces missing"; fi
if "$VMS" synth --events 20000 --out "$TMP/synth" >/dev/null 2>&1; then
  check synth "$TMP/synth/host.dat" "$TMP/synth/guest.dat"
  # --deflate: every packet a compressed_packets block whose inflation (zlib, in Python) is
  # the plain export, byte for byte
  d=$TMP/synth
  if "$VMS" export --deflate -o "$d/z.pftrace" "$TMP/synth/host.dat" "$TMP/synth/guest.dat" 2>>"$d/err" &&
     out=$(python3 "$SRC/tests/views/inflate_pftrace.py" "$d/z.pftrace" "$d/z.inflated" 2>&1) &&
     cmp -s "$d/z.inflated" "$d/t.pftrace"; then
    ok "synth: export --deflate inflates to the plain .pftrace"; echo "$out"
  else notok "synth: export --deflate inflates to the plain .pftrace" "${out:-} $(cmp "$d/z.inflated" "$d/t.pftrace" 2>&1)"; fi
  # a window and a filter: every command gets the same options, so they still agree
  check synth-window --from +0.3s --to +0.6s --machine demo-guest "$TMP/synth/host.dat" "$TMP/synth/guest.dat"
else notok "synth pair for the export test"; fi
# lanes: 60 threads switched in one after another on CPU 0, each entering a vCPU of its own
# and left runnable (bench_adversarial's xml-entry-tids); thread i (1..59) runs instead of
# the i vCPUs waiting there, one lane each: its tracks "t (1000+i)", "#2" .. "#i", whose
# slices (steal) check agrees with report's; by hand, 1+2+...+59 = 1,770 steal slices on as
# many lanes, 1,770 - 59 = 1,711 of them numbered
GEN=${VMS_BUILD_DIR}/tests/hostile/hostile_gen
mkdir -p "$TMP/lanes"
if ! "$GEN" xml-entry-tids 60 "$TMP/lanes/h.xml"; then notok "lanes: hostile_gen xml-entry-tids 60"
elif check lanes "$TMP/lanes/h.xml" && [ -s "$TMP/lanes/t.txt" ]; then   # (else said by check)
  got=$(grep -c 'name: "t (10[0-9][0-9]) #[0-9]*"' "$TMP/lanes/t.txt")
  steal=$(grep -o 'steal slices [0-9]*' <<<"$(python3 "$SRC/tests/views/check_export.py" "$TMP/lanes/t.txt" \
    "$TMP/lanes/t.json" "$TMP/lanes/p.csv" "$TMP/lanes/v.csv" "$TMP/lanes/t.csv" "$TMP/lanes/e.json" "$TMP/lanes/r.json")")
  if [ "$got" = 1711 ] && [ "$steal" = "steal slices 1770" ]; then ok "lanes: 1,711 numbered lanes, 1,770 steal slices"
  else notok "lanes: 1,711 numbered lanes, 1,770 steal slices" "got $got numbered, $steal"; fi
fi
echo "1..$n"

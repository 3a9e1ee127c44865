#!/usr/bin/env bash
# The export in two threads (stage 1 reads and publishes records, stage 2 writes: lib/output/
# export_front.c) writes the same bytes as the export in one (VMS_EXPORT_THREADS=0): the
# .pftrace and the .json of a synthesized pair (VMS_EXPORT_TEST_EVENTS events, 500 k by
# default: its records fill the bounded queue ~50 times over, so stage 1 waits for stage 2)
# and of the kvm-hip24 pair (to a regular file, a checked single pass that resets: the queue
# is drained and stage 2 made again); the model-pass path too (to a FIFO). A failed write in
# stage 2 (/dev/full: ENOSPC) says the same line with the same exit status as unthreaded.
# Also run under ThreadSanitizer by scripts/test.sh (suite threads, fewer events). TAP.
set -u
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
SHARED=${VMS_SHARED_DIR:?}
TMP=${VMS_BUILD_DIR}/test-tmp/export-threads
EVENTS=${VMS_EXPORT_TEST_EVENTS:-500000}
rm -rf "$TMP" && mkdir -p "$TMP"
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "# $2"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

same() {   # NAME EXT TRACE...: threaded and unthreaded exports are equal, and not empty
  local name=$1 ext=$2; shift 2
  local d=$TMP/$name
  mkdir -p "$d"
  if ! "$VMS" export -o "$d/t.$ext" "$@" 2>"$d/err" ||
     ! VMS_EXPORT_THREADS=0 "$VMS" export -o "$d/u.$ext" "$@" 2>>"$d/err"; then
    notok "$name: export .$ext" "$(tail -2 "$d/err")"; return; fi
  if [ -s "$d/t.$ext" ] && cmp -s "$d/t.$ext" "$d/u.$ext"; then
    ok "$name: .$ext threaded = unthreaded ($(stat -c %s "$d/t.$ext") bytes)"
  else notok "$name: .$ext threaded = unthreaded" "$(cmp "$d/t.$ext" "$d/u.$ext" 2>&1)"; fi
}

if "$VMS" synth --events "$EVENTS" --seed 7 --out "$TMP/synth" >/dev/null 2>&1; then
  same synth pftrace "$TMP/synth/host.dat" "$TMP/synth/guest.dat"
  same synth json "$TMP/synth/host.dat" "$TMP/synth/guest.dat"
  same synth-window pftrace --from +0.1s --to +0.4s --machine demo-guest "$TMP/synth/host.dat" "$TMP/synth/guest.dat"
else notok "synth pair of $EVENTS events"; fi

H=$SHARED/traces/kvm-hip24
if [ -r "$H/host.dat" ]; then
  same kvm-hip24 pftrace "$H/host.dat" "$H/guest-Salamander4.dat"
  same kvm-hip24 json "$H/host.dat" "$H/guest-Salamander4.dat"
  # a FIFO cannot be rewritten: the model pass, then one analysis pass with no reset
  d=$TMP/fifo && mkdir -p "$d" && mkfifo "$d/f"
  { cat "$d/f" > "$d/got.pftrace" & }
  if "$VMS" export -o "$d/f" "$H/host.dat" "$H/guest-Salamander4.dat" 2>"$d/err" && wait &&
     cmp -s "$d/got.pftrace" "$TMP/kvm-hip24/u.pftrace"; then ok "kvm-hip24: threaded to a FIFO = unthreaded to a file"
  else notok "kvm-hip24: threaded to a FIFO = unthreaded to a file" "$(tail -1 "$d/err")"; fi
else skip "kvm-hip24 exports" "shared traces missing"; fi

# ENOSPC in stage 2: one line, exit 1, as unthreaded
if [ -w /dev/full ] && [ -r "$TMP/synth/host.dat" ]; then
  st=0; "$VMS" export -o /dev/full "$TMP/synth/host.dat" "$TMP/synth/guest.dat" 2>"$TMP/full.t" || st=$?
  su=0; VMS_EXPORT_THREADS=0 "$VMS" export -o /dev/full "$TMP/synth/host.dat" "$TMP/synth/guest.dat" 2>"$TMP/full.u" || su=$?
  if [ $st = 1 ] && [ $su = 1 ] && cmp -s "$TMP/full.t" "$TMP/full.u" &&
     grep -qx 'vmscope export: cannot write /dev/full' "$TMP/full.t"; then
    ok "/dev/full: 'cannot write', exit 1, threaded as unthreaded"
  else notok "/dev/full: 'cannot write', exit 1" "threaded $st: $(head -2 "$TMP/full.t" | tr '\n' ' '); unthreaded $su: $(head -2 "$TMP/full.u" | tr '\n' ' ')"; fi
else skip "/dev/full" "no /dev/full or no synthesized pair"; fi
echo "1..$n"

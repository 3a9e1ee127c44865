#!/usr/bin/env bash
# The readers' worker pool changes no byte: `report --json`, `vcpus --csv`, `exits --csv` and
# `export -o x.pftrace` at --threads 2, 4 and the default (one per online CPU) write what
# --threads 1 (the reading thread alone, no worker) writes, on the real
# local/sched-syscalls-2cpu.dat (v7 zstd), the kvm-hip24 pair (v7 zlib) and a synthesized
# pair (v7 zstd); and, for the CTF reader's pool (lib/input/ctf/ctf_pool.c), the LTTng
# kernel traces tcp-sync/scp_src + scp_dest and a synthesized LTTng pair, and the shared
# xentrace file (lib/input/xentrace/xentrace_pool.c; tests/xen/test_xen_threads_same.sh has
# more). VMS_TRACEDAT_POOL_MIN=0, VMS_CTF_POOL_MIN=0 and VMS_XENTRACE_POOL_MIN=0 put every file
# through the pool however small. Hostile trace.dat shapes (tests/common/hostile_shapes.c) stay bounded with the pool
# on: the same exit status and messages as alone, and a peak RSS within 64 MiB of alone's
# (the sanitizers' own overhead differs: TSan's is ~250 MB). Also run
# under ThreadSanitizer by scripts/test.sh (suite threads; VMS_THREADS_TEST_EVENTS sizes the
# synthesized pair, VMS_THREADS_TEST_LIGHT=1 leaves out the 2.43 M-event trace). TAP.
set -u
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
GEN=${VMS_BUILD_DIR}/tests/hostile/hostile_gen
SHARED=${VMS_SHARED_DIR:?}
TMP=${VMS_BUILD_DIR}/test-tmp/threads-same
EVENTS=${VMS_THREADS_TEST_EVENTS:-300000}
export VMS_TRACEDAT_POOL_MIN=0 VMS_CTF_POOL_MIN=0 VMS_XENTRACE_POOL_MIN=0
rm -rf "$TMP" && mkdir -p "$TMP"
# ok, notok, skip, same (the outputs at --threads 2, 4 and the default against --threads 1)
. "$(dirname "$0")/../common/threads_same.sh"

L=$SHARED/traces/local/sched-syscalls-2cpu.dat
if [ "${VMS_THREADS_TEST_LIGHT:-0}" = 1 ]; then skip "sched-syscalls-2cpu" "VMS_THREADS_TEST_LIGHT"
elif [ -r "$L" ]; then
  # no guest, so export writes 0 bytes (no vCPU track): nothing to compare there
  CMDS="report vcpus exits" same sched-syscalls "$L"
else skip "sched-syscalls-2cpu" "shared trace missing"; fi

H=$SHARED/traces/kvm-hip24
if [ -r "$H/host.dat" ]; then same kvm-hip24 "$H/host.dat" "$H/guest-Salamander4.dat"
else skip "kvm-hip24" "shared traces missing"; fi

if "$VMS" synth --events "$EVENTS" --seed 11 --out "$TMP/synth" >/dev/null 2>&1; then
  same synth "$TMP/synth/host.dat" "$TMP/synth/guest.dat"
else notok "synth pair of $EVENTS events"; fi

S=$SHARED/traces/tcp-sync
if [ -r "$S/scp_src/metadata" ]; then
  # two LTTng kernel traces with no KVM events: export writes nothing to compare
  CMDS="report vcpus exits" same tcp-sync "$S/scp_src" "$S/scp_dest"
else skip "tcp-sync" "shared traces missing"; fi

if "$VMS" synth --format lttng --events "$EVENTS" --seed 12 --out "$TMP/lttng" >/dev/null 2>&1; then
  same synth-lttng "$TMP/lttng/host" "$TMP/lttng/guest"
else notok "synth LTTng pair of $EVENTS events"; fi

X=$SHARED/traces/xen/xentrace.bin
if [ -r "$X" ]; then same xentrace "$X"
else skip "xentrace" "shared trace missing"; fi

# run OUT ERR CMD...: prints "STATUS PEAK_KB" (ru_maxrss of the child, ASan's own included)
run() { python3 "$(dirname "$0")/../common/peak_run.py" "$@"; }

# chunk-bomb: 64 CPUs of a chunk of 16 MiB of zeros in a 303 KB file: the chunk budget (64 MiB
# + 32 x the file size = 73 MiB) stops it with the workers decompressing ahead too (each
# worker's slot is charged to the same budget). many-streams and print-big read whole.
for shape in chunk-bomb many-streams print-big ctf-shared-packet xen-lost-markers xen-high-vcpus; do
  f=$TMP/$shape.dat
  if ! "$GEN" $shape 0 "$f"; then notok "hostile_gen $shape"; continue; fi
  read -r s1 k1 < <(run "$TMP/$shape.1.out" "$TMP/$shape.1.err" "$VMS" report --threads 1 "$f")
  read -r s4 k4 < <(run "$TMP/$shape.4.out" "$TMP/$shape.4.err" "$VMS" report --threads 4 "$f")
  if [ "$s1" = "$s4" ] && cmp -s "$TMP/$shape.1.out" "$TMP/$shape.4.out" &&
     cmp -s "$TMP/$shape.1.err" "$TMP/$shape.4.err" && [ "$k4" -lt $((k1 + 65536)) ]; then
    ok "$shape: --threads 4 = --threads 1 (exit $s1, same messages), peak $k4 kB < alone's $k1 kB + 64 MiB"
  else notok "$shape: --threads 4 = --threads 1, bounded" "exit $s1/$s4, peak $k1/$k4 kB; $(head -c 200 "$TMP/$shape.4.err")"; fi
done
if grep -q "decompressed chunks would need more than 73 MiB" "$TMP/chunk-bomb.4.err"; then
  ok "chunk-bomb: the chunk budget's message with the pool on"
else notok "chunk-bomb: the chunk budget's message" "$(head -c 300 "$TMP/chunk-bomb.4.err")"; fi
echo "1..$n"

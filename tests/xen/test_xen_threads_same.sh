#!/usr/bin/env bash
# The xentrace reader's worker pool (lib/input/xentrace/xentrace_pool.c) changes no byte:
# `report --json`, `vcpus --csv` and `exits --csv` (--cpu-hz 2.4G) at --threads 2, 4 and the
# default (one per online CPU) write what --threads 1 (the reading thread alone, no worker)
# writes, on ../shared/traces/xen/xentrace.bin (8 CPUs, 3.9 MB: VMS_XENTRACE_POOL_MIN=0 puts
# it through the pool) and on copies of it laid end to end by bench/xen_big.py
# (VMS_XEN_THREADS_COPIES, 8 by default: 64 CPUs, 31 MB, above the pool's threshold, read
# with the default one). Damaged files (cut inside a block, a block header or a record
# overwritten, hostile_gen's xentrace shapes) give, with the pool on, the exit status and
# messages of --threads 1 (one error line for a damaged file), within a time limit (no hang).
# (Meson's timeout bounds the rest.)
# Suites xen and threads (ThreadSanitizer, scripts/test.sh). TAP.
set -u
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
GEN=${VMS_BUILD_DIR}/tests/hostile/hostile_gen
SHARED=${VMS_SHARED_DIR:?}
SRC=${VMS_SOURCE_DIR:?}
TMP=${VMS_BUILD_DIR}/test-tmp/xen-threads-same
COPIES=${VMS_XEN_THREADS_COPIES:-8}
rm -rf "$TMP" && mkdir -p "$TMP"
# ok, notok, skip, same (the outputs at --threads 2, 4 and the default against --threads 1)
. "$(dirname "$0")/../common/threads_same.sh"
CMDS="report vcpus exits"   # (export: tests/tracedat/test_threads_same.sh has it)

# damaged NAME FILE: report at --threads 1 and 4, the pool forced: the same exit status and
# stderr; a refused file says so in one line
damaged() {
  local name=$1 f=$2 s1 s4
  VMS_XENTRACE_POOL_MIN=0 timeout 120 "$VMS" report --threads 1 "$f" > "$TMP/$name.1.out" 2> "$TMP/$name.1.err"; s1=$?
  VMS_XENTRACE_POOL_MIN=0 timeout 120 "$VMS" report --threads 4 "$f" > "$TMP/$name.4.out" 2> "$TMP/$name.4.err"; s4=$?
  local lines; lines=$(wc -l < "$TMP/$name.4.err")
  if [ "$s1" = "$s4" ] && [ "$s4" -lt 124 ] && cmp -s "$TMP/$name.1.out" "$TMP/$name.4.out" &&
     cmp -s "$TMP/$name.1.err" "$TMP/$name.4.err" && { [ "$s4" = 0 ] || [ "$lines" -le 2 ]; }; then
    ok "$name: --threads 4 = --threads 1 (exit $s4, $lines stderr lines)"
  else notok "$name: --threads 4 = --threads 1" "exit $s1/$s4; $(head -c 300 "$TMP/$name.4.err")"; fi
}

X=$SHARED/traces/xen/xentrace.bin
if [ -r "$X" ]; then
  VMS_XENTRACE_POOL_MIN=0 same xentrace --cpu-hz 2.4G "$X"
  B=$TMP/xentrace-x$COPIES.bin
  if python3 "$SRC/bench/xen_big.py" "$X" "$B" "$COPIES"; then
    same "xentrace-x$COPIES" --cpu-hz 2.4G "$B"
  else notok "bench/xen_big.py: $COPIES copies"; fi
  # damage: cut in the middle of a block (read to its last whole record, flagged), a block
  # header overwritten half way (refused at open), a record's header made to cross its block
  size=$(stat -c %s "$X")
  head -c $((size / 2 + 6)) "$X" > "$TMP/cut.bin"; damaged cut "$TMP/cut.bin"
  python3 - "$X" "$TMP/bad-block.bin" "$TMP/bad-record.bin" <<'EOF'
import struct, sys
buf = bytearray(open(sys.argv[1], "rb").read())
# the block headers (CPU-change records): the one nearest the middle loses its signature
off, blocks = 0, []
while off + 12 <= len(buf):
    blocks.append(off)
    off += 12 + struct.unpack_from("<I", buf, off + 8)[0]
mid = min(blocks, key=lambda b: abs(b - len(buf) // 2))
bad = bytearray(buf)
struct.pack_into("<I", bad, mid, 0x12345678)
open(sys.argv[2], "wb").write(bad)
# the last record of that block given 7 extra words and a TSC: it crosses the block's end
end = mid + 12 + struct.unpack_from("<I", buf, mid + 8)[0]
p = mid + 12
last = p
while p < end:
    last = p
    h = struct.unpack_from("<I", buf, p)[0]
    p += 4 + (8 if h >> 31 else 0) + 4 * ((h >> 28) & 7)
bad = bytearray(buf)
h = struct.unpack_from("<I", bad, last)[0]
struct.pack_into("<I", bad, last, (h & 0x0fffffff) | 0xf0000000)
open(sys.argv[3], "wb").write(bad)
EOF
  damaged bad-block "$TMP/bad-block.bin"
  damaged bad-record "$TMP/bad-record.bin"
else skip "xentrace" "shared trace missing"; fi

for shape in xen-lost-markers xen-high-vcpus; do
  f=$TMP/$shape.bin
  if ! "$GEN" $shape 0 "$f"; then notok "hostile_gen $shape"; continue; fi
  damaged "$shape" "$f"
done
echo "1..$n"

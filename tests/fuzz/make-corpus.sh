#!/bin/sh
# Seed corpora for the fuzzers, written into a build directory (never into git):
#   tests/fuzz/make-corpus.sh BUILD_DIR [OUT_DIR]     (OUT_DIR default BUILD_DIR/fuzz-corpus)
# BUILD_DIR must hold tools/vmscope/vmscope and examples/vmm-demo (any build, fuzz or not).
# Sources: `vmscope synth` in the three compressions, the tracer's CTF from vmm-demo, the
# shared traces (cuts of the first 64 KiB and the small XML files, read in place), and
# hand-made simpletrace files (QEMU's v4 layout, written here by python3).
set -eu
build=$(cd "$1" && pwd)
out=${2:-$build/fuzz-corpus}
src=$(cd "$(dirname "$0")/../.." && pwd)
shared=${VMS_SHARED_DIR:-$src/../shared}/traces
vmscope=$build/tools/vmscope/vmscope
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out/tracedat" "$out/tcxml" "$out/simpletrace" "$out/ctf" "$out/xentrace"

# trace.dat: small synthetic pairs (v7, TSC2NSEC, GUEST, TIME_SHIFT) in every compression
for c in zstd zlib none; do
	for ev in 1000 2000; do
		"$vmscope" synth --events $ev --compression $c --seed 7 --out "$tmp/synth-$c-$ev" >/dev/null 2>&1
		cp "$tmp/synth-$c-$ev/host.dat" "$out/tracedat/synth-$c-$ev-host.dat"
		cp "$tmp/synth-$c-$ev/guest.dat" "$out/tracedat/synth-$c-$ev-guest.dat"
	done
done
"$vmscope" synth --events 2000 --no-tsc-scaling --compression none --out "$tmp/synth-noscale" >/dev/null 2>&1
cp "$tmp/synth-noscale/guest.dat" "$out/tracedat/synth-noscale-guest.dat"
# real trace-cmd files (v6 and v7, other options): their first 64 KiB
for f in kvm-hip24/host.dat kvm-hip24/guest-Salamander4.dat local/sched-syscalls-2cpu.dat; do
	[ -f "$shared/$f" ] && head -c 65536 "$shared/$f" >"$out/tracedat/shared-$(echo "$f" | tr / -)"
done

# Trace Compass XML: the shared stubs are small, whole
for f in "$shared"/tracecompass-vm/*/*.xml; do
	[ -f "$f" ] && cat "$f" >"$out/tcxml/$(basename "$(dirname "$f")")-$(basename "$f")"
done
printf '<trace><event timestamp="1" name="sched_switch"><field name="cpu" value="0" type="int"/></event></trace>\n' \
	>"$out/tcxml/tiny.xml"

# CTF from the tracer (vmm-demo for a moment, small buffers so that there are several packets)
rm -rf "$tmp/ctf"
VMSCOPE_TRACE="enable=*,file=$tmp/ctf,bufsize=16k,subbufs=4" "$build/examples/vmm-demo" 1 2 >/dev/null 2>&1
# packed as tests/fuzz/fuzz_harness.h says, cut at packet boundaries to stay small
python3 - "$tmp/ctf" "$out/ctf" <<'PY'
import os, struct, sys
d, out = sys.argv[1], sys.argv[2]
meta = open(os.path.join(d, 'metadata'), 'rb').read()
threads = b''
if os.path.exists(os.path.join(d, '.vmst-threads')):
    threads = open(os.path.join(d, '.vmst-threads'), 'rb').read()
streams = sorted(f for f in os.listdir(d) if f.startswith('stream-'))
def packets(data, limit):
    # packet_size (bits) is the u64 at byte 48 of the packet header (tracer/metadata.c)
    off = 0
    while off + 80 <= len(data):
        size = struct.unpack_from('<Q', data, off + 48)[0] // 8
        if size < 80 or off + size > len(data) or off + size > limit and off > 0:
            break
        off += size
    return data[:off]
def pack(name, s1, s2, closed, thr=threads, m=meta):
    flags = (1 if closed else 0) | (2 if s2 is not None else 0)
    body = struct.pack('<IIBI', len(m), len(thr), flags, len(s1)) + m + thr + s1 + (s2 or b'')
    open(os.path.join(out, name), 'wb').write(body)
data = [open(os.path.join(d, s), 'rb').read() for s in streams]
a = packets(data[0], 12288) if data else b''
b = packets(data[1], 12288) if len(data) > 1 else b''
pack('one-closed', a, None, True)
pack('two-closed', a, b, True)
pack('one-killed-cut', a + (data[0][len(a):len(a) + 100] if data else b''), None, False)
pack('no-threads', a, None, True, thr=b'')
pack('meta-only', b'', None, True)
PY

# CTF in LTTng's layouts, written here (the decoder's test traces, tests/ctf/test_ctf_decode.c):
# the compact header (5-bit id + 27-bit timestamp), the extended one, variants, sequences, a
# big-endian field, char arrays, events_discarded; plain and packetized metadata; and the
# shared LTTng traces' metadata (read in place) with the first 8 KiB of their stream
python3 - "$out/ctf" "$shared" <<'PY'
import os, struct, sys
out, shared = sys.argv[1], sys.argv[2]
meta = b"""/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
typealias integer { size = 5; align = 1; signed = false; } := uint5_t;
typealias integer { size = 27; align = 1; signed = false; map = clock.monotonic.value; } := uint27_clock_t;
typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := uint64_clock_t;
trace { major = 1; minor = 8; uuid = "00112233-4455-6677-8899-aabbccddeeff"; byte_order = le;
  packet.header := struct { uint32_t magic; uint8_t uuid[16]; uint32_t stream_id; }; };
env { domain = "kernel"; tracer_name = "lttng-modules"; };
clock { name = monotonic; freq = 1000000000; offset_s = 100; offset = 0; };
struct packet_context { uint64_clock_t timestamp_begin; uint64_clock_t timestamp_end;
  uint64_t content_size; uint64_t packet_size; uint64_t events_discarded; uint32_t cpu_id; };
struct event_header_compact { enum : uint5_t { compact = 0 ... 30, extended = 31 } id;
  variant <id> { struct { uint27_clock_t timestamp; } compact;
    struct { uint32_t id; uint64_clock_t timestamp; } extended; } v; } align(8);
stream { id = 0; event.header := struct event_header_compact;
  packet.context := struct packet_context;
  event.context := struct { integer { size = 32; align = 8; signed = 1; } _tid; }; };
event { name = probe; id = 1; stream_id = 0; fields := struct {
  integer { size = 16; align = 8; signed = 0; byte_order = be; base = 16; } _be16;
  string _s; integer { size = 8; align = 8; signed = 0; } _n; uint32_t _seq[ _n ];
  integer { size = 3; align = 1; signed = 1; } _b3; integer { size = 5; align = 1; signed = 0; } _b5;
  enum : uint8_t { small = 0, big = 1 ... 9 } _sel; variant <_sel> { uint8_t small; uint64_t big; } _val;
  floating_point { exp_dig = 11; mant_dig = 53; align = 8; } _d; }; };
event { name = sched_switch; id = 2; stream_id = 0; fields := struct {
  integer { size = 8; align = 8; signed = 1; encoding = UTF8; } _prev_comm[16];
  integer { size = 32; align = 8; signed = 1; } _prev_tid; integer { size = 32; align = 8; signed = 1; } _prev_prio;
  integer { size = 64; align = 8; signed = 1; } _prev_state;
  integer { size = 8; align = 8; signed = 1; encoding = UTF8; } _next_comm[16];
  integer { size = 32; align = 8; signed = 1; } _next_tid; integer { size = 32; align = 8; signed = 1; } _next_prio; }; };
event { name = kvm_x86_exit; id = 3; stream_id = 0; fields := struct {
  integer { size = 32; align = 8; signed = 0; } _exit_reason; uint64_t _guest_rip; uint32_t _isa;
  uint64_t _info1; uint64_t _info2; }; };
"""
uuid = bytes.fromhex('00112233445566778899aabbccddeeff')
def packet(begin, disc, events):
    body = b''.join(events)
    size = 68 + len(body)
    return struct.pack('<I16sIQQQQQI', 0xC1FC1FC1, uuid, 0, begin, begin, size * 8, size * 8, disc, 1) + body
def compact(i, ts27, tid): return struct.pack('<Ii', i | ts27 << 5, tid)
def extended(i, ts, tid): return struct.pack('<BIQi', 31, i, ts, tid)
def probe(sel): return (b'\x12\x34hi\x00\x02' + struct.pack('<II', 100, 101) + bytes([0x5 | 17 << 3, sel])
                        + (b'\x2a' if sel == 0 else struct.pack('<Q', 1 << 40)) + struct.pack('<d', 1.5))
def switch(p, n): return b'prev\x00' + b'\x00' * 11 + struct.pack('<iiq', p, 20, 1) + b'next-thread-name' + struct.pack('<ii', n, 20)
kexit = struct.pack('<IQIQQ', 48, 0xffffffff81000000, 1, 0x181, 0)
s1 = (packet(1000, 0, [compact(1, 1500, 7) + probe(0), compact(2, 100, 7) + switch(7, 9),
                       extended(1, 1 << 40, 9) + probe(3), compact(3, 200, 9) + kexit])
      + packet((1 << 40) + 10, 5, [compact(2, 20, 9) + switch(9, 0)]))
s2 = packet(500, 0, [compact(3, 600, 4) + kexit] * 20)
def packetize(text, chunk=4096):
    outb = b''
    for i in range(0, len(text), chunk):
        t = text[i:i + chunk]
        size = (37 + len(t)) * 8
        outb += struct.pack('<I16sIIIBBBBB', 0x75D11D57, uuid, 0, size, size, 0, 0, 0, 1, 8) + t
    return outb
def pack(name, m, a, b=None, closed=True):
    flags = (1 if closed else 0) | (2 if b is not None else 0)
    open(os.path.join(out, name), 'wb').write(struct.pack('<IIBI', len(m), 0, flags, len(a)) + m + a + (b or b''))
pack('lttng-one', meta, s1)
pack('lttng-two', meta, s1, s2)
pack('lttng-packetized', packetize(meta), s1, s2)
pack('lttng-cut', meta, s1[:len(s1) - 9])
for t in ('tcp-sync/scp_src', 'tcp-sync/scp_dest'):
    d = os.path.join(shared, t)
    if os.path.isdir(d):
        m = open(os.path.join(d, 'metadata'), 'rb').read()
        st = open(os.path.join(d, 'channel0_0'), 'rb').read(8192)
        pack('shared-' + os.path.basename(t), m, st, closed=False)
PY

# simpletrace v4 (QEMU trace/simple.c layout; the names match the harness's events file)
python3 - "$out/simpletrace" <<'PY'
import os, struct, sys
out = sys.argv[1]
def header(): return struct.pack('<QQQ', 2**64 - 1, 0xf2b177cb0aa429b4, 4)
def mapping(i, name): return struct.pack('<QQI', 0, i, len(name)) + name
def event(i, ts, args, pid=4242):
    body = b''
    for a in args:
        body += struct.pack('<I', len(a)) + a if isinstance(a, bytes) else struct.pack('<Q', a)
    return struct.pack('<QQQII', 1, i, ts, 24 + len(body), pid) + body
def dropped(ts, n): return struct.pack('<QQQIIQ', 1, 2**64 - 2, ts, 32, 4242, n)
names = [b'foo_start', b'bar_tick', b'baz_ptr', b'name_pair', b'ten', b'strs']
maps = b''.join(mapping(i, n) for i, n in enumerate(names))
evs = [event(0, 1000, [3, b'/tmp/disk.img', 0x100000]), event(1, 1500, []),
       event(2, 2000, [0xffff888012345678, 7]), dropped(2100, 5), event(1, 2070, []),
       event(3, 3000, [b'', b'x\ty\\']), event(4, 3100, list(range(10))),
       event(5, 3200, [b'a', b'bb', b'ccc']), event(70000, 3500, [99])]
open(os.path.join(out, 'sample'), 'wb').write(header() + maps + b''.join(evs))
open(os.path.join(out, 'header-only'), 'wb').write(header())
open(os.path.join(out, 'no-mapping'), 'wb').write(header() + b''.join(evs[:3]))
open(os.path.join(out, 'late-mapping'), 'wb').write(header() + evs[1] + mapping(1, b'bar_tick') + evs[1])
many = header() + maps + b''.join(event(i % 6, 5000 + i, [i, b's%d' % i, i]) for i in range(300))
open(os.path.join(out, 'many'), 'wb').write(many)
PY
# xentrace: the shared real trace's first blocks, and one cut inside a block
if [ -f "$shared/xen/xentrace.bin" ]; then
	head -c 48688 "$shared/xen/xentrace.bin" >"$out/xentrace/shared-first-blocks.bin"
	head -c 20000 "$shared/xen/xentrace.bin" >"$out/xentrace/shared-cut.bin"
fi
# xentrace: records naming large vCPU ids (issue 20.8: a domain was sized by the highest one
# named): vCPU 4095 running, 4094 only woken, in three domains, on two CPUs
python3 - "$out/xentrace/high-vcpu-ids.bin" <<'PY'
import struct, sys
def rec(ev, tsc, words):
    return struct.pack('<IQ', ev | len(words) << 28 | 1 << 31, tsc) + b''.join(struct.pack('<I', w) for w in words)
def block(cpu, recs):
    return struct.pack('<III', 0x0001f003 | 2 << 28, cpu, len(recs)) + recs
rs = lambda old, new: 0x00021001 | old << 8 | new << 4
out = b''
for cpu in (0, 1):
    recs = b''
    for d in (1, 2, 3):
        t = 1000 + 10 * d + cpu
        recs += rec(rs(1, 0), t, [d << 16 | 4095]) + rec(0x00081001, t + 1, [])
        recs += rec(rs(0, 2), t + 2, [d << 16 | 4095]) + rec(rs(2, 1), t + 3, [d << 16 | 4094])
    out += block(cpu, recs)
open(sys.argv[1], 'wb').write(out)
PY
for f in "$out"/*; do echo "$(basename "$f"): $(ls "$f" | wc -l) inputs, $(du -sk "$f" | cut -f1) KiB"; done

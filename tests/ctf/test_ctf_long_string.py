#!/usr/bin/env python3
"""`vmscope dump` prints a CTF string field of 3 MB whole; babeltrace2 prints one of 64 KiB
the same (TAP).

Each trace is written here (the metadata and the packet's bytes, by struct with CTF 1.8's
layout): one event `probe` whose string `msg` is N 'x', a tab, a backslash and "end", then
an integer n = 7. With N = 3,000,000 the line is three times dump's 1 MiB output buffer, so
it is rendered again into a buffer of its own. Expected: msg="<N x>\\x09\\\\end" n=7 in
vmscope's escapes. babeltrace2 (when installed) is compared on N = 65,536 (its time grows
with the square of a string's length: 9 minutes for the 3 MB one): the same bytes with its
own escapes, \\t and \\\\.

usage: test_ctf_long_string.py VMSCOPE DIR
"""
import os, shutil, struct, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from tap import Tap  # noqa: E402

META = """/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := uint64_clock_t;
trace { major = 1; minor = 8; byte_order = le;
  packet.header := struct { uint32_t magic; uint32_t stream_id; }; };
clock { name = monotonic; freq = 1000000000; offset_s = 0; offset = 0; };
stream { id = 0; event.header := struct { uint32_t id; uint64_clock_t timestamp; };
  packet.context := struct { uint64_clock_t timestamp_begin; uint64_clock_t timestamp_end;
    uint64_t content_size; uint64_t packet_size; uint32_t cpu_id; }; };
event { name = probe; id = 1; stream_id = 0; fields := struct { string msg; uint32_t n; }; };
"""
N = 3000000


def write_trace(d, n):
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "metadata"), "w") as f:
        f.write(META)
    body = struct.pack("<IQ", 1, 1000) + b"x" * n + b"\t\\end\0" + struct.pack("<I", 7)
    size = 8 + 36 + len(body)   # header, context, the event
    with open(os.path.join(d, "stream0"), "wb") as f:
        f.write(struct.pack("<II", 0xC1FC1FC1, 0) +
                struct.pack("<QQQQI", 1000, 1000, size * 8, size * 8, 0) + body)


def main():
    tap = Tap()
    vms, d = sys.argv[1], sys.argv[2]
    for n in (3000000, 65536):
        write_trace(d, n)
        p = subprocess.run([vms, "dump", d], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out = p.stdout.decode()
        tap.ok(p.returncode == 0 and out.count("\n") == 1, "vmscope dump: one line, exit 0",
               p.stderr.decode()[:300])
        want = 'probe: msg="' + "x" * n + '\\x09\\\\end" n=7\n'
        tap.ok(out.endswith(want) and out.startswith("0.000001 cpu=0 tid=-1 "),
               "the %d-byte string whole, escaped as \\x09 and \\\\" % (n + 5),
               "line of %d bytes, ends %r" % (len(out), out[-40:]))
    if not shutil.which("babeltrace2"):
        tap.ok(True, "babeltrace2 # SKIP not installed (Debian: babeltrace2)")
        return tap.done()
    b = subprocess.run(["babeltrace2", d], stdout=subprocess.PIPE).stdout.decode()
    tap.ok(('msg = "' + "x" * n + '\\t\\\\end", n = 7 }') in b,
           "babeltrace2 prints the same %d bytes (its escapes: \\t, \\\\)" % (n + 5), b[-60:])
    return tap.done()


sys.exit(main())

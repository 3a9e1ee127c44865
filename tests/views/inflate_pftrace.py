#!/usr/bin/env python3
"""Inflate a .pftrace written with `vmscope export --deflate`.

usage: inflate_pftrace.py IN.pftrace OUT.pftrace

Reads the Trace message's packets (field 1) by the wire format itself; each must be a
TracePacket holding only compressed_packets (field 50): zlib data whose inflation is a run of
Trace packets (what Perfetto's trace_processor does with them). Writes those packets, in order:
the file the export writes without --deflate. Exits 1 with a message when a packet is not so.
"""
import sys
import zlib


def varint(b, i):
    v = shift = 0
    while True:
        if i >= len(b):
            raise ValueError("varint cut at byte %d" % i)
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def main():
    data = open(sys.argv[1], "rb").read()
    out = bytearray()
    i = blocks = 0
    while i < len(data):
        key, i = varint(data, i)
        assert key == (1 << 3 | 2), "byte %d: not a Trace.packet" % i
        n, i = varint(data, i)
        pk, i = data[i:i + n], i + n
        assert len(pk) == n, "packet cut"
        assert n < 512 * 1024, "compressed_packets of %d bytes (Perfetto: < 512 KiB)" % n
        k, j = varint(pk, 0)
        assert k == (50 << 3 | 2), "a packet that is not compressed_packets"
        m, j = varint(pk, j)
        assert j + m == n, "compressed_packets is not the whole packet"
        out += zlib.decompress(pk[j:])
        blocks += 1
    open(sys.argv[2], "wb").write(out)
    print("# %d deflated blocks, %d -> %d bytes" % (blocks, len(data), len(out)))


if __name__ == "__main__":
    try:
        main()
    except (AssertionError, ValueError, zlib.error) as e:
        print("inflate_pftrace: %s" % e, file=sys.stderr)
        sys.exit(1)

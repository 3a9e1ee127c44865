#!/usr/bin/env python3
"""A larger xentrace file for bench_xen.py: N copies of a real one laid end to end in time.

Copy k is the input with every TSC moved by k times (the input's span + 1 ms at 2.4 GHz):
the TSC of each record that has one, and the first lost TSC of a lost-records marker. Its
physical CPUs are N + k * (the input's CPUs) and its domains d(N + 100 k) (the idle domain
stays, its vCPU of CPU N becomes that of the new CPU): where a copy begins no vCPU or CPU
carries a state from the copy before, which xenalyze would stop on ("p->current not default
domain"). The framing (per-CPU blocks, records) and everything else is the input's: each
copy is as realistic as the input, and the file is longer.

usage: xen_big.py IN OUT COPIES   (COPIES * the input's CPUs at most 256, xenalyze's limit)"""
import struct, sys


def records(buf):
    """(offset, header) of every record, block headers included"""
    off = 0
    while off + 12 <= len(buf):
        h, cpu, win = struct.unpack_from("<III", buf, off)
        yield off, h
        end = min(off + 12 + win, len(buf))
        p = off + 12
        while p + 4 <= end:
            h = struct.unpack_from("<I", buf, p)[0]
            size = 4 + (8 if h >> 31 else 0) + 4 * ((h >> 28) & 7)
            if p + size > end:
                break
            yield p, h
            p += size
        off = end


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    src = open(sys.argv[1], "rb").read()
    copies = int(sys.argv[3])
    tscs = [(p, h) for p, h in records(src) if h >> 31]
    lost = [p for p, h in records(src) if h & 0x0fffffff == 0x0001f001 and (h >> 28) & 7 >= 4]
    blocks = [p for p, h in records(src) if h & 0x0fffffff == 0x0001f003]
    ncpu = max(struct.unpack_from("<I", src, p + 4)[0] for p in blocks) + 1
    # runstate records (change, continue): their first word is dom << 16 | vcpu
    rs = [p + (12 if h >> 31 else 4) for p, h in records(src)
          if ((h & 0x0fffffff) & 0xfffff00f == 0x00021001 or h & 0x0fffffff == 0x00021002)
          and (h >> 28) & 7 >= 1]
    vals = [struct.unpack_from("<Q", src, p + 4)[0] for p, _ in tscs]
    shift = max(vals) - min(vals) + 2400000
    with open(sys.argv[2], "wb") as out:
        for k in range(copies):
            b = bytearray(src)
            for p, _ in tscs:
                struct.pack_into("<Q", b, p + 4, struct.unpack_from("<Q", b, p + 4)[0] + k * shift)
            for p in lost:  # (a marker has a TSC: its words start 12 bytes in)
                q = p + 12 + 8
                struct.pack_into("<Q", b, q, struct.unpack_from("<Q", b, q)[0] + k * shift)
            for p in blocks:  # copy k's CPUs are N + k * ncpu
                struct.pack_into("<I", b, p + 4, struct.unpack_from("<I", b, p + 4)[0] + k * ncpu)
            for q in rs:  # its domains d(N + 100 k), the idle vCPU of CPU N that of N + k * ncpu
                dv = struct.unpack_from("<I", b, q)[0]
                dv += k * ncpu if dv >> 16 == 32767 else (100 * k) << 16
                struct.pack_into("<I", b, q, dv)
            out.write(b)


main()

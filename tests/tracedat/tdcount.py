#!/usr/bin/env python3
"""Independent record counter for trace.dat v7 files compressed with zlib or not at all.

Debian's trace-cmd cannot read zlib trace.dat files, so the tests cross-check the C reader's
counts on ../shared/traces/kvm-hip24/*.dat with this separate implementation, written from
trace-cmd.dat.v7(5) and the kernel's ring-buffer layout only. Output lines:
  cpu <buffer> <cpu> <records>
  event <name> <records>
  lost <sum of stored missed-event counts>
"""
import struct
import sys
import zlib


def main(path):
    data = open(path, 'rb').read()
    assert data[:10] == b'\x17\x08\x44tracing'
    p = data.index(b'\0', 10) + 1
    assert data[10:p - 1] == b'7', 'v7 only'
    e = '<' if data[p] == 0 else '>'
    long_size = data[p + 1]
    p += 6
    comp_end = data.index(b'\0', p)
    comp = data[p:comp_end].decode()
    p = data.index(b'\0', comp_end + 1) + 1
    assert comp in ('zlib', 'none'), comp
    (first,) = struct.unpack_from(e + 'Q', data, p)

    def section(off):
        sid, flags, _, size = struct.unpack_from(e + 'HHIQ', data, off)
        body = data[off + 16:off + 16 + size]
        if flags & 1:
            csize, usize = struct.unpack_from(e + 'II', body, 0)
            body = zlib.decompress(body[8:8 + csize])
            assert len(body) == usize
        return sid, body

    secs, buffers = {}, []
    off = first
    while off:
        sid, body = section(off)
        assert sid == 0
        q, off = 0, 0
        while q < len(body):
            oid, osz = struct.unpack_from(e + 'HI', body, q)
            od = body[q + 6:q + 6 + osz]
            q += 6 + osz
            if oid == 0:
                (off,) = struct.unpack_from(e + 'Q', od, 0)
                break
            if oid in (16, 17, 18):
                secs[oid] = struct.unpack_from(e + 'Q', od, 0)[0]
            if oid == 3:
                (boff,) = struct.unpack_from(e + 'Q', od, 0)
                n1 = od.index(b'\0', 8)
                name = od[8:n1].decode()
                n2 = od.index(b'\0', n1 + 1)
                page_size, ncpu = struct.unpack_from(e + 'II', od, n2 + 1)
                cpus = [struct.unpack_from(e + 'IQQ', od, n2 + 9 + 20 * i) for i in range(ncpu)]
                buffers.append((name, boff, page_size, cpus))

    names = {}

    def formats(text, system):
        name = ident = None
        for line in text.decode(errors='replace').splitlines():
            if line.startswith('name: '):
                name = line[6:].strip()
            elif line.startswith('ID: '):
                ident = int(line[4:])
        if name is not None and ident is not None:
            names[ident] = name

    _, body = section(secs[17])
    (n,) = struct.unpack_from(e + 'I', body, 0)
    q = 4
    for _ in range(n):
        (sz,) = struct.unpack_from(e + 'Q', body, q)
        formats(body[q + 8:q + 8 + sz], 'ftrace')
        q += 8 + sz
    _, body = section(secs[18])
    (nsys,) = struct.unpack_from(e + 'I', body, 0)
    q = 4
    for _ in range(nsys):
        z = body.index(b'\0', q)
        system = body[q:z].decode()
        (n,) = struct.unpack_from(e + 'I', body, z + 1)
        q = z + 5
        for _ in range(n):
            (sz,) = struct.unpack_from(e + 'Q', body, q)
            formats(body[q + 8:q + 8 + sz], system)
            q += 8 + sz

    counts, lost = {}, 0
    for name, boff, page_size, cpus in buffers:
        sid, flags = struct.unpack_from(e + 'HH', data, boff)
        for cpu, doff, dsize in cpus:
            if flags & 1:
                (nchunks,) = struct.unpack_from(e + 'I', data, doff)
                q, raw = doff + 4, []
                for _ in range(nchunks):
                    csize, usize = struct.unpack_from(e + 'II', data, q)
                    raw.append(zlib.decompress(data[q + 8:q + 8 + csize]))
                    q += 8 + csize
                raw = b''.join(raw)
            else:
                raw = data[doff:doff + dsize]
            records = 0
            for pg in range(0, len(raw), page_size):
                page = raw[pg:pg + page_size]
                commit = struct.unpack_from(e + ('Q' if long_size == 8 else 'I'), page, 8)[0]
                size = commit & ((1 << 27) - 1)
                hdr = 8 + long_size
                if commit & (1 << 31) and commit & (1 << 30):
                    lost += struct.unpack_from(e + ('Q' if long_size == 8 else 'I'), page,
                                               hdr + size)[0]
                ev = page[hdr:hdr + size]
                i = 0
                while i + 4 <= len(ev):
                    (w,) = struct.unpack_from(e + 'I', ev, i)
                    tl = w & 31
                    if tl == 29:
                        if i + 8 > len(ev):
                            break
                        (ln,) = struct.unpack_from(e + 'I', ev, i + 4)
                        i += 4 + ln
                        continue
                    if tl in (30, 31):
                        i += 8
                        continue
                    if tl == 0:
                        (ln,) = struct.unpack_from(e + 'I', ev, i + 4)
                        payload = ev[i + 8:i + 8 + ln - 4]
                        i += 8 + ((ln - 4 + 3) & ~3)
                    else:
                        payload = ev[i + 4:i + 4 + 4 * tl]
                        i += 4 + 4 * tl
                    (etype,) = struct.unpack_from(e + 'H', payload, 0)
                    nm = names.get(etype, 'unknown')
                    counts[nm] = counts.get(nm, 0) + 1
                    records += 1
            print('cpu %s %d %d' % (name or '-', cpu, records))
    for nm in sorted(counts):
        print('event %s %d' % (nm, counts[nm]))
    print('lost %d' % lost)


if __name__ == '__main__':
    main(sys.argv[1])

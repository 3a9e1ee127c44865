#!/usr/bin/env python3
"""Independent count of KVM exits per host thread and reason in a trace.dat v7 file
(zlib-compressed or not), for the analysis tests to check vmscope's exit tables against.

Written from trace-cmd.dat.v7(5), the kernel's ring-buffer page layout and the events'
format text only (Debian's trace-cmd cannot read zlib trace.dat files). It reads no
timestamps: it counts, per common_pid, the kvm_exit records of each (isa, exit_reason) and
the kvm_entry records. Output lines:
  exit <pid> <isa> <reason> <count>
  entry <pid> <count>
"""
import re
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
        return sid, body

    secs, buffers = {}, []
    off = first
    while off:
        _, body = section(off)
        q, off = 0, 0
        while q < len(body):
            oid, osz = struct.unpack_from(e + 'HI', body, q)
            od = body[q + 6:q + 6 + osz]
            q += 6 + osz
            if oid == 0:
                (off,) = struct.unpack_from(e + 'Q', od, 0)
                break
            if oid == 18:
                secs[oid] = struct.unpack_from(e + 'Q', od, 0)[0]
            if oid == 3:
                (boff,) = struct.unpack_from(e + 'Q', od, 0)
                n1 = od.index(b'\0', 8)
                n2 = od.index(b'\0', n1 + 1)
                page_size, ncpu = struct.unpack_from(e + 'II', od, n2 + 1)
                cpus = [struct.unpack_from(e + 'IQQ', od, n2 + 9 + 20 * i) for i in range(ncpu)]
                buffers.append((boff, page_size, cpus))

    # event formats: id -> (name, {field: (offset, size)})
    fmts = {}
    _, body = section(secs[18])
    (nsys,) = struct.unpack_from(e + 'I', body, 0)
    q = 4
    for _ in range(nsys):
        z = body.index(b'\0', q)
        (n,) = struct.unpack_from(e + 'I', body, z + 1)
        q = z + 5
        for _ in range(n):
            (sz,) = struct.unpack_from(e + 'Q', body, q)
            text = body[q + 8:q + 8 + sz].decode(errors='replace')
            q += 8 + sz
            name = re.search(r'^name: (\S+)', text, re.M).group(1)
            ident = int(re.search(r'^ID: (\d+)', text, re.M).group(1))
            fields = {}
            for m in re.finditer(r'field:[^;]*?(\w+)(\[[^\]]*\])?;\s*offset:(\d+);\s*size:(\d+);',
                                 text):
                fields[m.group(1)] = (int(m.group(3)), int(m.group(4)))
            fmts[ident] = (name, fields)

    def get(payload, fields, name):
        o, s = fields[name]
        return int.from_bytes(payload[o:o + s], 'little' if e == '<' else 'big')

    exits, entries = {}, {}
    for boff, page_size, cpus in buffers:
        _, flags = struct.unpack_from(e + 'HH', data, boff)
        for _cpu, doff, dsize in cpus:
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
            for pg in range(0, len(raw), page_size):
                page = raw[pg:pg + page_size]
                commit = struct.unpack_from(e + ('Q' if long_size == 8 else 'I'), page, 8)[0]
                size = commit & ((1 << 27) - 1)
                hdr = 8 + long_size
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
                    if etype not in fmts:
                        continue
                    name, fields = fmts[etype]
                    if name == 'kvm_exit':
                        key = (get(payload, fields, 'common_pid'), get(payload, fields, 'isa'),
                               get(payload, fields, 'exit_reason'))
                        exits[key] = exits.get(key, 0) + 1
                    elif name == 'kvm_entry':
                        pid = get(payload, fields, 'common_pid')
                        entries[pid] = entries.get(pid, 0) + 1
    for (pid, isa, reason), n in sorted(exits.items()):
        print('exit %d %d %d %d' % (pid, isa, reason, n))
    for pid, n in sorted(entries.items()):
        print('entry %d %d' % (pid, n))


if __name__ == '__main__':
    main(sys.argv[1])

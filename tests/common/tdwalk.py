"""A small reader of trace.dat v7 files (zlib-compressed or not), independent of vmscope's C
reader, for the tests' oracles (Debian's trace-cmd cannot read zlib files).

Written from trace-cmd.dat.v7(5) and the kernel's ring-buffer page layout only. It keeps
everything in memory: for the small shared traces only.
"""
import re
import struct
import zlib


class TraceDat:
    def __init__(self, path):
        data = self.data = open(path, 'rb').read()
        assert data[:10] == b'\x17\x08\x44tracing'
        p = data.index(b'\0', 10) + 1
        assert data[10:p - 1] == b'7', 'v7 only'
        e = self.e = '<' if data[p] == 0 else '>'
        self.long_size = data[p + 1]
        p += 6
        comp_end = data.index(b'\0', p)
        comp = data[p:comp_end].decode()
        p = data.index(b'\0', comp_end + 1) + 1
        assert comp in ('zlib', 'none'), comp
        (off,) = struct.unpack_from(e + 'Q', data, p)
        secs, self.buffers = {}, []
        while off:
            sid, body = self.section(off)
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
                    cpus = [struct.unpack_from(e + 'IQQ', od, n2 + 9 + 20 * i)
                            for i in range(ncpu)]
                    self.buffers.append((name, boff, page_size, cpus))
        # event formats: id -> (name, {field: (offset, size)})
        self.formats = {}
        _, body = self.section(secs[17])
        (n,) = struct.unpack_from(e + 'I', body, 0)
        q = 4
        for _ in range(n):
            (sz,) = struct.unpack_from(e + 'Q', body, q)
            self._format(body[q + 8:q + 8 + sz])
            q += 8 + sz
        _, body = self.section(secs[18])
        (nsys,) = struct.unpack_from(e + 'I', body, 0)
        q = 4
        for _ in range(nsys):
            z = body.index(b'\0', q)
            (n,) = struct.unpack_from(e + 'I', body, z + 1)
            q = z + 5
            for _ in range(n):
                (sz,) = struct.unpack_from(e + 'Q', body, q)
                self._format(body[q + 8:q + 8 + sz])
                q += 8 + sz
        self.lost = 0

    def section(self, off):
        e, data = self.e, self.data
        sid, flags, _, size = struct.unpack_from(e + 'HHIQ', data, off)
        body = data[off + 16:off + 16 + size]
        if flags & 1:
            csize, usize = struct.unpack_from(e + 'II', body, 0)
            body = zlib.decompress(body[8:8 + csize])
            assert len(body) == usize
        return sid, body

    def _format(self, raw):
        text = raw.decode(errors='replace')
        name = re.search(r'^name: (\S+)', text, re.M)
        ident = re.search(r'^ID: (\d+)', text, re.M)
        if not name or not ident:
            return
        fields = {}
        for m in re.finditer(r'field:[^;]*?(\w+)(\[[^\]]*\])?;\s*offset:(\d+);\s*size:(\d+);', text):
            fields[m.group(1)] = (int(m.group(3)), int(m.group(4)))
        self.formats[int(ident.group(1))] = (name.group(1), fields)

    def field(self, payload, name, field):
        o, s = self._fields(name)[field]
        return int.from_bytes(payload[o:o + s], 'little' if self.e == '<' else 'big')

    def _fields(self, name):
        for n, f in self.formats.values():
            if n == name:
                return f
        raise KeyError(name)

    def cpus(self):
        """(buffer name, cpu, list of record payloads) for every CPU of every buffer; adds the
        stored missed-event counts of its pages to self.lost."""
        e, data, ls = self.e, self.data, self.long_size
        for name, boff, page_size, cpus in self.buffers:
            _, flags = struct.unpack_from(e + 'HH', data, boff)
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
                yield name, cpu, list(self._records(raw, page_size, ls))

    def _records(self, raw, page_size, ls):
        e = self.e
        for pg in range(0, len(raw), page_size):
            page = raw[pg:pg + page_size]
            commit = struct.unpack_from(e + ('Q' if ls == 8 else 'I'), page, 8)[0]
            size = commit & ((1 << 27) - 1)
            hdr = 8 + ls
            if commit & (1 << 31) and commit & (1 << 30):
                self.lost += struct.unpack_from(e + ('Q' if ls == 8 else 'I'), page, hdr + size)[0]
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
                yield payload

    def name_of(self, payload):
        (etype,) = struct.unpack_from(self.e + 'H', payload, 0)
        f = self.formats.get(etype)
        return f[0] if f else 'unknown'

"""What the serve tests share (test_checkpoints.py, test_summaries.py): a server started on
traces, and an index file's sections by its documented layout (man/vmscope-index.1)."""
import json, random, struct, subprocess, urllib.error, urllib.parse, urllib.request, zlib


class Server:
    def __init__(self, vms, traces, extra, env):
        self.p = subprocess.Popen([vms, 'serve'] + extra + traces, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
        u = urllib.parse.urlparse(self.p.stdout.readline().strip())
        self.base = 'http://127.0.0.1:%d' % u.port
        self.token = urllib.parse.parse_qs(u.query)['token'][0]

    def get(self, path, **q):
        q['token'] = self.token
        try:
            with urllib.request.urlopen('%s%s?%s' % (self.base, path, urllib.parse.urlencode(q)),
                                        timeout=120) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def stop(self):
        self.p.terminate()
        self.p.wait(10)
        return self.p.stderr.read()


def sections(path):
    """(key bytes, [(type, bytes inflated)]) of an index file."""
    b = open(path, 'rb').read()
    ver, nr, kl = struct.unpack_from('<III', b, 8)
    key, off, out = b[20:20 + kl], 20 + kl, []
    for _ in range(nr):
        t, z, ln = struct.unpack_from('<IIQ', b, off)
        data = b[off + 16:off + 16 + ln]
        out.append((t, zlib.decompress(data[8:]) if z & 1 else data))
        off += 16 + ln
    return key, out


def write_raw(path, key, sects):
    """An index file of these sections, none deflated, with its CRC."""
    b = b'VMSIDX\r\n' + struct.pack('<III', 1, len(sects), len(key)) + key
    for t, data in sects:
        b += struct.pack('<IIQ', t, 0, len(data)) + data
    open(path, 'wb').write(b + struct.pack('<I', zlib.crc32(b)))


def make_index(vms, traces, path, env):
    """vmscope index -o path: (the run, key, sections), sections [] when it failed"""
    r = subprocess.run([vms, 'index', '-o', path] + traces, capture_output=True, text=True, env=env)
    return (r,) + (sections(path) if r.returncode == 0 else (b'', []))


def damaged(vms, traces, env, path, key, sects, typ, soft, seed, word, probe, want, windows,
            same, skip=0):
    """Section typ of an index damaged under a sound CRC: the cases `soft` ([(name, bytes)]:
    a cut, bytes after it) must be said in one line of stderr holding `word`, and give the
    answer `want` of window `probe`; 12 copies with 1-4 random bytes changed (from byte
    `skip` on) must only never stop the server (200 or 500 answers). What went wrong, []."""
    rnd = random.Random(seed)
    data = [d for t, d in sects if t == typ][0]
    others = [(t, d) for t, d in sects if t != typ]
    cases = [(n, d, True) for n, d in soft]
    for i in range(12):
        d = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            d[rnd.randrange(skip, len(d))] = rnd.randrange(256)
        cases.append(('random bytes changed (%d)' % i, bytes(d), False))
    worst = []
    for name, d, is_soft in cases:
        write_raw(path, key, others + [(typ, d)])
        s = Server(vms, traces, ['--index', path], env)
        codes = [s.get('/api/window', **{'from': f, 'to': t, 'px': 300})[0] for f, t in windows]
        st, got = s.get('/api/window', **{'from': probe[0], 'to': probe[1], 'px': 300})
        alive = s.get('/api/rows')[0] == 200 and s.p.poll() is None
        err = s.stop()
        lines = [ln for ln in err.splitlines() if word in ln]
        if not alive or any(c not in (200, 500) for c in codes + [st]):
            worst.append('%s: codes %s %d alive %s' % (name, codes, st, alive))
        if is_soft and (len(lines) != 1 or st != 200 or not same(got, want)):
            worst.append('%s: want one warning and the replayed answer: %s' % (name, err))
    return worst, len(cases)

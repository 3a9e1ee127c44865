#!/usr/bin/env python3
"""vmscope index and serve's use of it (TAP). What serve answers from an index must be the
bytes it computes without one (serve --no-index, run as a separate process); the cache rules
(reused while the traces are unchanged, rebuilt when one changes or the options differ) and
damaged files (flipped byte, cut file, lengths that lie under a recomputed CRC: one line,
rebuilt, never a crash) are checked against the file's documented layout
(man/vmscope-index.1), which this script parses itself.
Usage: test_index.py VMSCOPE (VMS_SHARED_DIR, VMS_BUILD_DIR from the environment)."""
import os, shutil, struct, subprocess, sys, urllib.parse, urllib.request, zlib

VMS = sys.argv[1]
TMP = os.path.join(os.environ.get('VMS_BUILD_DIR', '/tmp'), 'test-tmp', 'serve-index')
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)
CACHE = os.path.join(TMP, 'cache')
ENV = dict(os.environ, XDG_CACHE_HOME=CACHE)
n = 0
failed = 0


def ok(cond, name, diag=''):
    global n, failed
    n += 1
    print('%s %d - %s' % ('ok' if cond else 'not ok', n, name))
    if not cond:
        failed += 1
        for line in str(diag).splitlines()[:20]:
            print('# ' + line)


class Server:
    def __init__(self, traces, extra):
        self.p = subprocess.Popen([VMS, 'serve'] + extra + traces, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=ENV)
        u = urllib.parse.urlparse(self.p.stdout.readline().strip())
        self.base = 'http://127.0.0.1:%d' % u.port
        self.token = urllib.parse.parse_qs(u.query)['token'][0]

    def get(self, path):
        with urllib.request.urlopen('%s%s?token=%s' % (self.base, path, self.token)) as r:
            return r.status, r.read()

    def stop(self):
        self.p.terminate()
        self.p.wait(10)


def index(args, env=ENV):
    return subprocess.run([VMS, 'index'] + args, capture_output=True, text=True, env=env)


def serve_answers(traces, extra):
    s = Server(traces, extra)
    try:
        return {p: s.get(p)[1] for p in ('/', '/api/rows', '/api/findings')}, s
    finally:
        s.stop()


def parse(path):
    """The sections of an index file, by the layout man/vmscope-index.1 gives."""
    b = open(path, 'rb').read()
    assert b[:8] == b'VMSIDX\r\n'
    ver, nr, kl = struct.unpack_from('<III', b, 8)
    off = 20 + kl
    sect = []
    for _ in range(nr):
        t, z, ln = struct.unpack_from('<IIQ', b, off)
        sect.append((off, t, ln, z))
        off += 16 + ln
    assert off == len(b) - 4 and struct.unpack_from('<I', b, off)[0] == zlib.crc32(b[:off])
    return b, ver, kl, sect


def content(b, sect, typ):
    """A section's bytes, inflated when its flags say zlib (flag 1: u64 length, stream)."""
    o, t, ln, z = [x for x in sect if x[1] == typ][0]
    data = b[o + 16:o + 16 + ln]
    if z & 1:
        raw = zlib.decompress(data[8:])
        assert len(raw) == struct.unpack_from('<Q', data)[0]
        return raw
    return data


def recrc(b):
    b = bytearray(b[:-4])
    return bytes(b) + struct.pack('<I', zlib.crc32(b))


synth = os.path.join(TMP, 'synth')
subprocess.run([VMS, 'synth', '--events', '40000', '--out', synth], check=True,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
tr = [os.path.join(synth, 'host.dat'), os.path.join(synth, 'guest.dat')]

r = index(tr)
path = r.stdout.strip()
ok(r.returncode == 0 and path.startswith(os.path.join(CACHE, 'vmscope') + '/') and
   path.endswith('.vmsidx') and os.path.isfile(path),
   'index: written in $XDG_CACHE_HOME/vmscope, its path on stdout', r.stderr)
b, ver, kl, sect = parse(path)
ok(ver == 1 and sorted(x[1] for x in sect) == [1, 2, 3, 5, 6],
   'index: version 1, page/findings/rows/summaries/model (no checkpoints: 40000 < 100000 events)')
ok(all(x[3] == 1 for x in sect if x[1] == 1), 'index: the page is deflated')
key = b[20:20 + kl].decode()
ok(os.path.realpath(tr[0]) in key and ('size %d ' % os.path.getsize(tr[0])) in key,
   'index: the key names the traces by absolute path and size')

# the same traces give the same file, byte for byte: with checkpoints (every 5000 events
# here), whose kept observations hold no padding bytes of the publisher's stack, and whether
# the rows are made in their own thread or in the reading one (VMS_SERVE_ROWS_THREADS=0)
det = []
for i, extra in enumerate(({}, {}, {'VMS_SERVE_ROWS_THREADS': '0'})):
    f = os.path.join(TMP, 'det%d.vmsidx' % i)
    r = index(['--force', '-o', f] + tr, dict(ENV, VMS_SERVE_CKPT_EVERY='5000', **extra))
    det.append(open(f, 'rb').read() if r.returncode == 0 else r.stderr.encode())
db, _, _, dsect = parse(os.path.join(TMP, 'det0.vmsidx'))
ok(4 in [x[1] for x in dsect] and len(content(db, dsect, 4)) > 1000 and
   det[0] == det[1] == det[2],
   'index: two builds, and one without the rows\' thread, write the same bytes (with '
   'checkpoints)', '%d %d %d bytes' % tuple(len(x) for x in det))

# the index's sections are the bytes serve computes without one
plain, _ = serve_answers(tr, ['--no-index'])
rows = content(b, sect, 3)
ok(rows == plain['/api/rows'], 'index: rows section == serve --no-index /api/rows')
fnd = content(b, sect, 2)
ok(fnd == plain['/api/findings'], 'index: findings section == serve --no-index /api/findings')
page = content(b, sect, 1)
ok(page == plain['/'], 'index: page section == serve --no-index /')
got, s = serve_answers(tr, [])
ok(got == plain, 'serve from the index: /, /api/rows, /api/findings byte-identical')
err = s.p.stderr.read() if s.p.stderr else ''
ok('index ' + path in err and 'written' not in err, 'serve: used the index, did not rewrite it', err)

mt = os.stat(path).st_mtime_ns
r = index(tr)
ok(r.returncode == 0 and 'up to date' in r.stderr and os.stat(path).st_mtime_ns == mt,
   'index again: up to date, file untouched', r.stderr)
r = index(['--force'] + tr)
ok(r.returncode == 0 and os.stat(path).st_mtime_ns != mt and parse(path)[0][20:20 + kl] == key.encode(),
   'index --force: rewritten, same key')

# another option, another index; -o FILE; a changed trace makes the file stale
r = index(['--clock-model', 'linear'] + tr)
ok(r.returncode == 0 and r.stdout.strip() != path, 'index --clock-model linear: another key, another file')
own = os.path.join(TMP, 'own.vmsidx')
r = index(['-o', own] + tr)
ok(r.returncode == 0 and r.stdout.strip() == own and os.path.isfile(own), 'index -o FILE')
os.utime(tr[1], ns=(os.stat(tr[1]).st_atime_ns, os.stat(tr[1]).st_mtime_ns + 1000))
r = index(['-o', own] + tr)
ok(r.returncode == 0 and 'up to date' not in r.stderr and
   ('mtime %d.%09d' % divmod(os.stat(tr[1]).st_mtime_ns, 10**9)) in parse(own)[0].decode('latin1'),
   'a trace touched: the index is stale and rebuilt with the new mtime', r.stderr)
r = index(['-o', own] + tr)
ok('up to date' in r.stderr, 'then up to date again')
r = index(['-o', own, '--cache-dir', TMP] + tr)
ok(r.returncode == 2, 'index -o with --cache-dir: usage error')

# damaged files: one line, rebuilt, never a crash
good = open(own, 'rb').read()
_, _, kl2, sect2 = parse(own)
pg = [x for x in sect2 if x[1] == 1][0]
pg_raw = struct.unpack_from('<Q', good, pg[0] + 16)[0]
cases = [
    ('a flipped byte', good[:100] + bytes([good[100] ^ 0x40]) + good[101:], 'checksum'),
    ('cut in half', good[:len(good) // 2], 'checksum'),
    ('too short', good[:10], 'too short'),
    ('not an index', b'X' * 64, 'bad magic'),
    ('a section 2^60 bytes long (CRC recomputed)',
     recrc(good[:sect2[0][0] + 8] + struct.pack('<Q', 1 << 60) + good[sect2[0][0] + 16:]),
     'section longer than the file'),
    ('a deflated section claiming 2^40 bytes (CRC recomputed)',
     recrc(b'' .join([good[:pg[0] + 16], struct.pack('<Q', 1 << 40), good[pg[0] + 24:]])),
     "compressed section's length lies"),
    ('a deflated section claiming 1 byte more (CRC recomputed)',
     recrc(b'' .join([good[:pg[0] + 16], struct.pack('<Q', pg_raw + 1), good[pg[0] + 24:]])),
     'compressed section damaged'),
    ('a deflated section with a broken stream (CRC recomputed)',
     recrc(good[:pg[0] + 40] + bytes([good[pg[0] + 40] ^ 0xff]) + good[pg[0] + 41:]),
     'compressed section damaged'),
    ('unknown section flags (CRC recomputed)',
     recrc(good[:pg[0] + 4] + struct.pack('<I', 6) + good[pg[0] + 8:]), 'section header damaged'),
    ('2^31 sections (CRC recomputed)', recrc(good[:12] + struct.pack('<I', 1 << 31) + good[16:]),
     'too many sections'),
    ('a key 4 GiB long (CRC recomputed)', recrc(good[:16] + struct.pack('<I', 0xffffffff) + good[20:]),
     'key longer'),
    ('one section fewer than it says (CRC recomputed)',
     recrc(good[:12] + struct.pack('<I', len(sect2) + 1) + good[16:]), 'section header cut'),
]
for name, data, what in cases:
    open(own, 'wb').write(data)
    r = index(['-o', own] + tr)
    lines = [ln for ln in r.stderr.splitlines() if ln]
    ok(r.returncode == 0 and len(lines) == 1 and what in lines[0] and own in lines[0] and
       'byte offset' in lines[0] and parse(own)[0][20:20 + kl2] == good[20:20 + kl2],
       'damaged index (%s): one line, rebuilt' % name, r.stderr)
# random bytes of the header and section headers changed, CRC recomputed so that the parser
# itself meets them: never a crash, at most one line, and a sound index after
import random
rnd = random.Random(11)
heads = list(range(0, 20)) + [o + j for o, _, _, _ in sect2 for j in range(24)]
worst = ''
for i in range(10):
    data = bytearray(good)
    for _ in range(rnd.randint(1, 3)):
        data[rnd.choice(heads)] = rnd.randrange(256)
    open(own, 'wb').write(recrc(bytes(data)))
    r = index(['-o', own] + tr)
    lines = [ln for ln in r.stderr.splitlines() if ln]
    if r.returncode != 0 or len(lines) > 1 or parse(own)[0][20:20 + kl2] != good[20:20 + kl2]:
        worst = 'case %d: exit %d, %s' % (i, r.returncode, r.stderr)
ok(not worst, 'random header damage (10 files, CRC recomputed): exit 0, at most one line, rebuilt', worst)
open(own, 'wb').write(good[:100] + b'\0' + good[101:])
got, s = serve_answers(tr, ['--index', own])
err = s.p.stderr.read()
ok(got == plain and 'checksum does not match' in err and 'rebuilding' in err,
   'serve with a damaged index: one line, rebuilt, same answers', err)
ok(parse(own)[1] == 1, 'serve rewrote it sound')
# the cache's upkeep: an index whose trace changed can never be asked for again and goes;
# past VMS_INDEX_CACHE_MAX bytes the oldest go; -o files are not the cache's
pc = os.path.join(TMP, 'prune-cache')
pa, pb = os.path.join(TMP, 'prune-a'), os.path.join(TMP, 'prune-b')
for d, seed in ((pa, '1'), (pb, '2')):
    subprocess.run([VMS, 'synth', '--events', '20000', '--seed', seed, '--out', d], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
ta = [os.path.join(pa, 'host.dat'), os.path.join(pa, 'guest.dat')]
tb = [os.path.join(pb, 'host.dat'), os.path.join(pb, 'guest.dat')]
ia = index(['--cache-dir', pc] + ta).stdout.strip()
ib = index(['--cache-dir', pc] + tb).stdout.strip()
ok(os.path.isfile(ia) and os.path.isfile(ib) and ia != ib, 'prune: two indexes in the cache')
r = subprocess.run([VMS, 'index', '--prune', '--cache-dir', pc], capture_output=True, text=True,
                   env=ENV)
ok(r.returncode == 0 and r.stdout == '' and os.path.isfile(ia) and os.path.isfile(ib),
   'index --prune: both still these traces\' (nothing removed)', r.stderr)
os.utime(ta[1], ns=(os.stat(ta[1]).st_atime_ns, os.stat(ta[1]).st_mtime_ns + 1000))
r = subprocess.run([VMS, 'index', '--prune', '--cache-dir', pc], capture_output=True, text=True,
                   env=ENV)
ok(r.returncode == 0 and r.stdout.split() == [ia] and not os.path.exists(ia) and
   os.path.isfile(ib), 'index --prune: the index of a touched trace removed, its path printed',
   r.stdout + r.stderr)
ia2 = index(['--cache-dir', pc] + ta).stdout.strip()
os.utime(tb[0], ns=(os.stat(tb[0]).st_atime_ns, os.stat(tb[0]).st_mtime_ns + 1000))
ia3 = index(['--force', '--cache-dir', pc] + ta).stdout.strip()
ok(ia3 == ia2 and os.path.isfile(ia2) and not os.path.exists(ib),
   'writing an index tidies the cache: the stale one of the other pair removed')
ib2 = index(['--cache-dir', pc] + tb).stdout.strip()
os.utime(ia2, (1, 1))   # the oldest
r = subprocess.run([VMS, 'index', '--prune', '--cache-dir', pc], capture_output=True, text=True,
                   env=dict(ENV, VMS_INDEX_CACHE_MAX=str(os.path.getsize(ib2) + 10)))
ok(r.returncode == 0 and r.stdout.split() == [ia2] and os.path.isfile(ib2),
   'past VMS_INDEX_CACHE_MAX: the oldest removed, until the rest fits', r.stdout + r.stderr)
os.utime(tb[0], ns=(os.stat(tb[0]).st_atime_ns, os.stat(tb[0]).st_mtime_ns + 1000))
index(['-o', os.path.join(TMP, 'mine.vmsidx')] + ta)
ok(os.path.isfile(ib2), 'writing with -o leaves the cache alone (its stale index stays)')
r = subprocess.run([VMS, 'index', '--prune'] + ta, capture_output=True, text=True, env=ENV)
ok(r.returncode == 2, 'index --prune TRACE: usage error', r.stderr)
r = index([os.path.join(TMP, 'missing.dat')])
ok(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, 'index of a missing trace: exit 2, one line', r.stderr)
r = subprocess.run([VMS, 'index', '--help'], capture_output=True, text=True)
ok(r.returncode == 0 and '--cache-dir' in r.stdout, 'index --help')
print('1..%d' % n)
sys.exit(1 if failed else 0)

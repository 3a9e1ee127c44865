#!/usr/bin/env python3
"""vmscope serve's checkpoints (TAP): a window computed from the last checkpoint before it
must be the bytes of the same window replayed from the start of the traces (a server run
with VMS_SERVE_CHECKPOINTS=0, a separate process), on the kvm-hip24 pair (../shared/traces)
and a `vmscope synth` pair (trace.dat), the tcp-sync LTTng traces and a `vmscope synth
--format lttng` pair (CTF), a simpletrace file written here, and xentrace: the shared
xen/xentrace.bin and a longer file of 3 copies of it end to end (bench/xen_big.py, read with
the worker pool). Which checkpoint a window started from is checked against the index file
itself, parsed here by its documented layout (man/vmscope-index.1): the spacing
(one every VMS_SERVE_CKPT_EVERY events of the run) and, per window, the last checkpoint whose
event is before the window's start. Damaged checkpoints under a sound checksum: the server
says so once and replays, or answers an error, and never stops serving.
Usage: test_checkpoints.py VMSCOPE (VMS_SHARED_DIR, VMS_BUILD_DIR from the environment)."""
import json, os, random, shutil, struct, subprocess, sys, urllib.error, urllib.parse
import urllib.request, zlib

VMS = sys.argv[1]
SHARED = os.environ.get('VMS_SHARED_DIR', '')
TMP = os.path.join(os.environ.get('VMS_BUILD_DIR', '/tmp'), 'test-tmp', 'serve-ckpt')
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)
ENV = dict(os.environ, XDG_CACHE_HOME=os.path.join(TMP, 'cache'))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from tap import Tap  # noqa: E402
from serve_util import write_raw  # noqa: E402
import serve_util  # noqa: E402
T = Tap()
ok = T.ok


def Server(traces, extra, env=None):
    return serve_util.Server(VMS, traces, extra, env or ENV)


def skip(name, why):
    T.n += 1
    print('ok %d - %s # SKIP %s' % (T.n, name, why))


def checkpoints(data):
    """[(t, n)] of a checkpoints section (native = little-endian u64s here)."""
    assert data[:8] == b'VMSCK1\0\0'
    nsrc, = struct.unpack_from('<I', data, 8)
    off = 12 + 4 * nsrc
    nstreams, = struct.unpack_from('<I', data, off)
    off += 4
    out = []
    while off < len(data):
        ln, t, cn = struct.unpack_from('<QQQ', data, off)
        out.append((t, cn))
        off += 8 + ln
    return out, nstreams


def same(a, b):
    a, b = dict(a), dict(b)
    ca = a.pop('checkpoint_events', None)
    b.pop('checkpoint_events', None)
    return a == b, ca


def run(traces, label, every, windows):
    env = dict(ENV, VMS_SERVE_CKPT_EVERY=str(every))
    idx = os.path.join(TMP, label + '.vmsidx')
    r, key, sects = serve_util.make_index(VMS, traces, idx, env)
    ok(r.returncode == 0, '%s: index written' % label, r.stderr)
    ck = [d for t, d in sects if t == 4]
    ok(len(ck) == 1, '%s: the index holds a checkpoints section (type 4)' % label)
    if not ck:
        return
    cks, nstreams = checkpoints(ck[0])
    a = Server(traces, ['--index', idx], env)
    b = Server(traces, ['--no-index'], dict(ENV, VMS_SERVE_CHECKPOINTS='0'))
    _, rows = a.get('/api/rows')
    first, last, events = rows['first'], rows['last'], rows['events']
    ok([c[1] for c in cks] == [every * (i + 1) for i in range(events // every)],
       '%s: a checkpoint every %d of the %d events (%d)' % (label, every, events, len(cks)),
       [c[1] for c in cks][:10])
    ok(all(cks[i][0] <= cks[i + 1][0] for i in range(len(cks) - 1)) and
       all(first <= t <= last for t, _ in cks), '%s: checkpoint times in order, in the trace' % label)
    rnd = random.Random(5)
    wins = []
    for _ in range(windows):
        w = max(1000, int((last - first) / 10 ** rnd.uniform(0, 4)))
        f = rnd.randint(first, max(first, last - w))
        wins.append((f, f + w))
    # at a checkpoint's own time (not usable: its events are not all before the window), just
    # after it, the whole trace, the last stretch
    k = len(cks) // 2
    wins += [(cks[k][0], cks[k][0] + 10**6), (cks[k][0] + 1, cks[k][0] + 10**6),
             (first, last + 1), (max(first, last - 10**6), last + 1)]
    diffs, wrong_ck, used = [], [], 0
    for f, t in wins:
        want = max([c[1] for c in cks if c[0] < f], default=0)
        for path, extra in (('/api/window', {'px': 700}), ('/api/stats', {})):
            sa, ja = a.get(path, **{'from': f, 'to': t}, **extra)
            sb, jb = b.get(path, **{'from': f, 'to': t}, **extra)
            eq, c = same(ja, jb)
            if sa != 200 or sb != 200 or not eq:
                diffs.append('%s [%d, %d): %d %d' % (path, f, t, sa, sb))
            if c != want:
                wrong_ck.append('%s [%d, %d): from the checkpoint of %s events, want %d' %
                                (path, f, t, c, want))
            used += (c or 0) > 0
    ok(not diffs, '%s: %d windows and stats from checkpoints == replayed from the start' %
       (label, 2 * len(wins)), '\n'.join(diffs[:20]))
    ok(not wrong_ck and used > len(wins), '%s: each from the last checkpoint before it '
       '(%d of %d from one)' % (label, used, 2 * len(wins)), '\n'.join(wrong_ck[:20]))
    a.stop()

    # damaged checkpoints under a sound checksum: the section's bytes changed, stored raw
    bad = os.path.join(TMP, label + '-bad.vmsidx')
    f0, t0 = wins[-4][0] + 1, wins[-4][1]
    _, want = b.get('/api/window', **{'from': f0, 'to': t0, 'px': 300})
    nsrc = struct.unpack_from('<I', ck[0], 8)[0]
    soft = [('cut in half', ck[0][:len(ck[0]) // 2]), ('the header only', ck[0][:40]),
            ('another stream count', ck[0][:12 + 4 * nsrc] + struct.pack('<I', nstreams + 1) +
             ck[0][16 + 4 * nsrc:])]
    worst, nc = serve_util.damaged(VMS, traces, env, bad, key, sects, 4, soft, 9, 'checkpoints',
                                   (f0, t0), want, wins[:4], lambda x, y: same(x, y)[0])
    ok(not worst, '%s: %d damaged checkpoint sections: served on, errors or replays' %
       (label, nc), '\n'.join(worst[:20]))

    # the model the windows use, loaded from section 6: damaged, it is said once and built
    # again (the answers then those of the replay); changed bytes never stop the server
    md = [d for t, d in sects if t == 6]
    ok(len(md) == 1 and md[0][:8] == b'VMSMDL1\0', '%s: the index holds the model (section 6)' % label)
    if md:
        soft = [('cut in half', md[0][:len(md[0]) // 2]), ('the header only', md[0][:44]),
                ('bytes after it', md[0] + b'\0')]
        worst, nc = serve_util.damaged(VMS, traces, env, bad, key, sects, 6, soft, 10, 'model',
                                       (f0, t0), want, wins[:4], lambda x, y: same(x, y)[0],
                                       skip=8)
        ok(not worst, '%s: %d damaged model sections: served on, the model built again or '
           'errors' % (label, nc), '\n'.join(worst[:20]))
    b.stop()


def run_shared(rel, files, label, every, windows):
    """run on traces of ../shared/traces/REL, skipped without them"""
    paths = [os.path.join(SHARED, 'traces', rel, f) for f in files]
    if SHARED and all(os.path.exists(p) for p in paths):
        run(paths, label, every, windows)
    else:
        skip('%s: checkpoints' % label, 'no ../shared/traces')


def run_synth(label, seed, fmt, files, every):
    """run on a `vmscope synth` pair of 60,000 events"""
    out = os.path.join(TMP, label)
    subprocess.run([VMS, 'synth', '--events', '60000', '--seed', str(seed), '--format', fmt,
                    '--out', out], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    run([os.path.join(out, f) for f in files], label, every, 24 if fmt == 'tracedat' else 16)


run_shared('kvm-hip24', ('host.dat', 'guest-Salamander4.dat'), 'kvm-hip24', 2000, 24)
run_synth('synth', 3, 'tracedat', ('host.dat', 'guest.dat'), 5000)
# CTF (issue 21: the CTF reader seeks too): the LTTng kernel traces of two machines, and a
# synthesized LTTng host + guest (a stream file per CPU)
run_shared('tcp-sync', ('scp_src', 'scp_dest'), 'tcp-sync', 7000, 16)
run_synth('synth-lttng', 4, 'lttng', ('host', 'guest'), 5000)


def simpletrace(path, n):
    """A QEMU simpletrace v4 file (trace/simple.c's layout, host byte order = little here) of
    n events: ids mapped late as the file goes, dropped-events records, integer arguments."""
    b = bytearray(struct.pack('<QQQ', 2**64 - 1, 0xf2b177cb0aa429b4, 4))

    def mapping(i, name):
        b.extend(struct.pack('<QQI', 0, i, len(name)) + name)
    for i, name in enumerate([b'virtio_blk_req_complete', b'kvm_run_exit', b'qemu_mutex_lock',
                              b'dma_blk_io']):
        mapping(i, name)
    rnd, ts = random.Random(8), 10**9
    for k in range(n):
        ts += rnd.randint(1, 20000)
        if k % 5000 == 4999:
            mapping(10 + k // 5000, b'late_event')
        if k % 3001 == 3000:
            b.extend(struct.pack('<QQQIIQ', 1, 2**64 - 2, ts, 32, 7, 3))
            continue
        i = rnd.randint(0, 3) if k < 5000 else rnd.choice([0, 1, 2, 3, 10 + (k - 5000) // 5000])
        body = b''.join(struct.pack('<Q', rnd.randint(0, 2**40)) for _ in range(i % 4))
        b.extend(struct.pack('<QQQII', 1, i, ts, 24 + len(body), 7 + i % 4) + body)
    with open(path, 'wb') as f:
        f.write(b)


# simpletrace (issue 21: its reader seeks too): a QEMU process's own trace
st = os.path.join(TMP, 'qemu.st')
simpletrace(st, 40000)
run([st], 'simpletrace', 3000, 16)

# xentrace (issue 21: its reader seeks too, per physical CPU): the shared trace, then 3 copies
# of it end to end (24 CPUs, the later ones starting late), read with the worker pool
run_shared('xen', ('xentrace.bin',), 'xentrace', 7000, 16)
xen = os.path.join(SHARED, 'traces', 'xen', 'xentrace.bin')
if SHARED and os.path.exists(xen):
    big = os.path.join(TMP, 'xentrace-x3.bin')
    src_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
    subprocess.run([sys.executable, os.path.join(src_dir, 'bench', 'xen_big.py'), xen, big, '3'],
                   check=True, stdout=subprocess.DEVNULL)
    ENV['VMS_XENTRACE_POOL_MIN'] = '0'
    run([big], 'xentrace-x3', 20000, 16)
    del ENV['VMS_XENTRACE_POOL_MIN']
else:
    skip('xentrace-x3: checkpoints', 'no ../shared/traces')
sys.exit(T.done())

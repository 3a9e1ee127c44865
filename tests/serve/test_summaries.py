#!/usr/bin/env python3
"""vmscope serve's summaries (TAP): a window answered from the index's per-row summaries
against the same window replayed from the start of the traces (a server run with
VMS_SERVE_SUMMARIES=0 VMS_SERVE_CHECKPOINTS=0, a separate process), on the kvm-hip24 pair
(../shared/traces) and a `vmscope synth` pair. Rows kept whole must be byte-identical; a
summed row's pixels may differ from the replay's by what the buckets cannot place (each
bucket's ns spread evenly over it: at most 2 buckets' width per pixel and category), its exit
count by the share of the two edge buckets (at most 1 %); the rows are the same. The
threshold under which windows are replayed is lowered (VMS_SERVE_SUMMARY_MIN) so that these
small traces have wide windows. Damaged summaries under a sound checksum: said once and
replayed, or a 500, never a crash.
Usage: test_summaries.py VMSCOPE (VMS_SHARED_DIR, VMS_BUILD_DIR from the environment)."""
import json, os, random, shutil, struct, subprocess, sys, urllib.error, urllib.parse
import urllib.request, zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from tap import Tap  # noqa: E402
from serve_util import write_raw  # noqa: E402
import serve_util  # noqa: E402

VMS = sys.argv[1]
SHARED = os.environ.get('VMS_SHARED_DIR', '')
TMP = os.path.join(os.environ.get('VMS_BUILD_DIR', '/tmp'), 'test-tmp', 'serve-summary')
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)
ENV = dict(os.environ, XDG_CACHE_HOME=os.path.join(TMP, 'cache'))
T = Tap()
ok = T.ok


def Server(traces, extra, env=None):
    return serve_util.Server(VMS, traces, extra, env or ENV)


def compare(ja, jb):
    """what differs beyond the summaries' stated precision"""
    bs = ja['summary_ns']
    ra = {r['id']: r for r in ja['rows']}
    rb = {r['id']: r for r in jb['rows']}
    out = []
    if set(ra) != set(rb):
        out.append('rows: only in one: %s' % sorted(set(ra) ^ set(rb)))
    for k in sorted(set(ra) & set(rb)):
        x, y = ra[k], rb[k]
        if x['exact'] != y['exact']:
            out.append('%s: exact %s, replayed %s' % (k, x['exact'], y['exact']))
        elif x['exact'] and x != y:
            out.append('%s: a row kept whole differs' % k)
        elif not x['exact']:
            pa, pb = x['pixels_ns'], y['pixels_ns']
            worst = max(abs(a - b) for p, q in zip(pa, pb) for a, b in zip(p, q))
            if len(pa) != len(pb) or worst > 2 * bs:
                out.append('%s: a pixel off by %d ns (buckets of %d)' % (k, worst, bs))
        if 'exits' in x or 'exits' in y:
            ex, ey = x.get('exits', {}), y.get('exits', {})
            if ex.get('exact') != ey.get('exact'):
                out.append('%s: exits exact %s, replayed %s' % (k, ex.get('exact'), ey.get('exact')))
            elif ex.get('exact') and ex != ey:
                out.append('%s: exits kept whole differ' % k)
            elif abs(ex['count'] - ey['count']) > max(3, ey['count'] // 100):
                out.append('%s: %d exits, replayed %d' % (k, ex['count'], ey['count']))
    return out


def run(traces, label, least, windows):
    env = dict(ENV, VMS_SERVE_SUMMARY_MIN=str(least))
    idx = os.path.join(TMP, label + '.vmsidx')
    r, key, sects = serve_util.make_index(VMS, traces, idx, env)
    ok(r.returncode == 0, '%s: index written' % label, r.stderr)
    sm = [d for t, d in sects if t == 5]
    ok(len(sm) == 1 and sm[0][:8] == b'VMSSUM2\0', '%s: the index holds the summaries (section 5)'
       % label)
    if not sm:
        return
    a = Server(traces, ['--index', idx], env)
    b = Server(traces, ['--no-index'], dict(ENV, VMS_SERVE_CHECKPOINTS='0', VMS_SERVE_SUMMARIES='0'))
    _, rows = a.get('/api/rows')
    first, last = rows['first'], rows['last']
    rnd = random.Random(8)
    wins = [(first, last + 1), (first, (first + last) // 2), (first + (last - first) // 3, last + 1)]
    for _ in range(windows):
        w = max(1000, int((last - first) / 10 ** rnd.uniform(0, 2.5)))
        f = rnd.randint(first, max(first, last - w))
        wins.append((f, f + w))
    used, bad, whole = 0, [], False
    for f, t in wins:
        for px in (1000, 123):
            sa, ja = a.get('/api/window', **{'from': f, 'to': t, 'px': px})
            sb, jb = b.get('/api/window', **{'from': f, 'to': t, 'px': px})
            if sa != 200 or sb != 200:
                bad.append('[%d, %d) px %d: status %d %d' % (f, t, px, sa, sb))
                continue
            if 'summary_ns' not in ja:
                continue
            used += 1
            whole |= (f, t) == wins[0]
            bad += ['[%d, %d) px %d: %s' % (f, t, px, d) for d in compare(ja, jb)]
    ok(used >= len(wins) and whole, '%s: %d of %d windows from the summaries, the whole trace '
       'among them' % (label, used, 2 * len(wins)))
    ok(not bad, '%s: each as the replay within the summaries\' precision' % label,
       '\n'.join(bad[:20]))
    st, ja = a.get('/api/window', **{'from': first, 'to': first + 1000, 'px': 10})
    ok(st == 200 and 'summary_ns' not in ja, '%s: a window of few events is replayed' % label)
    a.stop()

    bad_idx = os.path.join(TMP, label + '-bad.vmsidx')
    _, want = b.get('/api/window', **{'from': first, 'to': last + 1, 'px': 300})
    soft = [('cut in half', sm[0][:len(sm[0]) // 2]), ('the header only', sm[0][:30]),
            ('bytes after it', sm[0] + b'\0')]
    worst, nc = serve_util.damaged(VMS, traces, env, bad_idx, key, sects, 5, soft, 4,
                                   'summaries', (first, last + 1), want, wins[:5],
                                   lambda x, y: 'summary_ns' not in x and x == y)
    ok(not worst, '%s: %d damaged summaries: served on, replays or errors' % (label, nc),
       '\n'.join(worst[:20]))
    b.stop()


if SHARED and os.path.isfile(os.path.join(SHARED, 'traces/kvm-hip24/host.dat')):
    run([os.path.join(SHARED, 'traces/kvm-hip24', f) for f in ('host.dat', 'guest-Salamander4.dat')],
        'kvm-hip24', 5000, 12)
else:
    T.n += 1
    print('ok %d - kvm-hip24: summaries # SKIP no ../shared/traces' % T.n)
synth = os.path.join(TMP, 'synth')
subprocess.run([VMS, 'synth', '--events', '80000', '--seed', '5', '--out', synth], check=True,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
run([os.path.join(synth, 'host.dat'), os.path.join(synth, 'guest.dat')], 'synth', 5000, 12)
sys.exit(T.done())

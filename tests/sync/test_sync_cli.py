#!/usr/bin/env python3
"""`vmscope sync` end to end, checked by computations written here, independent of vmscope's:

- Trace Compass XML stubs written by this test, with TCP events (inet_sock_local_out/in,
  fields seq, ack_seq, flags) between machines whose true clocks are known: the matched pairs
  (--pairs) are exactly the messages written (loopback pairs and a retransmission excluded),
  the quality of each machine is the one its messages imply (accurate, incomplete, fail,
  through the tree), the transform equals the bisector computed here from the same pairs
  (hulls by Andrew's monotone chain, extreme slopes by brute force over them, in exact
  fractions), every message is received after it was sent once transformed, and the
  transform is within the latencies of the truth.
- A KVM host + guest whose vmsync latencies are asymmetric (2 us one way, 30 us the other):
  the bisector is then 14 us off, the containment check shows it, and --refine finds an offset
  within the hull's range that puts every guest event inside a guest-mode window.
  That is with --clock-model linear; by default (auto) the same pair, a guest and its own
  host, has slope 1 and the offset its messages and its containment give, derived by hand
  (test_offset_rule).
  Every command that reads traces takes --clock-model; a bad value is a usage error.
- A guest whose messages allow 1,207,000 ns of offsets, beyond the search's 1,048,576: the
  middle, warned.
- Two hosts by TCP 2,000 ppm apart: auto refuses the hull (beyond 1,000 ppm), linear takes it.
- The real LTTng scp traces (../shared/traces/tcp-sync), when vmscope reads them: ACCURATE,
  the same independent computation from the same matched pairs, and causality; the same 46
  matches and transform under both clock models.

Usage: test_sync_cli.py VMSCOPE. TAP output."""
import csv
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from fractions import Fraction

VMS = sys.argv[1]
SHARED = os.environ.get('VMS_SHARED_DIR', '')
n_test = 0


def ok(cond, what, diag=''):
    global n_test
    n_test += 1
    print(('ok' if cond else 'not ok') + f' {n_test} - {what}' + ('' if cond or not diag else f' # {diag}'))
    return cond


def skip(what, why):
    global n_test
    n_test += 1
    print(f'ok {n_test} - {what} # SKIP {why}')


def write_xml(path, events):
    """events: (timestamp, name, {field: value}) on cpu 0 unless a 'cpu' field is given."""
    events = sorted(events, key=lambda e: e[0])
    with open(path, 'w') as f:
        f.write('<trace>\n<set_aspects>\n<field name="cpu" value="1" type="int" />\n</set_aspects>\n')
        for ts, name, fields in events:
            f.write(f'<event timestamp="{ts}" name="{name}">\n')
            fields = dict(fields)
            f.write(f'<field name="cpu" value="{fields.pop("cpu", 0)}" type="int" />\n')
            for k, v in fields.items():
                t = 'string' if isinstance(v, str) else 'long'
                f.write(f'<field name="{k}" value="{v}" type="{t}" />\n')
            f.write('</event>\n')
        f.write('</trace>\n')


def run_sync(paths, *opts):
    with tempfile.NamedTemporaryFile('r', suffix='.csv') as pf:
        p = subprocess.run([VMS, 'sync', '--json', '--pairs', pf.name, *opts, *paths],
                           capture_output=True, text=True)
        pairs = [(int(r['from']), int(r['to']), int(r['t_send_ns']), int(r['t_recv_ns']))
                 for r in csv.DictReader(open(pf.name))] if p.returncode == 0 else []
    global last_doc
    last_doc = json.loads(p.stdout) if p.returncode == 0 else None
    return p, (last_doc['machines'] if last_doc else None), pairs


def apply(tr, t):
    """vmscope's exact form, documented in man/vmscope-sync.1"""
    v = tr['out0'] + ((t - tr['in0']) * tr['num'] + tr['frac'] + tr['den'] // 2) // tr['den']
    return min(max(v, 0), 2**64 - 1)


def cross(o, a, b):
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def lower_hull(pts):
    h = []
    for p in sorted(set(pts)):
        while len(h) >= 2 and cross(h[-2], h[-1], p) <= 0:
            h.pop()
        h.append(p)
    return h


def upper_hull(pts):
    return [(x, -y) for x, y in lower_hull([(x, -y) for x, y in pts])]


def bisector(pairs, ref, other):
    """The fit of `other` to `ref` from the pairs between them: x = ref's time, y = other's.
    Returns (alpha, beta, alpha_max, alpha_min) as fractions, or None."""
    above = [(s, r) for f, t, s, r in pairs if f == ref and t == other]  # ref -> other
    below = [(r, s) for f, t, s, r in pairs if f == other and t == ref]  # other -> ref
    if not above or not below:
        return None
    A, B = lower_hull(above), upper_hull(below)
    amax = amin = None
    for b in B:
        for a in A:
            if b[0] < a[0]:
                s = Fraction(a[1] - b[1], a[0] - b[0])
                if amax is None or s < amax[0]:
                    amax = (s, b)
            elif a[0] < b[0]:
                s = Fraction(b[1] - a[1], b[0] - a[0])
                if amin is None or s > amin[0]:
                    amin = (s, a)
    if amax is None or amin is None:
        return None
    beta_min = amax[1][1] - amax[0] * amax[1][0]  # the steepest line's intercept
    beta_max = amin[1][1] - amin[0] * amin[1][0]
    return (amax[0] + amin[0]) / 2, (beta_min + beta_max) / 2, amax[0], amin[0]


def check_fit(label, js, pairs, ref_i, i):
    """vmscope's transform of machine i against the bisector computed here, and causality."""
    m = js[i]
    fit = bisector(pairs, ref_i, i)
    if not ok(m['method'] == 'convex-hull' and m['quality'] == 'accurate' and m['applied'] and fit,
              f'{label}: convex-hull, accurate', json.dumps(m)[:300]):
        return
    alpha, beta, amax, amin = fit
    ok(abs(m['accuracy'] - float(amax - amin)) <= 1e-9 * max(1.0, float(amax - amin)),
       f'{label}: accuracy = alpha_max - alpha_min ({float(amax - amin):.3g})', str(m['accuracy']))
    tr = m['transform']
    worst = 0
    times = [r for f, t, s, r in pairs if t == i] + [s for f, t, s, r in pairs if f == i]
    for t in times:
        worst = max(worst, abs(apply(tr, t) - (t - beta) / alpha))
    ok(worst <= 1, f'{label}: transform = the independent bisector within 1 ns on {len(times)} '
       f'timestamps (worst {float(worst):.3f} ns)')
    late = 0
    for f, t, s, r in pairs:
        if {f, t} != {ref_i, i}:
            continue
        ts = apply(tr, s) if f == i else s
        tr_ = apply(tr, r) if t == i else r
        late += tr_ < ts
    ok(late == 0, f'{label}: every matched message received after it was sent, transformed',
       f'{late} messages received before they were sent')
    return tr


def tcp_scenario(tmp):
    """A (reference), B: t_B = t_A * (1 + 20e-6) + 5e9, 400 messages both ways;
    C: t_C = t_B - 3e9, 200 messages with B only (reached through B); D: messages with A that
    contradict each other (received 50 us before sent, both ways): FAIL; E: receives from A
    only: INCOMPLETE. Plus loopback pairs on A and a retransmission."""
    rnd = random.Random(7)
    clocks = {'A': lambda t: t, 'B': lambda t: t + t // 50000 + 5_000_000_000,
              'C': lambda t: t + t // 50000 + 2_000_000_000,
              'D': lambda t: t, 'E': lambda t: t + 777}
    ev = {k: [] for k in clocks}
    msgs = []
    seq = [1000]

    def send(src, dst, t, lat):
        seq[0] += 1
        key = {'seq': seq[0], 'ack_seq': 99, 'flags': 0x18}
        ts, tr = clocks[src](t), clocks[dst](t + lat)
        ev[src].append((ts, 'inet_sock_local_out', key))
        ev[dst].append((tr, 'inet_sock_local_in', key))
        msgs.append((src, dst, ts, tr))
        return key

    base = 1_000_000_000
    for k in range(400):
        t = base + rnd.randrange(2_000_000_000)
        a, b = ('A', 'B') if rnd.random() < 0.5 else ('B', 'A')
        send(a, b, t, rnd.randrange(20_000, 200_000))
    for k in range(200):
        t = base + rnd.randrange(2_000_000_000)
        a, b = ('B', 'C') if rnd.random() < 0.5 else ('C', 'B')
        send(a, b, t, rnd.randrange(20_000, 200_000))
    for k in range(20):
        t = base + k * 50_000_000
        send('A', 'D', t, -50_000)
        send('D', 'A', t + 10_000_000, -50_000)
    for k in range(20):
        send('A', 'E', base + k * 10_000_000, 30_000)
    # loopback on A (ignored) and a retransmission A -> B: the first send wins
    for k in range(5):
        seq[0] += 1
        key = {'seq': seq[0], 'ack_seq': 1, 'flags': 0x10}
        ev['A'] += [(base + k * 1000, 'inet_sock_local_out', key), (base + k * 1000 + 5, 'inet_sock_local_in', key)]
    key = send('A', 'B', base + 500_000_000, 100_000)
    ev['A'].append((base + 500_050_000, 'inet_sock_local_out', key))
    paths = []
    for name in clocks:
        p = os.path.join(tmp, name + '.xml')
        write_xml(p, ev[name])
        paths.append(p)
    return paths, msgs, clocks


def test_tcp(tmp):
    paths, msgs, clocks = tcp_scenario(tmp)
    idx = {n: i for i, n in enumerate('ABCDE')}
    p, js, pairs = run_sync(paths)
    if not ok(p.returncode == 0, 'TCP stubs: vmscope sync --json exits 0', p.stderr.strip()):
        return
    want = sorted((idx[a], idx[b], s, r) for a, b, s, r in msgs)
    ok(sorted(pairs) == want, f'TCP stubs: --pairs lists exactly the {len(want)} messages written '
       '(no loopback pair, the retransmission not matched)', f'{len(pairs)} pairs')
    ms = last_doc.get('matching') or {}
    ok(ms.get('pairs') == len(want) and ms.get('same_machine') == 5 and ms.get('duplicates') == 1 and
       ms.get('expired') == 0, 'TCP stubs: matching counts: 5 loopback pairs, 1 retransmission, none expired',
       json.dumps(ms))
    ok([m['machine'] for m in js] == list('ABCDE') and js[0]['method'] == 'reference',
       'TCP stubs: A is the reference (no host: the first trace)')
    check_fit('TCP stubs B', js, pairs, 0, 1)
    # B's transform against the truth: within the latencies (20-200 us)
    tr = js[1]['transform']
    err = max(abs(apply(tr, clocks['B'](t)) - t) for t in range(1_000_000_000, 3_000_000_000, 7_000_000))
    ok(err < 200_000, f'TCP stubs B: within the latencies of the true clock (worst {err} ns)')
    c = js[2]
    ok(c['method'] == 'convex-hull' and c['quality'] == 'accurate' and c['path'] == ['A', 'B', 'C'],
       'TCP stubs C: reached through B (path A, B, C), accurate', json.dumps(c)[:300])
    if c.get('transform'):
        err = max(abs(apply(c['transform'], clocks['C'](t)) - t)
                  for t in range(1_000_000_000, 3_000_000_000, 7_000_000))
        ok(err < 400_000, f'TCP stubs C: composed transform within the latencies of two hops (worst {err} ns)')
    d, e = js[3], js[4]
    ok(d['quality'] == 'fail' and not d['applied'] and d['slope'] == 1 and d['offset_ns'] == 0,
       'TCP stubs D: messages received before they were sent, both ways: fail, not used',
       json.dumps(d)[:300])
    ok(e['quality'] == 'incomplete' and not e['applied'],
       'TCP stubs E: messages in one direction only: incomplete, not used', json.dumps(e)[:300])
    # --reference B: A is then synchronized to B with the inverse orientation
    p, js, pairs = run_sync(paths, '--reference', 'B')
    if ok(p.returncode == 0 and js[1]['method'] == 'reference', '--reference B: B is the reference',
          p.stderr.strip()):
        check_fit('TCP stubs A to B', js, pairs, 1, 0)
    p = subprocess.run([VMS, 'sync', '--reference', 'nosuch', *paths], capture_output=True, text=True)
    ok(p.returncode == 2 and 'nosuch' in p.stderr and len(p.stderr.strip().splitlines()) == 1,
       '--reference naming no machine: one line, exit 2', p.stderr)


def test_refine(tmp):
    """Host H: vCPU thread 31, guest mode [E_k, E_k + 40 us], E_k = 100 us * k. Guest G:
    t_G = t_H + 1 ms; its events at E_k + 5..8 us. vmsync: host -> guest 30 us, guest -> host
    2 us. At slope 1 the hull allows offsets 1 ms - 2 us .. 1 ms + 30 us; its bisector is
    1 ms + 14 us, which puts the guest's events 14 us early, before the windows open."""
    us = 1000
    h, g = [(1, 'sched_switch', {'prev_comm': 'idle', 'prev_tid': 30, 'prev_prio': 20, 'prev_state': 0,
                                 'next_comm': 'CPU 0/KVM', 'next_tid': 31, 'next_prio': 20})], []
    G = lambda t: t + 1_000_000
    sw = lambda a, b: {'prev_comm': f't{a}', 'prev_tid': a, 'prev_prio': 20, 'prev_state': 0,
                       'next_comm': f't{b}', 'next_tid': b, 'next_prio': 20}
    K = 200
    for k in range(1, K):
        E = 1_000_000 + 100 * us * k
        h.append((E, 'kvm_entry', {'vcpu_id': 0}))
        h.append((E + 40 * us, 'kvm_exit', {'exit_reason': 32, 'isa': 1}))
        h.append((E - 25 * us, 'vmsync_hg_host', {'vm_uid': 42, 'cnt': 2 * k}))
        g.append((G(E + 5 * us), 'vmsync_hg_guest', {'vm_uid': 42, 'cnt': 2 * k}))
        g.append((G(E + 6 * us), 'sched_switch', sw(130, 131)))
        g.append((G(E + 7 * us), 'sched_switch', sw(131, 130)))
        g.append((G(E + 8 * us), 'vmsync_gh_guest', {'vm_uid': 42, 'cnt': 2 * k + 1}))
        h.append((E + 10 * us, 'vmsync_gh_host', {'vm_uid': 42, 'cnt': 2 * k + 1}))
    hp, gp = os.path.join(tmp, 'kvmhost.xml'), os.path.join(tmp, 'kvmguest.xml')
    write_xml(hp, h)
    write_xml(gp, g)
    test_offset_rule(hp, gp, K)
    # the hull (what the default was until the clock model, and Trace Compass's)
    p, js, pairs = run_sync([hp, gp], '--clock-model', 'linear')
    if not ok(p.returncode == 0, 'KVM stubs: sync exits 0', p.stderr.strip()):
        return
    m = js[1]
    ok(m['method'] == 'convex-hull' and m['quality'] == 'accurate' and m['pairs'] == 2 * (K - 1),
       f'KVM stubs: guest by convex-hull from {2 * (K - 1)} vmsync pairs, accurate', json.dumps(m)[:300])
    c = m['containment'] or {}
    # (the first window's 4 events fall before the host thread's first kvm_entry: not counted)
    ok(c.get('total') == 4 * (K - 2) and c.get('inside', 0) < c.get('total', 0) / 2,
       'KVM stubs: containment reported for the hull-synchronized guest, and low (the bisector is 14 us off)',
       json.dumps(c))
    rng = m.get('range_ns') or {}
    ok(abs(rng.get('min', 0) + 16 * us) < 50 and abs(rng.get('max', 0) - 16 * us) < 50,
       'KVM stubs: the hull allows moving the guest by -16 .. +16 us (half of 2 + 30 us each way)',
       json.dumps(rng))
    p, js, pairs = run_sync([hp, gp], '--refine', '--clock-model', 'linear')
    if not ok(p.returncode == 0, 'KVM stubs: sync --refine exits 0', p.stderr.strip()):
        return
    r = js[1].get('refine') or {}
    # containment is full for moves of +9 us .. +16 us (events at 5..8 us, windows of 40 us,
    # 14 us early); at equal containment the smallest move wins
    ok(r.get('total') == 4 * (K - 1) and r.get('inside') == r.get('total') and
       9 * us - 2 <= r.get('moved_ns', 0) <= 16 * us,
       'KVM stubs --refine: moved within the hull range to a full containment', json.dumps(r))
    ok(js[1]['containment'] == m['containment'], 'KVM stubs --refine: the hull\'s own containment still reported')


def test_offset_rule(hp, gp, K):
    """--clock-model auto on test_refine's pair, by hand. A guest and the host that runs it:
    slope 1, only the offset d (t_H = t_G + d) is fitted. Host -> guest (sent at E - 25 us,
    received at G(E + 5 us) = E + 5 us + 1 ms) gives d >= h_send - g_recv = -1 ms - 30 us;
    guest -> host (sent at G(E + 8 us), received at E + 10 us) d <= h_recv - g_send =
    -1 ms + 2 us: the feasible interval is [-1,030,000, -998,000] ns. With u = d + 1 ms the
    guest's events of window k are at E_k + 5..8 us + u; the window is [E_k, E_k + 40 us) and
    its neighbours are 60 us away, so all of them are inside exactly when u >= -5 us (the
    5 us event then at E_k itself: the search counts a window's ends as inside). The most
    inside: d in [-1,005,000, -998,000]; 7,001 offsets, the middle
    -1,001,500 ns. Every guest event is then inside (4 per window, 199 windows)."""
    p, js, pairs = run_sync([hp, gp])
    if not ok(p.returncode == 0 and last_doc.get('clock_model') == 'auto',
              'KVM stubs, clock model auto (the default): sync exits 0 and says its model',
              p.stderr.strip()):
        return
    m = js[1]
    ok(m['method'] == 'convex-hull' and m['quality'] == 'accurate' and m.get('fit') == 'offset' and
       m['slope'] == 1.0, 'KVM stubs auto: a guest and its host: slope 1, only the offset fitted',
       json.dumps(m)[:400])
    ok(m.get('feasible_offset_ns') == {'min': -1_030_000.0, 'max': -998_000.0},
       'KVM stubs auto: feasible offsets [max(h_send - g_recv), min(h_recv - g_send)] = '
       '[-1,030,000, -998,000] ns', json.dumps(m.get('feasible_offset_ns')))
    ok(m.get('offset_chosen_by') == 'containment' and m.get('best_inside') == 4 * (K - 1) and
       m.get('best_offsets_ns') == {'min': -1_005_000.0, 'max': -998_000.0},
       'KVM stubs auto: the most guest events inside guest mode (all 796) for offsets '
       '-1,005,000 .. -998,000 ns', json.dumps(m)[:600])
    tr = m['transform']
    ok(m['offset_ns'] == -1_001_500.0 and all(apply(tr, t) == t - 1_001_500 for t, _, _ in
                                              [(2_000_000, 0, 0), (21_000_000, 0, 0)]),
       'KVM stubs auto: the offset taken is the middle of those, -1,001,500 ns (exact transform)',
       json.dumps(m)[:600])
    c = m['containment'] or {}
    ok(c.get('inside') == c.get('total') == 4 * (K - 1),
       'KVM stubs auto: containment 796 of 796 (the hull\'s bisector had less than half)', json.dumps(c))
    # the guest as the reference: the host is fitted to it, the same rule seen from the other
    # side (t_G = t_H - d): offsets [998,000, 1,030,000], the best [998,000, 1,005,000]
    p, js, pairs = run_sync([hp, gp], '--reference', js[1]['machine'])
    h = (js or [{}])[0]
    ok(p.returncode == 0 and h.get('fit') == 'offset' and
       h.get('feasible_offset_ns') == {'min': 998_000.0, 'max': 1_030_000.0} and
       h.get('best_offsets_ns') == {'min': 998_000.0, 'max': 1_005_000.0} and
       h.get('offset_ns') == 1_001_500.0 and js[1]['containment'] == c,
       'KVM stubs auto, --reference the guest: the host fitted by the same rule (+1,001,500 ns), '
       'the same containment', json.dumps(h)[:500])
    # a session option: every command that reads traces takes it; a bad value is a usage error
    bad = subprocess.run([VMS, 'report', '--clock-model', 'hull', hp, gp], capture_output=True, text=True)
    ok(bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and '--clock-model' in bad.stderr,
       '--clock-model hull: one line, exit 2', bad.stderr)
    out = os.path.join(os.path.dirname(hp), 'clock-model-out')
    failed = []
    for cmd in (['info'], ['report'], ['vcpus'], ['pcpus'], ['threads'], ['exits'], ['latency'],
                ['html', '-o', out + '.html'], ['export', '-o', out + '.json'], ['sync']):
        r = subprocess.run([VMS, *cmd, '--clock-model', 'linear', hp, gp], capture_output=True, text=True)
        if r.returncode != 0:
            failed.append(f'{cmd[0]}: {r.returncode} {r.stderr.strip()[:100]}')
    ok(not failed, '--clock-model linear taken by info report vcpus pcpus threads exits latency html '
       'export sync', '; '.join(failed))


def test_offset_too_wide(tmp):
    """The search's bound: host -> guest messages that take 1.2 ms (guest -> host 2 us) allow
    offsets over 1,207,000 ns, more than the 1,048,576 the search covers: the middle of the
    feasible interval [-1 ms - 1,205,000, -1 ms + 2,000] is kept, -1,601,500 ns, and a
    warning says so."""
    us = 1000
    h = [(1, 'sched_switch', {'prev_comm': 'idle', 'prev_tid': 30, 'prev_prio': 20, 'prev_state': 0,
                              'next_comm': 'CPU 0/KVM', 'next_tid': 31, 'next_prio': 20})]
    g = []
    for k in range(1, 40):
        E = 10_000_000 + 2000 * us * k
        h += [(E, 'kvm_entry', {'vcpu_id': 0}), (E + 40 * us, 'kvm_exit', {'exit_reason': 32, 'isa': 1}),
              (E - 1200 * us, 'vmsync_hg_host', {'vm_uid': 43, 'cnt': 2 * k}),
              (E + 10 * us, 'vmsync_gh_host', {'vm_uid': 43, 'cnt': 2 * k + 1})]
        g += [(E + 5 * us + 1_000_000, 'vmsync_hg_guest', {'vm_uid': 43, 'cnt': 2 * k}),
              (E + 8 * us + 1_000_000, 'vmsync_gh_guest', {'vm_uid': 43, 'cnt': 2 * k + 1})]
    hp, gp = os.path.join(tmp, 'widehost.xml'), os.path.join(tmp, 'wideguest.xml')
    write_xml(hp, h)
    write_xml(gp, g)
    p, js, pairs = run_sync([hp, gp])
    m = (js or [{}, {}])[1]
    ok(p.returncode == 0 and m.get('feasible_offset_ns') == {'min': -2_205_000.0, 'max': -998_000.0} and
       m.get('offset_chosen_by') == 'middle (interval too wide)' and m.get('offset_ns') == -1_601_500.0 and
       'wider than 1,048,576 ns' in p.stderr,
       'a feasible interval of 1,207,000 ns: beyond the search, its middle (-1,601,500 ns), warned',
       (p.stderr + json.dumps(m)[:500]).replace('\n', ' | '))


def test_drift_bound(tmp):
    """Two hosts by TCP whose clocks drift 2,000 ppm apart (t_F = 1.002 t_A + 1 s): beyond
    the 1,000 ppm NTP-disciplined clocks can drift, so --clock-model auto refuses the hull
    (not applied, a warning); --clock-model linear takes it (the bisector, as computed here)."""
    rnd = random.Random(11)
    ev = {'A': [], 'F': []}
    F = lambda t: t + t // 500 + 1_000_000_000
    for k in range(100):
        t = 1_000_000_000 + k * 20_000_000 + rnd.randrange(1_000_000)
        a, b = ('A', 'F') if k % 2 else ('F', 'A')
        key = {'seq': 5000 + k, 'ack_seq': 7, 'flags': 0x18}
        lat = rnd.randrange(20_000, 100_000)
        ev[a].append(((F if a == 'F' else int)(t), 'inet_sock_local_out', key))
        ev[b].append(((F if b == 'F' else int)(t + lat), 'inet_sock_local_in', key))
    paths = []
    for name in 'AF':
        paths.append(os.path.join(tmp, f'drift-{name}.xml'))
        write_xml(paths[-1], ev[name])
    p, js, pairs = run_sync(paths)
    f = (js or [{}, {}])[1]
    ok(p.returncode == 0 and f.get('method') == 'convex-hull' and f.get('quality') == 'accurate' and
       not f.get('applied') and f.get('max_drift_ppm') == 1000 and
       re.search(r'drift-F: the convex hull.s slope 1\.002\d* is 200\d ppm from 1.*refused', p.stderr),
       'TCP, 2,000 ppm apart, auto: the hull refused (not used), with a warning',
       (p.stderr + json.dumps(f)[:300]).replace('\n', ' | '))
    p, js, pairs = run_sync(paths, '--clock-model', 'linear')
    if ok(p.returncode == 0 and last_doc.get('clock_model') == 'linear' and 'refused' not in p.stderr,
          'TCP, 2,000 ppm apart, --clock-model linear: no refusal', p.stderr):
        check_fit('TCP 2,000 ppm linear', js, pairs, 0, 1)


def match_dumps(paths):
    """TCP pairs from each trace's own `vmscope dump` text (seconds with microseconds), by the
    rules of the man page, written again here: in time order, an event whose key waits on the
    other side completes a pair (ignored within one machine), else it waits unless its key
    already does (the first wins)."""
    evs = []
    for m, p in enumerate(paths):
        out = subprocess.run([VMS, 'dump', p], capture_output=True, text=True).stdout
        for line in out.splitlines():
            w = line.split()
            if len(w) < 4 or w[3] not in ('inet_sock_local_out:', 'inet_sock_local_in:'):
                continue
            f = dict(x.split('=', 1) for x in w[4:] if '=' in x)
            key = (int(f['seq'], 0), int(f['ack_seq'], 0), int(f['flags'], 0))
            sec, us = w[0].split('.')
            evs.append((int(sec) * 10**6 + int(us), m, w[3] == 'inet_sock_local_out:', key))
    evs.sort(key=lambda e: (e[0], e[1]))
    wait = {True: {}, False: {}}
    pairs = []
    for t, m, out, key in evs:
        other = wait[not out]
        if key in other:
            om, ot = other.pop(key)
            if om != m:
                pairs.append((m, om, t, ot) if out else (om, m, ot, t))
        elif key not in wait[out]:
            wait[out][key] = (m, t)
    return sorted(pairs)


def test_scp():
    src = os.path.join(SHARED, 'traces/tcp-sync/scp_src')
    dst = os.path.join(SHARED, 'traces/tcp-sync/scp_dest')
    if not (SHARED and os.path.isdir(src) and os.path.isdir(dst)):
        for _ in range(5):
            skip('scp traces', 'shared traces missing')
        return
    p, js, pairs = run_sync([src, dst])
    if p.returncode != 0:
        for _ in range(5):
            skip('scp traces', 'vmscope cannot read LTTng CTF yet: ' + (p.stderr.strip().splitlines() or [''])[0])
        return
    want = match_dumps([src, dst])
    got = sorted((f, t, s / 1000, r / 1000) for f, t, s, r in pairs)
    same = len(got) == len(want) and all(
        g[:2] == w[:2] and abs(g[2] - w[2]) <= 1 and abs(g[3] - w[3]) <= 1 for g, w in zip(got, want))
    ok(len(want) > 20 and same,
       f'scp: the {len(pairs)} matched TCP messages are those a matching written here finds in '
       f'`vmscope dump` of each trace (times to the microsecond)', f'{len(want)} expected')
    check_fit('scp', js, pairs, 0, 1)
    # two hosts, 51 ppm apart: the clock model changes nothing (Trace Compass's transform)
    pl, jl, pairs_l = run_sync([src, dst], '--clock-model', 'linear')
    ok(pl.returncode == 0 and len(pairs) == len(pairs_l) == 46 and jl == js and
       js[1].get('fit') == 'slope and offset',
       'scp: the same 46 matches and the same transform with --clock-model auto and linear',
       json.dumps(js)[:300])


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_tcp(tmp)
        test_refine(tmp)
        test_drift_bound(tmp)
        test_offset_too_wide(tmp)
    test_scp()
    print(f'1..{n_test}')  # a trailing plan: a check that bails out early shows as one failure


main()

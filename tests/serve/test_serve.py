#!/usr/bin/env python3
"""vmscope serve end to end (TAP): the server's hostile input, and its answers against the
other commands. The expected values come from `vcpus/threads/pcpus/exits --csv --from --to`
and `dump --from --to` run as separate processes (not from the server's code): on the
kvm-hip24 pair (../shared/traces) and on a small `vmscope synth` pair.
Usage: test_serve.py VMSCOPE (VMS_SHARED_DIR, VMS_BUILD_DIR from the environment)."""
import csv, io, json, os, socket, subprocess, sys, time, urllib.parse

VMS = sys.argv[1]
SHARED = os.environ.get('VMS_SHARED_DIR', '')
TMP = os.path.join(os.environ.get('VMS_BUILD_DIR', '/tmp'), 'test-tmp', 'serve')
os.makedirs(TMP, exist_ok=True)
n = 0
failed = 0


def ok(cond, name, diag=''):
    global n, failed
    n += 1
    if not cond:
        failed += 1
        print('not ok %d - %s' % (n, name))
        if diag:
            for line in str(diag).splitlines()[:20]:
                print('# ' + line)
    else:
        print('ok %d - %s' % (n, name))


class Server:
    def __init__(self, traces, extra=(), stderr=subprocess.DEVNULL):
        # the index cache in the build tree, never the user's (test_index.py tests it)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(TMP, 'cache'))
        self.p = subprocess.Popen([VMS, 'serve'] + list(extra) + traces, stdout=subprocess.PIPE,
                                  stderr=stderr, text=True, env=env)
        url = self.p.stdout.readline().strip()
        u = urllib.parse.urlparse(url)
        self.url = url
        self.port = u.port
        self.token = urllib.parse.parse_qs(u.query)['token'][0]

    def raw(self, data, timeout=10, shut=True):
        s = socket.create_connection(('127.0.0.1', self.port), timeout=timeout)
        try:   # the server may answer and close before it has read everything
            s.sendall(data)
            if shut:
                s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        out = b''
        while True:
            try:
                b = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not b:
                break
            out += b
        s.close()
        return out

    def get(self, path, params=None, host=None, token=True):
        q = dict(params or {})
        if token:
            q['token'] = self.token
        target = path + ('?' + urllib.parse.urlencode(q) if q else '')
        req = 'GET %s HTTP/1.1\r\nHost: %s\r\n\r\n' % (target, host or '127.0.0.1:%d' % self.port)
        return self.parse(self.raw(req.encode()))

    @staticmethod
    def parse(resp):
        if not resp:
            return 0, b''
        head, _, body = resp.partition(b'\r\n\r\n')
        return int(head.split(b' ')[1]), body

    def api(self, path, params=None):
        st, body = self.get(path, params)
        if st != 200:
            raise RuntimeError('%s %s: %d %s' % (path, params, st, body[:300]))
        return json.loads(body)

    def stop(self):
        self.p.terminate()
        try:
            return self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return -1


def cmd_csv(args):
    out = subprocess.run([VMS] + args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True).stdout
    return list(csv.DictReader(io.StringIO(out)))


def hostile(sv):
    alive = lambda: sv.get('/api/rows')[0] == 200
    P = sv.port
    cases = [
        ('no token', lambda: sv.get('/api/rows', token=False)[0], (403,)),
        ('a wrong token', lambda: sv.get('/api/rows', {'token': '0' * 32}, token=False)[0], (403,)),
        ('a token one digit short', lambda: sv.get('/api/rows', {'token': sv.token[:-1]}, token=False)[0], (403,)),
        ('another Host', lambda: sv.get('/api/rows', host='evil.example:%d' % P)[0], (421, 403)),
        ('Host with another port', lambda: sv.get('/api/rows', host='127.0.0.1:%d' % (P + 1))[0], (421, 403)),
        ('no Host', lambda: sv.parse(sv.raw(('GET /api/rows?token=%s HTTP/1.1\r\n\r\n' % sv.token).encode()))[0], (400,)),
        ('two Host headers', lambda: sv.parse(sv.raw(('GET /?token=%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nHost: evil:1\r\n\r\n' % (sv.token, P)).encode()))[0], (400,)),
        ('a path outside the page', lambda: sv.get('/../../etc/passwd')[0], (404, 400)),
        ('an unknown API', lambda: sv.get('/api/nothing')[0], (404,)),
        ('POST', lambda: sv.parse(sv.raw(('POST /api/rows?token=%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 4\r\n\r\nabcd' % (sv.token, P)).encode()))[0], (405, 400)),
        ('garbage', lambda: sv.parse(sv.raw(b'\x00\x01\x02 garbage\r\n\r\n'))[0], (400,)),
        ('HTTP/2 preface', lambda: sv.parse(sv.raw(b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'))[0], (400, 405)),
        ('a 100 KiB request line', lambda: sv.parse(sv.raw(b'GET /' + b'a' * 100000 + b' HTTP/1.1\r\n\r\n'))[0], (414,)),
        ('20 KiB of headers', lambda: sv.parse(sv.raw(('GET /?token=%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n' % (sv.token, P)).encode() + b'X-A: ' + b'b' * 20000 + b'\r\n\r\n'))[0], (431,)),
        ('a 1000-byte parameter', lambda: sv.get('/api/search', {'q': 'x' * 1000})[0], (400, 414)),
        ('40 parameters', lambda: sv.get('/api/rows', {'p%d' % i: '1' for i in range(40)})[0], (400,)),
        ('a parameter twice', lambda: sv.parse(sv.raw(('GET /api/rows?token=%s&token=%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n' % (sv.token, sv.token, P)).encode()))[0], (400,)),
        ('a bad %-escape', lambda: sv.parse(sv.raw(('GET /api/search?token=%s&q=%%zz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n' % (sv.token, P)).encode()))[0], (400,)),
        ('%00 in a parameter', lambda: sv.parse(sv.raw(('GET /api/search?token=%s&q=a%%00b HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n' % (sv.token, P)).encode()))[0], (400,)),
        ('from not a number', lambda: sv.get('/api/window', {'from': 'abc', 'to': '5'})[0], (400,)),
        ('from beyond 2^64', lambda: sv.get('/api/window', {'from': '99999999999999999999999', 'to': '1'})[0], (400,)),
        ('from after to', lambda: sv.get('/api/window', {'from': '10', 'to': '5'})[0], (400,)),
        ('a negative px', lambda: sv.get('/api/window', {'from': '1', 'to': '5', 'px': '-3'})[0], (400,)),
        ('a huge px', lambda: sv.get('/api/window', {'from': '1', 'to': '5', 'px': '100000000'})[0], (400,)),
        ('a window outside the trace', lambda: sv.get('/api/window', {'from': '1', 'to': '5', 'px': '10'})[0], (400,)),
        ('a huge event limit', lambda: sv.get('/api/events', {'from': '1', 'to': '5', 'limit': '1000000000'})[0], (400,)),
        ('an empty search', lambda: sv.get('/api/search', {'q': ''})[0], (400,)),
    ]
    for name, fn, want in cases:
        st = fn()
        ok(st in want, 'refused: %s (%d, want %s)' % (name, st, '/'.join(map(str, want))))
        ok(alive(), 'serves after: %s' % name)
    # a client that sends half a request and waits: answered 408 within the bound, and the
    # server then serves again
    t = time.time()
    st = sv.parse(sv.raw(b'GET /api/rows HTTP/1.1\r\n', timeout=15, shut=False))[0]
    ok(st == 408 and time.time() - t < 12, 'a stalled request: 408 within the time bound (%d)' % st)
    ok(alive(), 'serves after a stalled request')
    st, body = sv.get('/')
    ok(st == 200 and b'<html' in body, 'the page with the token')
    ok(b'connect-src' not in body or b"connect-src 'self'" in body,
       "the page may fetch from its own origin only")


def window_checks(sv, traces, label):
    rows = sv.api('/api/rows')
    first, last = rows['first'], rows['last']
    span = last - first
    wins = [(first + span // 3, first + span // 3 + span // 50),
            (first + span // 2, first + span // 2 + span // 400)]
    names = {}
    for r in rows['rows']:
        names[r['id']] = r
    for (lo, hi) in wins:
        tag = '%s [%d,%d)' % (label, lo, hi)
        w = sv.api('/api/window', {'from': lo, 'to': hi, 'px': 4096})
        got = {r['id']: r for r in w['rows']}
        exact = all(r['exact'] for r in w['rows'])
        ok(exact, '%s: every row exact at 4096 px' % tag)
        win = ['--from', str(lo), '--to', str(hi)]
        # vCPUs
        exp, act = [], []
        for row in cmd_csv(['vcpus', '--csv'] + win + traces):
            exp.append((row['machine'], int(row['vcpu']), int(row['start_ns']), int(row['end_ns']),
                        int(row['status']), row['state']))
        for rid, r in got.items():
            if not rid.startswith('v:') or not r['exact']:
                continue
            m = names[rid]['machine'] if rid in names else rid
            v = int(rid.split(':')[2])
            for iv in r['intervals']:
                act.append((m, v, iv['start'], iv['end'], iv['status'], iv['state']))
        ok(len(exp) > 0 and sorted(exp) == sorted(act),
           '%s: vCPU intervals = vcpus --csv (%d rows)' % (tag, len(exp)),
           'expected %d, got %d; first difference %s' % (len(exp), len(act),
           sorted(set(exp) ^ set(act))[:3]))
        # guest threads
        exp = [(r['machine'], int(r['tid']), int(r['start_ns']), int(r['end_ns']), r['reason'],
                int(r['host_tid']) if r['host_tid'] else -1)
               for r in cmd_csv(['threads', '--csv'] + win + traces)]
        act = []
        for rid, r in got.items():
            if rid.startswith('t:') and r['exact']:
                m = int(rid.split(':')[1])
                mn = next((x['machine'] for x in rows['rows'] if x['id'].startswith('v:%d:' % m)), '?')
                for iv in r['intervals']:
                    act.append((mn, int(rid.split(':')[2]), iv['start'], iv['end'], iv['reason'],
                                iv['host_tid']))
        ok(sorted(exp) == sorted(act), '%s: thread intervals = threads --csv (%d rows)' % (tag, len(exp)),
           'expected %d, got %d: %s' % (len(exp), len(act), sorted(set(exp) ^ set(act))[:3]))
        # physical CPUs
        exp = [(r['host'], int(r['cpu']), int(r['start_ns']), int(r['end_ns']),
                r['tid'] or '-') for r in cmd_csv(['pcpus', '--csv'] + win + traces)]
        act = []
        for rid, r in got.items():
            if rid.startswith('p:'):
                hn = names.get(rid, {}).get('machine', '?')
                for iv in r['intervals']:
                    act.append((hn, int(rid.split(':')[2]), iv['start'], iv['end'],
                                str(iv['tid']) if iv['tid'] >= 0 else '-'))
        ok(len(exp) > 0 and sorted(exp) == sorted(act),
           '%s: physical CPU intervals = pcpus --csv (%d rows)' % (tag, len(exp)),
           'expected %d, got %d: %s' % (len(exp), len(act), sorted(set(exp) ^ set(act))[:3]))
        # exits per vCPU and reason: count, total, min, max, unfinished
        exp = {}
        for r in cmd_csv(['exits', '--csv'] + win + traces):
            exp[(r['machine'], int(r['vcpu']), r['name'])] = (
                int(r['count']), int(r['total_ns']), int(r['unfinished']),
                int(r['min_ns']), int(r['max_ns']))
        act = {}
        for rid, r in got.items():
            if not rid.startswith('v:') or not r['exits']['exact']:
                continue
            m = names[rid]['machine']
            v = int(rid.split(':')[2])
            per = {}
            for x in r['exits']['slices']:
                per.setdefault(x['name'], []).append(x)
            for name, xs in per.items():
                d = [x['duration'] for x in xs if x['duration'] is not None]
                act[(m, v, name)] = (len(xs), sum(d), len(xs) - len(d),
                                     min(d) if d else 0, max(d) if d else 0)
        ok(len(exp) > 0 and exp == act, '%s: exit slices = exits --csv (%d rows, %d exits)' % (
            tag, len(exp), sum(e[0] for e in exp.values())),
           'expected %s\ngot %s' % (sorted(exp.items())[:4], sorted(act.items())[:4]))
        # a summary at few pixels: the ns per pixel add up to the exact intervals' time
        w2 = sv.api('/api/window', {'from': lo, 'to': hi, 'px': 1})
        summ = [r for r in w2['rows'] if not r['exact']]
        good = all((r['count'] > 2) == (not r['exact']) for r in w2['rows'])
        for r in summ:
            tot = sum(sum(p) for p in r['pixels_ns'])
            ex = got[r['id']]
            want = sum(iv['end'] - iv['start'] for iv in ex['intervals'])
            good &= tot == want and r['count'] == ex['count']
        if summ:
            ok(good, '%s: at 1 px, rows of > 2 intervals are summaries holding the exact time (%d rows)' % (tag, len(summ)))
        else:
            ok(good, '%s: at 1 px no row has > 2 intervals, every row exact # SKIP no summary to check' % tag)
        # the events: the lines dump prints
        ev = sv.api('/api/events', {'from': lo, 'to': hi, 'limit': 500})
        dump = subprocess.run([VMS, 'dump', '--from', str(lo), '--to', str(hi), '--limit', '500'] +
                              [t for t in traces], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True).stdout.splitlines()
        ok(len(dump) > 0 and ev['lines'] == dump, '%s: events = dump --from --to (%d lines)' % (tag, len(dump)))
    return rows


def stats_checks(sv, traces, rows, label):
    # /api/stats of a range: per vCPU the ns by state = the sum of vcpus --csv's intervals
    # clipped to it; per vCPU and reason the exits of exits --csv (count, total, min, max,
    # unfinished) and a histogram holding every ended exit
    first, last = rows['first'], rows['last']
    span = last - first
    lo, hi = first + span // 4, first + span // 4 + span // 20
    names = {r['id']: r for r in rows['rows']}
    st = sv.api('/api/stats', {'from': lo, 'to': hi})
    win = ['--from', str(lo), '--to', str(hi)]
    exp = {}
    for r in cmd_csv(['vcpus', '--csv'] + win + traces):
        k = (r['machine'], int(r['vcpu']), r['state'])
        d = min(int(r['end_ns']), hi) - max(int(r['start_ns']), lo)
        if d > 0:
            exp[k] = exp.get(k, 0) + d
    act = {}
    for r in st['rows']:
        if r['kind'] != 'vcpu':
            continue
        for c, ns in zip(r['categories'], r['state_ns']):
            if ns:
                act[(names[r['id']]['machine'], int(r['id'].split(':')[2]), c)] = ns
    ok(len(exp) > 0 and exp == act, '%s [%d,%d): stats ns by state = vcpus --csv clipped (%d)' % (
        label, lo, hi, len(exp)), 'expected %s\ngot %s' % (sorted(exp.items())[:4], sorted(act.items())[:4]))
    exp = {}
    for r in cmd_csv(['exits', '--csv'] + win + traces):
        exp[(r['machine'], int(r['vcpu']), r['name'])] = (
            int(r['count']), int(r['total_ns']), int(r['unfinished']), int(r['min_ns']),
            int(r['max_ns']))
    act, bins_ok = {}, True
    for r in st['rows']:
        for x in r.get('exits', []):
            act[(names[r['id']]['machine'], int(r['id'].split(':')[2]), x['name'])] = (
                x['count'], x['total_ns'], x['unfinished'], x['min_ns'] or 0, x['max_ns'] or 0)
            bins_ok &= sum(c for _, c in x['bins']) == x['ended']
    ok(len(exp) > 0 and exp == act and bins_ok,
       '%s: stats exits by reason = exits --csv (%d rows), histograms hold every ended exit' % (
           label, len(exp)), 'expected %s\ngot %s' % (sorted(exp.items())[:4], sorted(act.items())[:4]))
    # who took each vCPU's CPU in the range: report --from --to --json's steal entries
    rep = json.loads(subprocess.run([VMS, 'report', '--json'] + win + traces, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, text=True).stdout)
    exp = {}
    for g in rep['machines']:
        for v in g.get('vcpus') or []:
            exp[(g['name'], v['vcpu'])] = [(e['kind'], e['tid'], e['pid'], e['comm'], e.get('layer'), e['ns'])
                                           for e in v['steal']]
    act, unseen_ok = {}, True
    for r in st['rows']:
        if r['kind'] == 'vcpu':
            k = (names[r['id']]['machine'], int(r['id'].split(':')[2]))
            # no sched_switch from the host: unknown (null), where report shows no entry
            unseen_ok &= (r['steal'] is None) == (not r['preempt_visible'])
            act[k] = [(e['kind'], e['tid'], e['pid'], e['comm'], e.get('layer'), e['ns'])
                      for e in (r['steal'] or [])]
    ok(unseen_ok and (label != 'kvm-hip24' or all(
        not r['preempt_visible'] for r in st['rows'] if r['kind'] == 'vcpu')),
       '%s: stats steal is null where the host recorded no sched_switch' % label)
    nsteal = sum(len(x) for x in exp.values())
    ok(exp == act and (nsteal > 0 or label.startswith('kvm-hip24')),
       '%s: stats steal = report --from --to --json\'s (%d entries)' % (label, nsteal),
       'expected %s\ngot %s' % (sorted(exp.items())[:3], sorted(act.items())[:3]))
    for bad in ({'from': hi, 'to': lo}, {'from': 'x', 'to': hi}, {'to': hi}):
        st_, _ = sv.get('/api/stats', bad)
        ok(st_ == 400, '%s: /api/stats %s refused (%d)' % (label, bad, st_))


def search_checks(sv, traces, label):
    # a guest thread's name, taken from dump's sched_switch lines (next_comm=NAME)
    dump = subprocess.run([VMS, 'dump'] + traces, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True).stdout.splitlines()
    names = {}
    for line in dump:
        if ' sched_switch: ' in line and 'next_comm=' in line and ' host ' not in line:
            nm = line.split('next_comm=')[1].split(' next_pid=')[0]
            if nm and not nm.startswith('swapper'):
                names[nm] = names.get(nm, 0) + 1
    if not names:
        ok(True, '%s: # SKIP no guest sched_switch' % label)
        return
    name = min(names, key=lambda k: (names[k], k))   # the rarest: its every switch in
    res = sv.api('/api/search', {'q': name, 'max': 100000})
    times = {line.split(' ')[0] for line in dump if 'next_comm=%s next_pid=' % name in line}
    got = set()
    for m in res['matches']:
        us = (m['t'] + 500) // 1000
        got.add('%d.%06d' % (us // 1000000, us % 1000000))
    ok(len(res['matches']) > 0 and got <= times,
       '%s: search "%s" finds %d times, each a dump sched_switch into it (%d)' % (
           label, name, len(res['matches']), len(times)), str(sorted(got - times)[:3]))
    res = sv.api('/api/search', {'q': 'HLT', 'max': 100000})
    hlt = sum(int(r['count']) for r in cmd_csv(['exits', '--csv'] + traces) if r['name'] == 'HLT')
    ok(len(res['matches']) == hlt, '%s: search HLT = the HLT exits of exits --csv (%d, %d)' % (
        label, len(res['matches']), hlt))


def findings_checks(sv, traces, label):
    rep = json.loads(subprocess.run([VMS, 'report', '--json'] + traces, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, text=True).stdout)
    got = sv.api('/api/findings')
    ok(got['findings'] == rep['findings'], '%s: /api/findings = report --json findings (%d)' % (
        label, len(rep['findings'])), '%s\n%s' % (got['findings'][:2], rep['findings'][:2]))


def run(traces, label, with_hostile):
    sv = Server(traces)
    try:
        findings_checks(sv, traces, label)
        if with_hostile:
            hostile(sv)
        rows = window_checks(sv, traces, label)
        stats_checks(sv, traces, rows, label)
        search_checks(sv, traces, label)
    except Exception as e:  # a crash of the server shows here
        ok(False, '%s: the API answered' % label, repr(e))
    st = sv.stop()
    ok(st == 0, '%s: serve exits 0 on SIGTERM (%s)' % (label, st))


st = subprocess.run([VMS, 'serve', '--port', '70000', 'x'], capture_output=True)
ok(st.returncode == 2, 'serve --port 70000: usage error (2)')
st = subprocess.run([VMS, 'serve', '--help'], capture_output=True, text=True)
ok(st.returncode == 0 and '--port' in st.stdout, 'serve --help')
hip = os.path.join(SHARED, 'traces', 'kvm-hip24')
synth = os.path.join(TMP, 'synth')
subprocess.run([VMS, 'synth', '--events', '60000', '--out', synth], stdout=subprocess.DEVNULL,
               stderr=subprocess.DEVNULL, check=True)
if os.path.exists(os.path.join(hip, 'host.dat')):
    run([os.path.join(hip, 'host.dat'), os.path.join(hip, 'guest-Salamander4.dat')], 'kvm-hip24', True)
else:
    print('# kvm-hip24 missing: only the synthesized pair')
run([os.path.join(synth, 'host.dat'), os.path.join(synth, 'guest.dat')], 'synth', False)
print('1..%d' % n)
sys.exit(1 if failed else 0)

#!/usr/bin/env bash
# vmscope index and serve on a synthesized host + guest pair (release build):
#  - the index's build time against `report` on the same pair (goal <= 1.3x), wall and CPU;
#  - the index's size against the traces' (goal <= 5 %);
#  - the time to the first window of the whole trace: serve started, /api/rows and
#    /api/window over [first, last] answered, with the index and without (--no-index);
#  - window latency at random zooms and positions (width span/10^u, u uniform in [0, 4],
#    start uniform; median and p99, wall and the server's CPU; goal < 100 ms / < 300 ms),
#    by source (summary / checkpoint / start), the slowest windows (width, source, the
#    events a replay went through: VMS_SERVE_WINDOW_STATS=1) and the server's peak RSS
#    (VmHWM) after them. 200 windows by default: with 30 the p99 is the slowest one.
# report and index alternate, ROUNDS times each (default 3): the medians, and the ratio by
# wall and CPU. The index holds the page, the findings, the rows, the checkpoints (every
# 100,000 events), the per-row summaries and the model: a window starts from its checkpoint,
# or is answered from the summaries when it holds 400,000 events or more.
# Figures of each run: the README's Speed table (its "vmscope index / serve" row).
# usage: bench/bench_index.sh [EVENTS] [WINDOWS]   (default 50000000 events, 200 windows)
#        ROUNDS=N alternating runs of report and index (default 3)
#        BENCH_DIR=DIR where the pair is made and every output goes (default $VMS_BUILD/bench-data)
#        PAIR=DIR an existing pair (host.dat, guest.dat) used in place, only read
#        VMS_BUILD=DIR picks the build (default build-release, made when missing)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-50000000}
windows=${2:-200}
build=${VMS_BUILD:-build-release}
[ -f "$build/build.ninja" ] || meson setup "$build" -Dbuildtype=release -Dtests=false >/dev/null
ninja -C "$build" tools/vmscope/vmscope >/dev/null
vms=$build/tools/vmscope/vmscope
work=${BENCH_DIR:-$build/bench-data}
d=${PAIR:-$work/pair-$n}
mkdir -p "$work"
[ -f "$d/host.dat" ] || $vms synth --events "$n" --seed 7 --out "$d" >/dev/null
measure() {   # wall s, CPU s, peak MiB
  /usr/bin/time -f '%e %U %S %M' -o "$work/time.txt" "$@" >/dev/null 2>"$work/err.txt" ||
    { cat "$work/err.txt" >&2; exit 1; }
  awk '{printf "%s %.2f %.1f\n", $1, $2 + $3, $4 / 1024}' "$work/time.txt"
}
idx="$work/pair-$n.vmsidx"
rounds=${ROUNDS:-3}
: > "$work/rounds.txt"
: > "$work/rows-stats.txt"
for _ in $(seq "$rounds"); do
  echo "report $(measure $vms report "$d/host.dat" "$d/guest.dat")" >> "$work/rounds.txt"
  echo "index $(measure env VMS_SERVE_ROWS_STATS=1 $vms index --force -o "$idx" "$d/host.dat" "$d/guest.dat")" >> "$work/rounds.txt"
  grep '^vmscope rows:' "$work/err.txt" >> "$work/rows-stats.txt" || true
done
median() {   # median of column $2 of the rows named $1
  awk -v k="$1" -v c="$2" '$1 == k {print $c}' "$work/rounds.txt" | sort -g |
    awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
rw=$(median report 2); rc=$(median report 3); rm=$(median report 4)
iw=$(median index 2); ic=$(median index 3); im=$(median index 4)
echo "medians of $rounds alternating runs each; load $(cut -d' ' -f1-3 /proc/loadavg)"
tsize=$(( $(stat -c %s "$d/host.dat") + $(stat -c %s "$d/guest.dat") ))
isize=$(stat -c %s "$idx")
echo "pair: $n events, traces $tsize bytes ($d)"
printf 'report:        wall %6.2f s  cpu %6.2f s  peak %7.1f MiB\n' "$rw" "$rc" "$rm"
printf 'index build:   wall %6.2f s  cpu %6.2f s  peak %7.1f MiB  (%.2fx report wall, %.2fx cpu; goal <= 1.3x)\n' \
  "$iw" "$ic" "$im" "$(echo "$iw / $rw" | bc -l)" "$(echo "$ic / $rc" | bc -l)"
echo "the index build's two threads, per run (VMS_SERVE_ROWS_STATS=1):"
sed 's/^vmscope rows: /  /' "$work/rows-stats.txt"
printf 'index size:    %d bytes = %.3f %% of the traces (goal <= 5 %%)\n' "$isize" \
  "$(echo "100 * $isize / $tsize" | bc -l)"
python3 - "$vms" "$idx" "$windows" "$work/serve-err.txt" "$d/host.dat" "$d/guest.dat" <<'PY'
import json, os, random, subprocess, sys, time, urllib.parse, urllib.request
vms, idx, windows, errf, traces = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]

def start(extra):
    t0 = time.monotonic()
    p = subprocess.Popen([vms, 'serve'] + extra + traces, stdout=subprocess.PIPE,
                         stderr=open(errf, 'w'), text=True,
                         env=dict(os.environ, VMS_SERVE_WINDOW_STATS='1'))
    u = urllib.parse.urlparse(p.stdout.readline().strip())
    base, tok = 'http://127.0.0.1:%d' % u.port, urllib.parse.parse_qs(u.query)['token'][0]
    def get(path, **q):
        q['token'] = tok
        with urllib.request.urlopen('%s%s?%s' % (base, path, urllib.parse.urlencode(q)),
                                    timeout=3600) as r:
            return json.loads(r.read())
    rows = get('/api/rows')
    get('/api/window', **{'from': rows['first'], 'to': rows['last'] + 1, 'px': 1000})
    return p, get, rows, time.monotonic() - t0

def hwm(p):
    for line in open('/proc/%d/status' % p.pid):
        if line.startswith('VmHWM:'):
            return int(line.split()[1]) / 1024
    return float('nan')

p, get, rows, cold = start(['--no-index'])
p.terminate(); p.wait()
p, get, rows, warm = start(['--index', idx])
print('first window of the whole trace: %.2f s with the index, %.2f s without (--no-index)'
      % (warm, cold))
first, last = rows['first'], rows['last'] + 1
span = last - first

def cpu():   # the server's CPU seconds (it answers in one thread: a window's own CPU)
    f = open('/proc/%d/stat' % p.pid).read().rsplit(')', 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf('SC_CLK_TCK')

rnd = random.Random(7)
wins, how = [], {'summary': [], 'checkpoint': [], 'start': []}
for _ in range(windows):
    w = max(1000, int(span / 10 ** rnd.uniform(0, 4)))
    a = first + rnd.randrange(0, max(1, span - w + 1))
    t0, c0 = time.monotonic(), cpu()
    j = get('/api/window', **{'from': a, 'to': a + w, 'px': 1000})
    src = 'summary' if 'summary_ns' in j else 'checkpoint' if j.get('checkpoint_events') else 'start'
    wins.append((time.monotonic() - t0, cpu() - c0, a, w, src))
    how[src].append(wins[-1][0])
print('windows by source: ' + ', '.join('%s %d (max %.0f ms)' % (k, len(v), 1000 * max(v))
                                       for k, v in how.items() if v))

def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]

lat, cp = [x[0] for x in wins], [x[1] for x in wins]
print('window latency (%d random zooms/positions, px 1000): median %.0f ms, p99 %.0f ms, '
      'max %.0f ms (goal < 100 / < 300 ms); the server\'s CPU: median %.0f ms, p99 %.0f ms'
      % (len(lat), 1000 * pct(lat, 0.5), 1000 * pct(lat, 0.99), 1000 * max(lat),
         1000 * pct(cp, 0.5), 1000 * pct(cp, 0.99)))
# what the replays went through (VMS_SERVE_WINDOW_STATS): [from, to) -> the line
rep = {}
for line in open(errf):
    if line.startswith('vmscope window: ['):
        f, t = line.split('[', 1)[1].split(')', 1)[0].split(', ')
        rep[(int(f), int(t))] = line.split('replayed: ', 1)[1].strip()
print('the slowest windows:')
for wall, c, a, w, src in sorted(wins, reverse=True)[:5]:
    print('  %4.0f ms (cpu %3.0f ms) width %.3g %% of the span at %.3f, %s%s'
          % (1000 * wall, 1000 * c, 100 * w / span, (a - first) / span, src,
             ': ' + rep[(a, a + w)] if (a, a + w) in rep else ''))
print('server peak RSS: %.1f MiB' % hwm(p))
p.terminate(); p.wait()
PY

#!/usr/bin/env bash
# vmscope index and serve on a synthesized host + guest pair (release build):
#  - the index's build time against `report` on the same pair (goal <= 1.3x), wall and CPU;
#  - the index's size against the traces' (goal <= 5 %);
#  - the time to the first window of the whole trace: serve started, /api/rows and
#    /api/window over [first, last] answered, with the index and without (--no-index);
#  - window latency at random zooms and positions (width span/10^u, u uniform in [0, 4],
#    start uniform; median and p99; goal < 100 ms / < 300 ms) and the server's peak RSS
#    (VmHWM) after them.
# The index holds the page, the findings and the rows, no checkpoints yet: a window still
# replays the traces from their start, so its latency grows with its position.
# 2026-12-02, 17c72ec, 2 shared cores at load 5-10, `VMS_BUILD=build-rel bench/bench_index.sh
# 5000000 30`: report 1.86 s wall / 0.97 s CPU; index 8.72 s / 2.25 s (4.69x / 2.32x: the
# page's run holds html, latency and findings, what serve computes before it listens); index
# 896,429 bytes = 2.65 % of the 33.8 MB pair; first whole-trace window 6.33 s with the index,
# 12.67 s without; windows median 2,173 ms, p99 4,430 ms (replayed); server peak RSS 31.1 MiB.
# Same commit, `VMS_BUILD=build-rel bench/bench_index.sh 50000000 5`: report 29.69 s / 11.71 s;
# index 54.46 s / 22.16 s (1.83x / 1.89x); 1,311,244 bytes = 0.39 % of 337.7 MB; first
# whole-trace window 37.91 s with the index, 71.26 s without; windows median 13.8 s, max 25.3 s;
# server peak RSS 33.3 MiB.
# usage: bench/bench_index.sh [EVENTS] [WINDOWS]   (default 50000000 events, 30 windows)
#        VMS_BUILD=DIR picks the build (default build-release, made when missing)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-50000000}
windows=${2:-30}
build=${VMS_BUILD:-build-release}
[ -f "$build/build.ninja" ] || meson setup "$build" -Dbuildtype=release -Dtests=false >/dev/null
ninja -C "$build" tools/vmscope/vmscope >/dev/null
vms=$build/tools/vmscope/vmscope
work=${BENCH_DIR:-$build/bench-data}
d="$work/pair-$n"
mkdir -p "$work"
[ -f "$d/host.dat" ] || $vms synth --events "$n" --seed 7 --out "$d" >/dev/null
measure() {   # wall s, CPU s, peak MiB
  /usr/bin/time -f '%e %U %S %M' -o "$work/time.txt" "$@" >/dev/null 2>"$work/err.txt" ||
    { cat "$work/err.txt" >&2; exit 1; }
  awk '{printf "%s %.2f %.1f\n", $1, $2 + $3, $4 / 1024}' "$work/time.txt"
}
idx="$work/pair-$n.vmsidx"
read -r rw rc rm < <(measure $vms report "$d/host.dat" "$d/guest.dat")
read -r iw ic im < <(measure $vms index --force -o "$idx" "$d/host.dat" "$d/guest.dat")
tsize=$(( $(stat -c %s "$d/host.dat") + $(stat -c %s "$d/guest.dat") ))
isize=$(stat -c %s "$idx")
echo "pair: $n events, traces $tsize bytes ($d)"
printf 'report:        wall %6.2f s  cpu %6.2f s  peak %7.1f MiB\n' "$rw" "$rc" "$rm"
printf 'index build:   wall %6.2f s  cpu %6.2f s  peak %7.1f MiB  (%.2fx report wall, %.2fx cpu; goal <= 1.3x)\n' \
  "$iw" "$ic" "$im" "$(echo "$iw / $rw" | bc -l)" "$(echo "$ic / $rc" | bc -l)"
printf 'index size:    %d bytes = %.3f %% of the traces (goal <= 5 %%)\n' "$isize" \
  "$(echo "100 * $isize / $tsize" | bc -l)"
python3 - "$vms" "$idx" "$windows" "$d/host.dat" "$d/guest.dat" <<'PY'
import json, random, subprocess, sys, time, urllib.parse, urllib.request
vms, idx, windows, traces = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]

def start(extra):
    t0 = time.monotonic()
    p = subprocess.Popen([vms, 'serve'] + extra + traces, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
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
rnd = random.Random(7)
lat, how = [], {'summary': [], 'checkpoint': [], 'start': []}
for _ in range(windows):
    w = max(1000, int(span / 10 ** rnd.uniform(0, 4)))
    a = first + rnd.randrange(0, max(1, span - w + 1))
    t0 = time.monotonic()
    j = get('/api/window', **{'from': a, 'to': a + w, 'px': 1000})
    lat.append(time.monotonic() - t0)
    how['summary' if 'summary_ns' in j else 'checkpoint' if j.get('checkpoint_events')
        else 'start'].append(lat[-1])
print('windows by source: ' + ', '.join('%s %d (max %.0f ms)' % (k, len(v), 1000 * max(v))
                                       for k, v in how.items() if v))
lat.sort()
p99 = lat[min(len(lat) - 1, int(round(0.99 * (len(lat) - 1))))]
print('window latency (%d random zooms/positions, px 1000): median %.0f ms, p99 %.0f ms, '
      'max %.0f ms (goal < 100 / < 300 ms)' % (len(lat), 1000 * lat[len(lat) // 2], 1000 * p99,
                                              1000 * lat[-1]))
print('server peak RSS: %.1f MiB' % hwm(p))
p.terminate(); p.wait()
PY

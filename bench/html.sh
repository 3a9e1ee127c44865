#!/usr/bin/env bash
# The HTML report on synthesized host + guest pairs (release build): the time and peak
# memory of `vmscope html` next to `vmscope report` on the same input, the page's size, and
# the time the page takes to open in headless Chromium (from navigation to the timeline drawn,
# as the page itself measures it, and the CPU time of the renderer's main thread by then,
# which a loaded machine does not inflate; needs tests/browser's harness, else "-").
# Two sizes, so that flat memory and a bounded page show: 5 M events and EVENTS. report and
# html alternate (report, html, report, ...); each command's wall and CPU time (medians) and
# the ratio html / report by each are printed.
# usage: bench/html.sh [EVENTS] [RUNS]   (default 50000000 events, 3 runs; medians printed)
set -euo pipefail
cd "$(dirname "$0")/.."
big=${1:-50000000}
runs=${2:-3}
[ -f build-release/build.ninja ] || meson setup build-release -Dbuildtype=release -Dtests=false >/dev/null
ninja -C build-release tools/vmscope/vmscope >/dev/null
vms=build-release/tools/vmscope/vmscope
work=${BENCH_DIR:-build-release/bench-data}
mkdir -p "$work"
have_browser=0
if [ -x /usr/bin/chromium ] && command -v node >/dev/null && tests/browser/setup.sh >/dev/null 2>&1; then
  have_browser=1
fi
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# one run: wall seconds, peak RSS (MiB) and user+system CPU seconds of a command
measure() {
  /usr/bin/time -f '%e %M %U %S' -o "$work/time.txt" "$@" >/dev/null 2>"$work/err.txt" || { cat "$work/err.txt" >&2; exit 1; }
  awk '{printf "%s %.1f %.2f\n", $1, $2 / 1024, $3 + $4}' "$work/time.txt"
}
printf '%-10s %-8s %8s %8s %9s %11s %8s %11s %5s\n' events command wall_s cpu_s peak_MiB page_bytes open_ms open_cpu_ms rows
sizes=(5000000); [ "$big" != 5000000 ] && sizes+=("$big")
for n in "${sizes[@]}"; do
  d="$work/pair-$n"
  [ -f "$d/host.dat" ] || $vms synth --events "$n" --seed 7 --out "$d" >/dev/null
  for cmd in report html; do
    : > "$work/$cmd-w.txt"; : > "$work/$cmd-m.txt"; : > "$work/$cmd-u.txt"
  done
  : > "$work/o.txt"; : > "$work/c.txt"
  # report and html alternate, so that a change of the machine's load falls on both
  for ((i = 0; i < runs; i++)); do
    for cmd in report html; do
      if [ $cmd = html ]; then
        read -r w m u < <(measure $vms html "$d/host.dat" "$d/guest.dat" -o "$work/page-$n.html")
      else
        read -r w m u < <(measure $vms report "$d/host.dat" "$d/guest.dat")
      fi
      echo "$w" >> "$work/$cmd-w.txt"; echo "$m" >> "$work/$cmd-m.txt"; echo "$u" >> "$work/$cmd-u.txt"
    done
    if [ $have_browser = 1 ]; then
      read -r ow oc < <(node bench/html_open.js "$work/page-$n.html")
      echo "$ow" >> "$work/o.txt"; echo "$oc" >> "$work/c.txt"
    fi
  done
  for cmd in report html; do
    size=-; open=-; cpu=-; rows=-
    if [ $cmd = html ]; then
      size=$(stat -c %s "$work/page-$n.html")
      rows=$(grep -o '"kind":"[a-z]*"' "$work/page-$n.html" | wc -l)
      [ -s "$work/o.txt" ] && open=$(median < "$work/o.txt") && cpu=$(median < "$work/c.txt")
    fi
    printf '%-10s %-8s %8s %8s %9s %11s %8s %11s %5s\n' "$n" $cmd "$(median < "$work/$cmd-w.txt")" \
      "$(median < "$work/$cmd-u.txt")" "$(median < "$work/$cmd-m.txt")" "$size" "$open" "$cpu" "$rows"
  done
  awk -v rw="$(median < "$work/report-w.txt")" -v hw="$(median < "$work/html-w.txt")" \
      -v rc="$(median < "$work/report-u.txt")" -v hc="$(median < "$work/html-u.txt")" \
    'BEGIN {printf "           ratio html / report: wall %.2fx, CPU %.2fx (medians of alternating runs)\n", hw / rw, hc / rc}'
done
echo "(machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); medians of $runs runs)"

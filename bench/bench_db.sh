#!/usr/bin/env bash
# vmscope db: rows per second into SQLite and into ClickHouse, the load of a synthesized
# fleet (hosts in parallel), the fleet queries' latency, and db against the CSV commands of
# every table that has one (vcpus, threads, pcpus, exits, latency --csv), the two sides
# alternating for ROUNDS rounds, their medians. Wall-clock times (the user's measure) with
# CPU time beside them; the machine's load only adds. Needs an optimized build (meson setup
# build, or build-rel) and, for ClickHouse, clickhouse-server (a server is started on
# loopback in a temp dir and stopped).
# usage: bench/bench_db.sh [VMSCOPE]   HOSTS=100 (fleet size) HOST_EVENTS=20k PAIR_EVENTS=500k
#        JOBS=2 (hosts loaded at once) ROUNDS=3 FLEET=0 (the pair only: no ClickHouse, no fleet)
# Not in CI (speed goals live here). Results below, newest first.
#
# h-dbw (the backend in a writer thread, db_writer.c; SQLite 16 KiB pages, the schema in one
# transaction, INSERT OR FAIL, the file's writeback started during the load), 2026-12-02
# 20:30 UTC, release build (meson setup build-rel -Dbuildtype=release), load 0.8 (a quiet
# moment): bench/bench_db.sh build-rel/tools/vmscope/vmscope
#   500 k-event pair (the synthesizer now gives 1,183,456 rows), medians of 3 rounds:
#     db --sqlite  0.72 s wall, 0.86 s CPU, peak RSS 22.5 MiB (the queue: +2 MiB)
#     vcpus/threads/pcpus/exits/latency --csv: 1,019,800 rows, 0.89 s wall, 0.99 s CPU
#     db/CSV: 0.81x wall, 0.87x CPU: the goal (<= 1) met by both
#     ClickHouse 1.77 s wall, 1.17 s CPU, 41.3 MiB
#   fleet of 100 hosts, 20 k events each, 2 at a time: SQLite 5.43 s, ClickHouse 9.76 s
#   fleet queries (wall): top-steal SQLite 0.01 s / ClickHouse 0.02 s, exit-storms 1.49 /
#     0.14 s, wakeup-p99 0.28 / 0.03 s, wakeup-p99-kernel 0.30 / 0.03 s
#   Where db's wall time went before (strace -T, perf sched; load 10-17): the commit's
#   fdatasync of the 80 MB file 0.27-0.64 s (it wrote the whole file then: SQLite's pages
#   sit dirty in the page cache until then), the schema's 11 autocommits 44 fsyncs (0.03-0.3
#   s on a new file), the journal's unlink 25-75 ms (a synchronous discard), and the rest
#   time waiting for a CPU: on this machine a CPU-bound process of 1.2 s CPU took 4.3-5 s
#   (autogroup: a session's threads share one group's share, so a second thread gains
#   nothing under load; it does on a quiet machine). synchronous=OFF as a scratch
#   experiment: 3.3-4.5 s against 3.9-5.9 s, i.e. no cure, the load's noise dominated.
#   After: the commit's fdatasync of the file 9 ms, 4 fsyncs at the schema; 16 KiB pages
#   0.80 s CPU (0.74 user, 0.06 sys) against 1.02 s (0.87, 0.15) with 4 KiB; the thread
#   (quiet machine, VMS_DB_THREADS=0 against 1): 0.86-0.97 s wall -> 0.73-0.76 s, +0.05 s
#   CPU; the writer thread is the longer side (0.63 s CPU against the analysis' 0.27 s).
#   Under load 5-6 (FLEET=0): db 1.24 s wall, 0.88 s CPU; CSV 1.29 s, 0.97 s: 0.96x, 0.91x.
#   A/B at 20:32, load 1.1, FLEET=0, main's binary (2428266, git archive, release) then this:
#     main  db 1.23 s wall, 1.03 s CPU; CSV 1.16 s, 1.29 s: 1.06x wall, 0.80x CPU
#     h-dbw db 0.80 s wall, 1.01 s CPU; CSV 1.04 s, 1.15 s: 0.77x wall, 0.88x CPU
#     (sqlite3 .dump of the two binaries' files identical)
#
# h-dbspeed (rows written 32 to an INSERT), 2026-12-02 16:02-16:06 UTC, release build
# (meson setup build-rel --buildtype=release), load 10.6 before, 9.6 after the pair, 7.7 at
# the end, on 2 vCPUs (other helpers at work): bench/bench_db.sh build-rel/tools/vmscope/vmscope
#   500 k-event pair, medians of 3 alternating rounds:
#     db --sqlite  1,529,879 rows in all 11 tables (1,019,800 of them in the 5 CSV tables):
#                  2.75 s wall, 1.04 s CPU (1.01-1.18), peak RSS 19.8 MiB
#     vcpus/threads/pcpus/exits/latency --csv: 1,019,800 rows, 2.20 s wall, 1.18 s CPU
#                  (1.00-1.39) together, each command running the analysis again
#     db/CSV: 0.88x CPU (the goal, <= 1, met with 1.5x the rows), 1.25x wall (db also fsyncs
#     its 80 MB file at the commit; the CSV goes to a file in /tmp, not synced)
#     ClickHouse 6.02 s wall, 1.16 s CPU in vmscope, 38.6 MiB
#   the same pair, debugoptimized build (build/), FLEET=0, load 6.4: db 1.17 s CPU, 1.98 s
#     wall; CSV 1.42 s CPU, 2.08 s wall: 0.82x CPU, 0.95x wall
#   fleet of 100 hosts, 20 k events each, 2 at a time: SQLite 23.2 s wall, ClickHouse 46.2 s
#   fleet queries (wall): top-steal SQLite 0.08 s / ClickHouse 0.08 s, exit-storms 5.77 /
#     0.73 s, wakeup-p99 0.99 / 0.35 s, wakeup-p99-kernel 1.91 / 0.23 s
#   callgrind, a 100 k-event pair (synth --seed 7), debugoptimized: db --sqlite 1,735 M
#     instructions before, 1,385 M with 32 rows to an INSERT, 1,331 M with a machine's name
#     escaped once; the 5 CSV commands 1,998 M together. SQLite's default journal kept (WAL
#     with synchronous=NORMAL, page_size 16 k or 64 k, cache_size 16 MiB: no less CPU in a
#     400 k-row test of one table)
#
# c5f9916 + query rewrites, 2026-12-02 10:17-10:28 UTC, debugoptimized build, load 16-25 on
# the 2 vCPUs (other helpers building): wall times are ~4-8x the CPU times, so CPU is the
# figure to compare.
#   500 k-event pair (synth --seed 7), 1,529,879 rows in all tables:
#     SQLite      6.27 s wall, 1.50 s CPU (0.98 us CPU per row), peak RSS 18.7 MiB
#     ClickHouse  9.62 s wall, 1.16 s CPU in vmscope (the server's own not counted),
#                 peak RSS 37.4 MiB (a batch of up to 4 MiB per table)
#     vcpus/threads/pcpus/latency --csv: 1,019,782 rows, 3.99 s wall, 1.04 s CPU together
#     (1.02 us CPU per row, each command running the analysis again). db --sqlite: 1.44x their
#     CPU for 1.5x the rows (the exits, totals and findings on top): per row as fast, not
#     faster in total. Without an index on each table's key (c5f9916) and without SQLite's
#     mutexes; with the indexes it was 3.46 s user (3.3x).
#   2 M-event pair, 4.7 M rows into SQLite: 6.30 s user, peak RSS 23.0 MiB (memory flat: 18.7
#     MiB at a quarter of the rows).
#   fleet of 100 hosts, 20 k events each, 2 loads at a time: SQLite 33.6 s wall, ClickHouse
#     97.3 s wall (one server on the same 2 vCPUs: its merges compete with the loads).
#   fleet queries on those 100 hosts (wall; CPU in vmscope for SQLite):
#     top-steal          SQLite 0.04-0.11 s           ClickHouse 0.30 s
#     exit-storms        SQLite 12.2 s (1.58 s CPU)   ClickHouse 1.39 s (first form: 15.9 s)
#     wakeup-p99         SQLite 1.8-2.1 s (0.30 s)    ClickHouse 0.20 s
#     wakeup-p99-kernel  SQLite 2.5 s (0.32 s CPU)    ClickHouse 0.23 s (first form, a
#                        correlated subquery per wake-up: 10.1 s)
set -euo pipefail
V=${1:-build/tools/vmscope/vmscope}
V=$(readlink -f "$V")
HOSTS=${HOSTS:-100} HOST_EVENTS=${HOST_EVENTS:-20k} PAIR_EVENTS=${PAIR_EVENTS:-500k} JOBS=${JOBS:-2}
ROUNDS=${ROUNDS:-3} FLEET=${FLEET:-1}
T=$(mktemp -d /tmp/vmscope-bench-db.XXXXXX)
CH_PID=
cleanup() { [ -n "$CH_PID" ] && kill "$CH_PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
# seconds (wall) and CPU seconds of a command, its output to $T/out
timed() { /usr/bin/time -f '%e %U %S %M' -o "$T/time" "$@" > "$T/out" 2> "$T/err" || { cat "$T/err" >&2; return 1; }
          read -r wall u s rss < "$T/time"; cpu=$(echo "$u + $s" | bc); }
rows_of() { grep -o '[a-z_]* [0-9]*' "$T/out" | awk '{n += $2} END {print n}'; }

echo "vmscope db bench: $(date -u +%FT%TZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $V"
"$V" synth --out "$T/pair" --events "$PAIR_EVENTS" --seed 7 2>/dev/null
P=("$T/pair/host.dat" "$T/pair/guest.dat")

# 1. one pair: db --sqlite against the CSV commands of every table that has one (vcpus,
# threads, pcpus, exits and latency --csv: vcpu_intervals, thread_intervals, pcpu_intervals,
# exit_stats and wakeups), ROUNDS rounds, the two sides alternating in each; the medians.
# db writes more on top (captures, machines, vcpus, exits, steal, findings): both are counted.
CSV_CMDS=(vcpus threads pcpus exits latency)
CSV_TABLES="vcpu_intervals thread_intervals pcpu_intervals exit_stats wakeups"
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{a[NR] = $1} END {print NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
db_walls= db_cpus= csv_walls= csv_cpus=
for r in $(seq "$ROUNDS"); do
  rm -f "$T/pair.db"
  timed "$V" db --sqlite "$T/pair.db" "${P[@]}"
  rows=$(rows_of) same=0
  for t in $CSV_TABLES; do same=$((same + $(grep -o "$t [0-9]*" "$T/out" | awk '{print $2}'))); done
  db_walls+=" $wall" db_cpus+=" $cpu"
  printf 'round %d  db --sqlite     %9d rows (%d in the CSV tables)  %6.2f s wall %6.2f s CPU  peak RSS %d KiB\n' \
    "$r" "$rows" "$same" "$wall" "$cpu" "$rss"
  cw=0 cc=0 csv_rows=0 each=
  for c in "${CSV_CMDS[@]}"; do
    timed "$V" "$c" --csv "${P[@]}"
    n=$(($(wc -l < "$T/out") - 1))
    csv_rows=$((csv_rows + n)) cw=$(echo "$cw + $wall" | bc) cc=$(echo "$cc + $cpu" | bc)
    each+=$(printf ' %s %d/%.2f' "$c" "$n" "$cpu")
  done
  csv_walls+=" $cw" csv_cpus+=" $cc"
  printf 'round %d  the 5 CSV commands %6d rows                      %6.2f s wall %6.2f s CPU  (rows/CPU s each:%s)\n' \
    "$r" "$csv_rows" "$cw" "$cc" "$each"
done
dw=$(echo "$db_walls" | median) dc=$(echo "$db_cpus" | median)
cw=$(echo "$csv_walls" | median) cc=$(echo "$csv_cpus" | median)
printf 'medians of %d rounds: db --sqlite %d rows (%d of them in the CSV tables) %.2f s wall, %.2f s CPU; the 5 CSV commands %d rows %.2f s wall, %.2f s CPU; db/CSV: %.2fx wall, %.2fx CPU\n' \
  "$ROUNDS" "$rows" "$same" "$dw" "$dc" "$csv_rows" "$cw" "$cc" "$(echo "$dw / $cw" | bc -l)" "$(echo "$dc / $cc" | bc -l)"
printf 'load after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
[ "$FLEET" = 0 ] && exit 0

# 2. ClickHouse: the same pair, a server of our own
if command -v clickhouse-server > /dev/null; then
  port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
  H=$(port) TP=$(port) IP=$(port)
  mkdir -p "$T/ch/log" "$T/ch/data" "$T/ch/tmp"
  cat > "$T/ch/config.xml" <<XML
<?xml version="1.0"?>
<yandex><logger><level>warning</level><log>$T/ch/log/s.log</log><errorlog>$T/ch/log/e.log</errorlog></logger>
<http_port>$H</http_port><tcp_port>$TP</tcp_port><interserver_http_port>$IP</interserver_http_port>
<listen_host>127.0.0.1</listen_host><path>$T/ch/data/</path><tmp_path>$T/ch/tmp/</tmp_path>
<users_config>/etc/clickhouse-server/users.xml</users_config><default_profile>default</default_profile>
<default_database>default</default_database><mark_cache_size>5368709</mark_cache_size></yandex>
XML
  clickhouse-server --config-file="$T/ch/config.xml" > /dev/null 2>&1 & CH_PID=$!
  for _ in $(seq 60); do curl -sf "http://127.0.0.1:$H/?query=SELECT%201" > /dev/null && break; sleep 0.5; done
  URL=http://127.0.0.1:$H
  timed "$V" db --clickhouse "$URL" "${P[@]}"
  rows=$(rows_of)
  printf 'clickhouse %9d rows  %6.2f s wall %6.2f s CPU  %9.0f rows/s  peak RSS %d KiB\n' "$rows" \
    "$wall" "$cpu" "$(echo "$rows / $wall" | bc -l)" "$rss"
fi

# 3. a fleet of HOSTS pairs, loaded JOBS at a time, then the fleet queries
"$V" synth --hosts "$HOSTS" --out "$T/fleet" --events "$HOST_EVENTS" 2>/dev/null
export F=$T/fleet
load_fleet() {  # backend args (no spaces); each host's name and kernel label from fleet.json
  python3 -c 'import json, sys; [print(h["dir"], h["name"], h["kernel"]) for h in json.load(open(sys.argv[1]))["hosts"]]' \
    "$T/fleet/fleet.json" | BACKEND="$*" xargs -P "$JOBS" -L 1 sh -c \
    '"$0" db $BACKEND --host-name "$2" --kernel "$3" "$F/$1/host.dat" "$F/$1/guest.dat" > /dev/null' "$V"
}
wall_of() { local t0; t0=$(date +%s.%N); "$@"; wall=$(echo "$(date +%s.%N) - $t0" | bc); }
wall_of load_fleet --sqlite "$T/fleet.db"
printf 'fleet of %d hosts (%s events each) into SQLite, %d at a time: %.2f s wall\n' "$HOSTS" "$HOST_EVENTS" "$JOBS" "$wall"
backends=("--sqlite $T/fleet.db")
if [ -n "$CH_PID" ]; then
  curl -sf "$URL/" --data-binary 'CREATE DATABASE fleet' > /dev/null
  wall_of load_fleet --clickhouse "$URL/?database=fleet"
  printf 'fleet of %d hosts into ClickHouse, %d at a time: %.2f s wall\n' "$HOSTS" "$JOBS" "$wall"
  backends+=("--clickhouse $URL/?database=fleet")
fi
for b in "${backends[@]}"; do
  for q in top-steal exit-storms wakeup-p99 wakeup-p99-kernel; do
    # shellcheck disable=SC2086
    timed "$V" db --query "$q" $b
    printf '  query %-18s %-10s %6.3f s wall  (%d rows)\n' "$q" "${b%% *}" "$wall" $(($(wc -l < "$T/out") - 1))
  done
done

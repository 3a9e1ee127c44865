#!/usr/bin/env bash
# bench_lttng: vmscope's whole analysis of LTTng CTF traces against babeltrace2's bare reading
# (`babeltrace2 ... -o dummy`: source.ctf.fs -> muxer -> sink.utils.dummy), in one run:
#   1. a multi-million-event host + guest pair written by `vmscope synth --format lttng`
#      (N events, default 5M): `vmscope report HOST GUEST` (open, model, states, exits,
#      overlays, containment, the report) vs `babeltrace2 HOST GUEST -o dummy`;
#   2. ../shared/traces/tcp-sync/scp_src: `vmscope report` vs babeltrace2 reading it with no
#      muxer (the muxer aborts on it: its timestamps go backwards), source.ctf.fs -> dummy;
#      each run reads it SCP_REPS times (default 20: one reading takes a few ms, below what
#      time(1) can tell), the figures are per reading.
# Each figure is the median of R runs (default 3) of wall time. The machine is shared: say
# so with the figures.
# Usage: bench/bench_lttng.sh VMSCOPE_BINARY [EVENTS] [RUNS]
set -eu
VMS=${1:?usage: bench_lttng.sh VMSCOPE_BINARY [EVENTS] [RUNS]}
EVENTS=${2:-5M}
RUNS=${3:-3}
SHARED=${VMS_SHARED_DIR:-$(dirname "$0")/../../shared}/traces
TMP=$(mktemp -d /tmp/bench-lttng.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
SCP_REPS=${SCP_REPS:-20}
# reps.sh N CMD...: CMD N times, output discarded; the first failure fails
printf '#!/usr/bin/env bash\nn=$1; shift\nfor _ in $(seq "$n"); do "$@" >/dev/null 2>&1 || exit 1; done\n' >"$TMP/reps.sh"
chmod +x "$TMP/reps.sh"
command -v babeltrace2 >/dev/null || { echo "babeltrace2 is not installed (Debian: babeltrace2)"; exit 77; }

# "WALL CPU": median wall seconds and median CPU seconds (user + system) of RUNS runs of
# "$@" (output discarded; a failure stops the bench). On a loaded machine CPU is the fairer
# figure: both tools are single-threaded here.
median() {
  local w=() c=()
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f "%e %U %S" -o "$TMP/time" "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
    read -r e u s <"$TMP/time"
    w+=("$e")
    c+=("$(awk -v u="$u" -v s="$s" 'BEGIN {printf "%.2f", u + s}')")
  done
  local m=$(( (RUNS + 1) / 2 ))
  echo "$(printf '%s\n' "${w[@]}" | sort -n | sed -n "${m}p") $(printf '%s\n' "${c[@]}" | sort -n | sed -n "${m}p")"
}
row() { # LABEL "WALL CPU"
  printf '  %-48s wall %7s s   cpu %7s s\n' "$1" ${2% *} ${2#* }
}
per() { # "WALL CPU" N: each divided by N
  awk -v a="$1" -v n="$2" 'BEGIN {split(a, x, " "); printf "%.4f %.4f", x[1] / n, x[2] / n}'
}
ratio() { # "WALL CPU" of babeltrace2, of vmscope
  awk -v a="$1" -v b="$2" 'BEGIN {split(a, x, " "); split(b, y, " ");
    printf "  ratio (babeltrace2 / vmscope): wall %.1fx, cpu %.1fx\n", x[1] / y[1], x[2] / y[2]}'
}

"$VMS" synth --format lttng --events "$EVENTS" --out "$TMP/pair" 2>/dev/null
n=$("$VMS" info "$TMP/pair/host" "$TMP/pair/guest" 2>/dev/null | awk '$1 == "events" {s += $2} END {print s}')
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
echo "synthesized LTTng pair: $n events ($(du -sh "$TMP/pair" | cut -f1))"
v=$(median "$VMS" report "$TMP/pair/host" "$TMP/pair/guest")
b=$(median babeltrace2 "$TMP/pair/host" "$TMP/pair/guest" -o dummy)
row "vmscope report (whole analysis)" "$v"
row "babeltrace2 HOST GUEST -o dummy (bare reading)" "$b"
ratio "$b" "$v"

scp=$SHARED/tcp-sync/scp_src
if [ -d "$scp" ]; then
  echo "scp_src (110,771 events), per reading ($SCP_REPS readings a run):"
  v=$(per "$(median "$TMP/reps.sh" "$SCP_REPS" "$VMS" report "$scp")" "$SCP_REPS")
  b=$(per "$(median "$TMP/reps.sh" "$SCP_REPS" babeltrace2 run --component=src:source.ctf.fs \
        --params="inputs=[\"$scp\"]" --component=sink:sink.utils.dummy --connect=src:sink)" \
        "$SCP_REPS")
  row "vmscope report (whole analysis)" "$v"
  row "babeltrace2 source.ctf.fs -> dummy (no muxer)" "$b"
  ratio "$b" "$v"
else
  echo "scp_src: ../shared/traces missing, skipped"
fi

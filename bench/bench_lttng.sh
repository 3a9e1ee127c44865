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
# The two alternate (babeltrace2, vmscope, babeltrace2, ...), R runs each (default 3); each
# figure is the median of the runs' wall and of their CPU time (user + system), with the
# ratio by each. The machine is shared: the load average is printed with the figures.
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

# one run of "$@" (output discarded; a failure stops the bench): "WALL CPU" appended to $1
once() {
  local f=$1; shift
  /usr/bin/time -f "%e %U %S" -o "$TMP/time" "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
  awk '{printf "%s %.2f\n", $1, $2 + $3}' "$TMP/time" >>"$f"
}
# "WALL CPU": the medians of the runs in file $1
med() {
  local m=$(( ($(wc -l <"$1") + 1) / 2 ))
  echo "$(cut -d' ' -f1 "$1" | sort -n | sed -n "${m}p") $(cut -d' ' -f2 "$1" | sort -n | sed -n "${m}p")"
}
# alternate B_CMD... -- V_CMD...: RUNS runs of each, B first; sets $b and $v ("WALL CPU")
alternate() {
  local bc=() vc=()
  while [ "$1" != -- ]; do bc+=("$1"); shift; done; shift
  vc=("$@")
  : >"$TMP/b.runs"; : >"$TMP/v.runs"
  for _ in $(seq "$RUNS"); do
    once "$TMP/b.runs" "${bc[@]}"
    once "$TMP/v.runs" "${vc[@]}"
  done
  b=$(med "$TMP/b.runs"); v=$(med "$TMP/v.runs")
}
row() { # LABEL "WALL CPU"
  printf '  %-48s wall %7s s   cpu %7s s\n' "$1" ${2% *} ${2#* }
}
per() { # "WALL CPU" N: each divided by N
  awk -v a="$1" -v n="$2" 'BEGIN {split(a, x, " "); printf "%.4f %.4f", x[1] / n, x[2] / n}'
}
ratio() { # "WALL CPU" of babeltrace2, of vmscope
  awk -v a="$1" -v b="$2" 'BEGIN {split(a, x, " "); split(b, y, " ");
    printf "  ratio (babeltrace2 / vmscope): wall %.2fx, cpu %.2fx (medians of %d alternating runs each)\n", x[1] / y[1], x[2] / y[2], '"$RUNS"'}'
}

"$VMS" synth --format lttng --events "$EVENTS" --out "$TMP/pair" 2>/dev/null
n=$("$VMS" info "$TMP/pair/host" "$TMP/pair/guest" 2>/dev/null | awk '$1 == "events" {s += $2} END {print s}')
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
echo "synthesized LTTng pair: $n events ($(du -sh "$TMP/pair" | cut -f1))"
alternate babeltrace2 "$TMP/pair/host" "$TMP/pair/guest" -o dummy -- \
  "$VMS" report "$TMP/pair/host" "$TMP/pair/guest"
row "vmscope report (whole analysis)" "$v"
row "babeltrace2 HOST GUEST -o dummy (bare reading)" "$b"
ratio "$b" "$v"

scp=$SHARED/tcp-sync/scp_src
if [ -d "$scp" ]; then
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "scp_src (110,771 events), per reading ($SCP_REPS readings a run):"
  alternate "$TMP/reps.sh" "$SCP_REPS" babeltrace2 run --component=src:source.ctf.fs \
    --params="inputs=[\"$scp\"]" --component=sink:sink.utils.dummy --connect=src:sink -- \
    "$TMP/reps.sh" "$SCP_REPS" "$VMS" report "$scp"
  v=$(per "$v" "$SCP_REPS"); b=$(per "$b" "$SCP_REPS")
  row "vmscope report (whole analysis)" "$v"
  row "babeltrace2 source.ctf.fs -> dummy (no muxer)" "$b"
  ratio "$b" "$v"
else
  echo "scp_src: ../shared/traces missing, skipped"
fi

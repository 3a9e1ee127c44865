#!/usr/bin/env bash
# bench_lttng: vmscope's whole analysis of LTTng CTF traces against babeltrace2's bare reading
# (`babeltrace2 ... -o dummy`: source.ctf.fs -> muxer -> sink.utils.dummy), in one run:
#   1. a multi-million-event host + guest pair written by `vmscope synth --format lttng`
#      (N events, default 5M): `vmscope report HOST GUEST` (open, model, states, exits,
#      overlays, containment, the report) vs `babeltrace2 HOST GUEST -o dummy`;
#   2. ../shared/traces/tcp-sync/scp_src: `vmscope report` vs babeltrace2 reading it with no
#      muxer (the muxer aborts on it: its timestamps go backwards), source.ctf.fs -> dummy.
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
command -v babeltrace2 >/dev/null || { echo "babeltrace2 is not installed (Debian: babeltrace2)"; exit 77; }

# median wall seconds of RUNS runs of "$@" (output discarded; a failure stops the bench)
median() {
  local ts=()
  for _ in $(seq "$RUNS"); do
    local a b
    a=$(date +%s.%N)
    "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
    b=$(date +%s.%N)
    ts+=("$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", b - a}')")
  done
  printf '%s\n' "${ts[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p"
}

"$VMS" synth --format lttng --events "$EVENTS" --out "$TMP/pair" 2>/dev/null
n=$("$VMS" info "$TMP/pair/host" "$TMP/pair/guest" 2>/dev/null | awk '$1 == "events" {s += $2} END {print s}')
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
echo "synthesized LTTng pair: $n events ($(du -sh "$TMP/pair" | cut -f1))"
v=$(median "$VMS" report "$TMP/pair/host" "$TMP/pair/guest")
b=$(median babeltrace2 "$TMP/pair/host" "$TMP/pair/guest" -o dummy)
echo "  vmscope report (whole analysis)                  $v s"
echo "  babeltrace2 HOST GUEST -o dummy (bare reading)   $b s"
echo "  ratio: vmscope's whole analysis is $(awk -v a="$b" -v b="$v" 'BEGIN {printf "%.1f", a / b}')x faster than babeltrace2's bare reading"

scp=$SHARED/tcp-sync/scp_src
if [ -d "$scp" ]; then
  echo "scp_src (110,771 events):"
  v=$(median "$VMS" report "$scp")
  b=$(median babeltrace2 run --component=src:source.ctf.fs --params="inputs=[\"$scp\"]" \
        --component=sink:sink.utils.dummy --connect=src:sink)
  echo "  vmscope report (whole analysis)                  $v s"
  echo "  babeltrace2 source.ctf.fs -> dummy (no muxer)    $b s"
  echo "  ratio: $(awk -v a="$b" -v b="$v" 'BEGIN {printf "%.1f", a / b}')x"
else
  echo "scp_src: ../shared/traces missing, skipped"
fi

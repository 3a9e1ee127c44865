#!/usr/bin/env bash
# Bad windows and selectors are usage errors, and a window's report counts the window
# (issue 20, item 3); a closed pipe exits 0 (item 6). Speaks TAP.
#  - Every command that takes --from/--to (and --vcpu, --map) refuses a window that holds no
#    time of the traces, a vCPU no guest has and a map to a thread the host never shows:
#    exit 2, exactly one line on stderr, nothing on stdout, no -o file left. On the
#    kvm-hip24 pair, a synthesized pair and xen/xentrace.bin.
#  - The header's events and span are the window's: on a synthesized host, the count and
#    the first and last timestamps of `trace-cmd report -t` (ns) inside the window; on the
#    kvm-hip24 pair and xentrace.bin, the lines of the whole `dump` whose printed time falls
#    inside it, windowed here in Python (bounds checked to be more than 1 us from any event,
#    so that dump's rounding to microseconds cannot move one across).
#  - `vmscope CMD big | head -1` exits 0, quietly, whether SIGPIPE is ignored or not.
set -u
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
SHARED=${VMS_SHARED_DIR:?}/traces
TMP=${VMS_BUILD_DIR}/test-tmp/window-cli
rm -rf "$TMP" && mkdir -p "$TMP"
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "# $2"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

# usage_error NAME CMD ARGS...: exit 2, one line on stderr, empty stdout, no -o file left
usage_error() {
  local name=$1 cmd=$2; shift 2
  local o=()
  case $cmd in export) o=(-o "$TMP/out.pftrace");; html) o=(-o "$TMP/out.html");; esac
  rm -f "$TMP/out.pftrace" "$TMP/out.html"
  "$VMS" "$cmd" "${o[@]}" "$@" >"$TMP/ue.out" 2>"$TMP/ue.err"; local st=$?
  if [ $st -eq 2 ] && [ "$(grep -vc ': note: .* counts .* cycles' "$TMP/ue.err")" -eq 1 ] && [ ! -s "$TMP/ue.out" ] &&
     [ ! -e "$TMP/out.pftrace" ] && [ ! -e "$TMP/out.html" ]; then
    ok "$name"
  else
    notok "$name" "status $st, stdout $(wc -c < "$TMP/ue.out") bytes: $(head -3 "$TMP/ue.err" | tr '\n' '|')"
  fi
}

WINDOWED="report vcpus threads exits pcpus latency html export dump"
ANALYSES="report vcpus threads exits pcpus latency html export sync"
H=$SHARED/kvm-hip24/host.dat
G=$SHARED/kvm-hip24/guest-Salamander4.dat
XEN=$SHARED/xen/xentrace.bin

"$VMS" synth --events 20000 --out "$TMP/syn" >/dev/null 2>&1 || notok "synth a pair"
SYN=("$TMP/syn/host.dat" "$TMP/syn/guest.dat")

# the pair spans 2.254 s, the synthesized one 0.434 s, xentrace.bin 3.5 s at 2.4 GHz
bad_windows() {  # LABEL ARGS...: the three empty windows for every command
  local label=$1; shift
  for c in $WINDOWED; do
    usage_error "$c $label --from +0.2s --to +0.1s: --from after --to" "$c" --from +0.2s --to +0.1s "$@"
    usage_error "$c $label --to +0: an empty window" "$c" --to +0 "$@"
    usage_error "$c $label --from +1000s: wholly past the traces" "$c" --from +1000s "$@"
  done
}
if [ -r "$H" ] && [ -r "$G" ]; then
  bad_windows "(kvm-hip24)" "$H" "$G"
  usage_error "report (kvm-hip24) --from 22151.0 --to 22150.9 in absolute seconds" report --from 22151.0 --to 22150.9 "$H" "$G"
  usage_error "vcpus (kvm-hip24) --to before the first event" vcpus --to 100 "$H" "$G"
  for c in $ANALYSES; do
    [ "$c" = sync ] || usage_error "$c (kvm-hip24) --vcpu 5: the guests have 1 and 2 vCPUs" "$c" --vcpu 5 "$H" "$G"
    usage_error "$c (kvm-hip24) --map to thread 999999, which never appears" "$c" --map guest-Salamander4:0=999999 "$H" "$G"
  done
  usage_error "report (kvm-hip24) --machine guest-Salamander4 --vcpu 1: it has one vCPU" report --machine guest-Salamander4 --vcpu 1 "$H" "$G"
  usage_error "vcpus (kvm-hip24) --machine host --vcpu 0: a host has no vCPUs" vcpus --machine host --vcpu 0 "$H" "$G"
  # the controls: the same selectors where they name something are accepted
  st=0; "$VMS" report --vcpu 1 "$H" "$G" >/dev/null 2>&1 || st=$?
  st2=0; "$VMS" report --map guest-Salamander4:0=483882 "$H" "$G" >/dev/null 2>&1 || st2=$?
  if [ $st -eq 0 ] && [ $st2 -eq 0 ]; then ok "report --vcpu 1 (tid-453724 has 2) and --map to the real thread 483882: accepted"
  else notok "valid selectors" "status $st, $st2"; fi
  # thread 453724's first event is at 22149.954372, 6 ms after the first one (dump): a
  # window that ends before it still maps a thread the trace shows
  bad=""
  for c in report vcpus; do
    "$VMS" $c --to +0.001s --map guest-Salamander4:0=453724 "$H" "$G" >/dev/null 2>&1 || bad="$bad $c:$?"
  done
  if [ -z "$bad" ]; then ok "--map to a thread that appears only after --to: accepted (report, vcpus)"
  else notok "--map after --to" "$bad"; fi
else skip "bad windows and selectors on kvm-hip24" "shared traces missing"; fi

if [ -s "$TMP/syn/host.dat" ]; then
  bad_windows "(synthesized)" "${SYN[@]}"
  for c in report vcpus exits; do
    usage_error "$c (synthesized) --vcpu 2: the guest has vCPUs 0-1" "$c" --vcpu 2 "${SYN[@]}"
    usage_error "$c (synthesized) --map guest:0=77777, a thread that never appears" "$c" --map guest:0=77777 "${SYN[@]}"
  done
fi

if [ -r "$XEN" ]; then
  bad_windows "(xentrace, --cpu-hz 2.4G)" --cpu-hz 2.4G "$XEN"
  usage_error "report (xentrace) --vcpu 8: the largest domain has 8 vCPUs, 0-7" report --vcpu 8 "$XEN"
  usage_error "report (xentrace) --machine d14 --vcpu 4: d14 has 4" report --machine d14 --vcpu 4 "$XEN"
  # times are cycles without --cpu-hz: a bound in seconds would take seconds for cycles
  usage_error "report (xentrace, cycles) --from +1s: a time where times are cycles" report --from +1s "$XEN"
  usage_error "report (xentrace, cycles) --to before the first cycle" report --to 5 "$XEN"
  st=0; "$VMS" report --from 50476882825885 "$XEN" >/dev/null 2>&1 || st=$?
  if [ $st -eq 0 ]; then ok "report (xentrace, cycles) --from in cycles: accepted"; else notok "xentrace --from cycles" "status $st"; fi
else skip "bad windows on xentrace.bin" "shared traces missing"; fi

# --- the header counts the window -------------------------------------------------------
# (1) synthesized host alone: trace-cmd report -t prints every event's ns
if [ -s "$TMP/syn/host.dat" ] && command -v trace-cmd >/dev/null; then
  (cd "$TMP" && trace-cmd report -t "$TMP/syn/host.dat" 2>/dev/null) > "$TMP/tc.txt"
  first=$(grep -m1 -oE ' [0-9]+\.[0-9]{9}:' "$TMP/tc.txt" | tr -d ' :.' )
  from=$((10#$first + 100000000)); to=$((10#$first + 300000000))
  "$VMS" report --json --from "$from" --to "$to" "$TMP/syn/host.dat" > "$TMP/w.json" 2>/dev/null; st=$?
  "$VMS" report --from "$from" --to "$to" "$TMP/syn/host.dat" 2>/dev/null | head -1 > "$TMP/w.txt"
  if [ $st -eq 0 ] && python3 - "$TMP/tc.txt" "$TMP/w.json" "$TMP/w.txt" "$from" "$to" <<'PY'
import json, re, sys
ts = [int(m.group(1) + m.group(2)) for m in
      (re.search(r' (\d+)\.(\d{9}):', l) for l in open(sys.argv[1])) if m]
lo, hi = int(sys.argv[4]), int(sys.argv[5])
inside = [t for t in ts if lo <= t < hi]
d = json.load(open(sys.argv[2]))
assert len(ts) > 10000 and 1000 < len(inside) < len(ts), (len(ts), len(inside))
assert d["events"] == len(inside), (d["events"], len(inside))
assert (d["first_ns"], d["last_ns"]) == (min(inside), max(inside)), (d["first_ns"], d["last_ns"], min(inside), max(inside))
head = open(sys.argv[3]).read()
span = max(inside) - min(inside)   # printed as ms with 2 decimals (cli_ns)
want = " machines, %d events over %.2f ms" % (len(inside), span / 1e6)
assert want in head, (want, head)
PY
  then ok "report --from/--to on a synthesized host: events, first and last = trace-cmd report's inside the window"
  else notok "report window counts vs trace-cmd" "status $st: $(head -c 300 "$TMP/w.txt")"; fi
else skip "report window counts vs trace-cmd" "trace-cmd missing"; fi

# (2) the kvm-hip24 pair and xentrace.bin: the whole dump, windowed here
window_counts() {  # NAME FROM TO WINDOW-ARGS... -- TRACE-ARGS...
  local name=$1 lo=$2 hi=$3; shift 3
  local w=() t=()
  while [ "$1" != -- ]; do w+=("$1"); shift; done; shift; t=("$@")
  "$VMS" dump "${t[@]}" > "$TMP/all.dump" 2>/dev/null
  "$VMS" dump "${w[@]}" "${t[@]}" > "$TMP/win.dump" 2>/dev/null
  "$VMS" report --json "${w[@]}" "${t[@]}" > "$TMP/w.json" 2>/dev/null; local st=$?
  if [ $st -eq 0 ] && python3 - "$TMP/all.dump" "$TMP/win.dump" "$TMP/w.json" "$lo" "$hi" <<'PY'
import json, sys
from decimal import Decimal
ts = [Decimal(l.split(' ', 1)[0]) for l in open(sys.argv[1])]
first = ts[0]
def bound(s):
    return first + Decimal(s[1:]) if s.startswith('+') else Decimal(s)
lo, hi = bound(sys.argv[4]), bound(sys.argv[5])
us = Decimal('0.000001')
assert all(abs(t - b) > us for t in ts for b in (lo, hi)), "a bound within 1 us of an event"
inside = [t for t in ts if lo <= t < hi]
d = json.load(open(sys.argv[3]))
assert 1000 < len(inside) < len(ts), (len(inside), len(ts))
assert d["events"] == len(inside), (d["events"], len(inside))
f, l = (Decimal(d[k]) / 1000000000 for k in ("first_ns", "last_ns"))
assert abs(f - inside[0]) <= us / 2 and abs(l - inside[-1]) <= us / 2, (f, l, inside[0], inside[-1])
win = open(sys.argv[2]).read().splitlines()
assert len(win) == len(inside), ("dump --from --to", len(win), len(inside))
PY
  then ok "$name"; else notok "$name" "status $st"; fi
}
if [ -r "$H" ] && [ -r "$G" ]; then
  window_counts "report --from 22150.5 --to 22150.9 (seconds) on kvm-hip24: the window's events, as dump's lines" \
    22150.5 22150.9 --from 22150.5 --to 22150.9 -- "$H" "$G"
  window_counts "report --from +0.3s --to +1.2s on kvm-hip24: the window's events" \
    +0.3 +1.2 --from +0.3s --to +1.2s -- "$H" "$G"
  a=$("$VMS" report --json --from 22150.5 --to 22150.9 "$H" "$G" 2>/dev/null | grep -v '"version"')
  b=$("$VMS" report --json --from 22150500000000 --to 22150900ms "$H" "$G" 2>/dev/null | grep -v '"version"')
  if [ -n "$a" ] && [ "$a" = "$b" ]; then ok "--from 22150.5 (seconds) = 22150500000000 (ns), --to 22150.9 = 22150900ms"
  else notok "absolute seconds = ns"; fi
fi
if [ -r "$XEN" ]; then
  window_counts "report --cpu-hz 2.4G --from +1s --to +2s on xentrace.bin: the window's events, as dump's lines" \
    +1 +2 --cpu-hz 2.4G --from +1s --to +2s -- --cpu-hz 2.4G "$XEN"
fi

# --- a closed pipe: exit 0, quiet -------------------------------------------------------
if [ -r "$H" ] && [ -r "$G" ]; then
  bad=""
  for args in "dump $H" "vcpus $H $G" "vcpus --csv $H $G" "vcpus --json $H $G" "pcpus --csv $H $G"; do
    # shellcheck disable=SC2086
    "$VMS" $args 2>"$TMP/pipe.err" | head -1 >/dev/null; st=${PIPESTATUS[0]}
    { [ "$st" -eq 0 ] && ! grep -v ": warning: " "$TMP/pipe.err" | grep -q .; } || bad="$bad [$args: $st]"
    (trap '' PIPE; "$VMS" $args 2>"$TMP/pipe.err" | head -1 >/dev/null; exit "${PIPESTATUS[0]}"); st=$?
    { [ "$st" -eq 0 ] && ! grep -v ": warning: " "$TMP/pipe.err" | grep -q .; } || bad="$bad [ignored $args: $st]"
  done
  if [ -z "$bad" ]; then ok "| head -1: exit 0 and quiet (dump, vcpus text/CSV/JSON, pcpus; SIGPIPE default or ignored)"
  else notok "closed pipe status" "$bad"; fi
  st=0; "$VMS" dump "$H" > /dev/full 2>"$TMP/full.err" || st=$?
  if [ $st -eq 1 ] && grep -q "cannot write" "$TMP/full.err"; then ok "dump > /dev/full: still a failure (1), not a closed pipe"
  else notok "dump /dev/full" "status $st"; fi
else skip "closed pipe" "shared traces missing"; fi
echo "1..$n"

#!/usr/bin/env bash
# Small files that demanded a lot (issue 20 item 8), through the CLI: each shape from
# tests/common/hostile_shapes.c (hostile_gen) or made here, with what it may cost (peak RSS of
# the child from getrusage, the size of what it writes) and the exact messages. Expected
# values come from how each file is built (see each test). Speaks TAP.
set -u
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
GEN=${VMS_BUILD_DIR}/tests/hostile/hostile_gen
TMP=${VMS_BUILD_DIR}/test-tmp/bounds-cli
rm -rf "$TMP" && mkdir -p "$TMP"
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "# $2"; }

# run OUT ERR CMD...: runs CMD with stdout to OUT and stderr to ERR; prints "STATUS PEAK_KB"
# (ru_maxrss of the child: the sanitized build's included, so the bounds below leave room
# for ASan's own ~20 MB)
run() { python3 "$(dirname "$0")/../common/peak_run.py" "$@"; }

# ---- xentrace: a domain is sized by the vCPUs records show running ----
# xen-high-vcpus 100: domains 1..100, each runs vCPU 4095 once (1000 + 3 (d - 1) to the next
# cycle) and wakes vCPU 4094, which never runs: 48 bytes a domain. By hand: 100 guests d1..d100
# of one vCPU each (vCPU 0, host thread (d << 16 | 4095) + 1 named d<d>v4095); the Xen table
# has both vCPUs of each domain (xenalyze follows every vCPU a runstate record names): 200
# rows. Sized by the highest vCPU named, as before, it was 409,600 vCPUs: 107 MB of text and
# 1.38 GB peak (sanitized build); now under 1 KB of text per domain and 100 MB.
X=$TMP/xen-high-vcpus.bin
"$GEN" xen-high-vcpus 100 "$X" || { echo "Bail out! hostile_gen xen-high-vcpus failed"; exit 1; }
read -r st kb < <(run "$TMP/xhv.json" "$TMP/xhv.err" "$VMS" report --json "$X")
if [ "$st" -eq 0 ] && [ "$kb" -lt 102400 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
m = d["machines"]
assert len(m) == 101, len(m)
assert [g["name"] for g in m[1:]] == ["d%d" % i for i in range(1, 101)]
for i, g in enumerate(m[1:], 1):
    assert [(v["vcpu"], v["host_tid"]) for v in g["vcpus"]] == [(0, (i << 16 | 4095) + 1)], g["vcpus"]
    assert g["vmm_process"]["comm"] == "d%dv4095" % i, g["vmm_process"]
rows = [(v["domain"], v["vcpu"]) for v in m[0]["xen"]["vcpus"]]
assert rows == [(i, v) for i in range(1, 101) for v in (4094, 4095)], rows[:4]
' "$TMP/xhv.json" && [ "$(grep -c warning "$TMP/xhv.err")" -eq 2 ] &&
   grep -qxF "vmscope: warning: $X: 100 Xen domains ran vCPUs other than 0..n-1 (d1: 1 vCPU, the highest 4095): their vCPUs are numbered in a row, the host thread d<N>v<M> says Xen's number" "$TMP/xhv.err"; then
  ok "xentrace: 100 domains running vCPU 4095: one vCPU each ($kb kB peak), renumbering warned once"
else notok "xentrace: 100 domains running vCPU 4095" "status $st, $kb kB; $(head -c 400 "$TMP/xhv.err")"; fi
read -r st kb < <(run "$TMP/xhv.txt" "$TMP/xhv-text.err" "$VMS" report "$X")
size=$(wc -c < "$TMP/xhv.txt")
if [ "$st" -eq 0 ] && [ "$size" -lt 102400 ] && [ "$(grep -c '^  vCPU ' "$TMP/xhv.txt")" -eq 100 ]; then
  ok "xentrace: report's text of the 100 domains: 100 vCPUs, $size bytes (< 1 KB a domain)"
else notok "xentrace: report's text" "status $st, $size bytes"; fi
# info: each domain's vCPUs are those seen running (1), not the highest named + 1 (4096)
"$VMS" info --json "$X" > "$TMP/xhv-info.json" 2>/dev/null; st=$?
if [ $st -eq 0 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
def find(o):
    if isinstance(o, dict):
        if "domains" in o: return o["domains"]
        for v in o.values():
            r = find(v)
            if r is not None: return r
    if isinstance(o, list):
        for v in o:
            r = find(v)
            if r is not None: return r
doms = find(d)
assert [(x["id"], x["vcpus"]) for x in doms] == [(i, 1) for i in range(1, 101)], doms[:3]
' "$TMP/xhv-info.json"; then ok "xentrace: info counts 1 vCPU per domain (the one seen running)"
else notok "xentrace: info vCPUs per domain" "status $st"; fi

# ---- trace.dat: untraced guests past VMS_MODEL_MAX_UNTRACED (4096) are counted ----
# entry-tids 100000: kvm_entry (vcpu_id 0) from threads 1000..100999, one each, unnamed: each
# a lone thread, an untraced guest of its own. By hand: the first 4096 (tid-1000 ..
# tid-5095, one vCPU each, host thread = the number) are guests; 95,904 guests of one
# thread each are counted. Each was a machine (~2.5 KiB, report ~1.5 KB of JSON): now under
# 150 MB peak (sanitized build) and 8 MB of JSON.
X=$TMP/entry-tids.dat
"$GEN" entry-tids 100000 "$X" || { echo "Bail out! hostile_gen entry-tids failed"; exit 1; }
read -r st kb < <(run "$TMP/et.json" "$TMP/et.err" "$VMS" report --json "$X")
size=$(wc -c < "$TMP/et.json")
if [ "$st" -eq 0 ] && [ "$kb" -lt 153600 ] && [ "$size" -lt 8388608 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
m = d["machines"]
assert m[0]["untraced_guests_omitted"] == {"after": 4096, "guests": 95904, "vcpu_threads": 95904}, m[0]
assert sorted(g["name"] for g in m[1:]) == sorted("tid-%d" % t for t in range(1000, 5096))
assert sorted(v["host_tid"] for g in m[1:] for v in g["vcpus"]) == list(range(1000, 5096))
' "$TMP/et.json" && [ "$(grep -c untraced "$TMP/et.err")" -eq 1 ] &&
   grep -qxF "vmscope report: warning: entry-tids: 95904 untraced guests (95904 vCPU threads) beyond the first 4096 are not modelled: their threads count as host threads" "$TMP/et.err"; then
  ok "trace.dat: 100,000 kvm_entry threads: 4,096 untraced guests, 95,904 counted ($kb kB peak, $size bytes of JSON), warned"
else notok "trace.dat: 100,000 kvm_entry threads" "status $st, $kb kB, $size bytes: $(head -c 300 "$TMP/et.err")"; fi
"$VMS" report "$X" > "$TMP/et.txt" 2>/dev/null; st=$?
if [ $st -eq 0 ] && grep -qxF "  untraced guests beyond the first 4096: 95904 more (95904 vCPU threads), not shown one by one: their threads count as host threads" "$TMP/et.txt" &&
   [ "$(grep -c '^tid-' "$TMP/et.txt")" -eq 4096 ]; then
  ok "trace.dat: report's text lists 4,096 untraced guests and summarises the 95,904 others"
else notok "trace.dat: report's text summary" "status $st"; fi

# ---- CTF: a file named by many links is read once ----
# ctf-shared-packet 1: one stream file of one 1 MiB packet, channel0_0, with 15 hard links
# (channel0_1..15) and 2,000 symlinks (link0..1999) to it: 2,015 names beyond the first. By
# hand: one stream, (2^20 - 68) / 60 = 17,475 events (68 bytes of packet header and context,
# 60 a sched_switch event); each name was a stream: 2,016 x 17,475 events decoded.
D=$TMP/ctf-links
"$GEN" ctf-shared-packet 1 "$D" || { echo "Bail out! hostile_gen ctf-shared-packet failed"; exit 1; }
"$VMS" info "$D" > "$TMP/ctf-links.txt" 2>"$TMP/ctf-links.err"; st=$?
if [ $st -eq 0 ] && grep -qE '^  streams +1$' "$TMP/ctf-links.txt" && grep -qE '^  events +17475$' "$TMP/ctf-links.txt" &&
   grep -qxF "vmscope: warning: $D: 2015 stream file names are links to a file named already: each file is read once" "$TMP/ctf-links.err"; then
  ok "CTF: 2,016 names of one stream file: one stream of 17,475 events, the links warned"
else notok "CTF: links read once" "status $st: $(head -c 300 "$TMP/ctf-links.err") $(grep -E 'streams|events ' "$TMP/ctf-links.txt")"; fi

# ---- messages that name the cause ----
# Trace Compass XML: an attribute value of 12 MiB (past libxml2's 10,000,000-byte limit on
# one lookup, no XML_PARSE_HUGE) in the second <event>. libxml2 halts its parser and then
# says it consumed 0 bytes: the message said "at byte offset 0". By hand: the second
# <event> starts after "<trace>\n" (8 bytes) and the first event's line (90 bytes): 98.
X=$TMP/huge-attr.xml
"$GEN" xml-huge-attr 12 "$X" || { echo "Bail out! hostile_gen xml-huge-attr failed"; exit 1; }
"$VMS" info "$X" > /dev/null 2>"$TMP/huge-attr.err"; st=$?
if grep -q 'needs libxml2' "$TMP/huge-attr.err"; then ok "XML: a 12 MiB attribute # SKIP no libxml2"
elif [ $st -eq 2 ] && [ "$(wc -l < "$TMP/huge-attr.err")" -eq 1 ] &&
     grep -qE "^vmscope info: $X: malformed XML: .+ \(line 3\) at byte offset 98$" "$TMP/huge-attr.err"; then
  ok "XML: a 12 MiB attribute: one line naming line 3, byte offset 98 (the <event> that holds it), exit 2"
else notok "XML: a 12 MiB attribute" "status $st: $(head -c 300 "$TMP/huge-attr.err")"; fi

# CTF from the tracer: its .vmst-threads names one thread per line; past 1,000,000 names the
# file is refused, and the message names the cap, not "bad line". Lines "1 t\n" of 4 bytes:
# the 1,000,001st starts at byte 4,000,000. One line fewer is read (it was read one realloc
# a line: a million lines took more than 10 minutes in the sanitized build).
D=$TMP/ctf-threads
DEMO=${VMS_BUILD_DIR}/examples/vmm-demo
if [ ! -x "$DEMO" ]; then ok "CTF: the thread-name cap # SKIP no examples/vmm-demo in the build"
else
  VMSCOPE_TRACE="enable=*,file=$D,bufsize=16k,subbufs=4" "$DEMO" 1 1 >/dev/null 2>&1
  python3 -c 'import sys; open(sys.argv[1], "w").write("1 t\n" * 1000001)' "$D/.vmst-threads"
  "$VMS" info "$D" > /dev/null 2>"$TMP/ctf-threads.err"; st=$?
  python3 -c 'import sys; open(sys.argv[1], "w").write("1 t\n" * 1000000)' "$D/.vmst-threads"
  read -r st2 kb < <(run /dev/null "$TMP/ctf-threads2.err" "$VMS" info "$D")
  if [ $st -eq 2 ] && [ "$(wc -l < "$TMP/ctf-threads.err")" -eq 1 ] &&
     grep -qxF "vmscope info: $D/.vmst-threads: more than 1000000 thread names (the cap) at byte offset 4000000" "$TMP/ctf-threads.err" &&
     [ "$st2" -eq 0 ]; then
    ok "CTF: 1,000,001 thread names: the cap named at byte offset 4000000, exit 2; 1,000,000 read ($kb kB peak)"
  else notok "CTF: the thread-name cap" "status $st, $st2: $(head -c 300 "$TMP/ctf-threads.err") $(head -c 300 "$TMP/ctf-threads2.err")"; fi
fi

echo "1..$n"

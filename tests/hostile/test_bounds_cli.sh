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
run() {
  python3 - "$@" <<'EOF'
import resource, subprocess, sys
out, err, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(out, "wb") as o, open(err, "wb") as e:
    st = subprocess.call(cmd, stdout=o, stderr=e)
print(st, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
EOF
}

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

echo "1..$n"

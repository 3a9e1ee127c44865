"""What `vmscope db` wrote must be what the other commands print on the same inputs: the
expected values come from report --json, vcpus/threads/pcpus/exits/latency --csv, read here
independently of the database; the database is read back with the backend's own client
(Python's sqlite3 module, or clickhouse over HTTP) through a `fetch(sql) -> rows` function.
Shared by test_db_sqlite.py and test_db_clickhouse.py."""
import csv, io, json, os, re, subprocess

n = 0
failed = 0


def ok(cond, what, detail=""):
    global n, failed
    n += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (n, what), flush=True)
    if not cond:
        failed += 1
        if detail:
            for line in str(detail)[:3000].splitlines():
                print("# " + line)


def skip(what, why):
    global n
    n += 1
    print("ok %d - %s # SKIP %s" % (n, what, why), flush=True)


def run(vmscope, *args, check=True):
    p = subprocess.run([vmscope] + list(args), capture_output=True)
    if check and p.returncode != 0:
        raise RuntimeError("vmscope %s: exit %d: %s" % (" ".join(args), p.returncode,
                                                         p.stderr.decode(errors="replace")))
    return p


def csv_rows(vmscope, cmd, inputs):
    out = run(vmscope, cmd, "--csv", *inputs).stdout.decode()
    rows = list(csv.reader(io.StringIO(out)))
    return rows[0], rows[1:]


def norm(v):
    """a cell as text, NULL and the empty CSV field alike"""
    return "" if v is None else str(v)


def multiset(rows):
    return sorted(tuple(norm(c) for c in r) for r in rows)


def compare(vmscope, inputs, capture, fetch, label):
    """every table of `capture` against the commands' outputs on `inputs`"""
    def q(sql):
        return fetch(sql.replace("$C", "'%s'" % capture))

    rep = json.loads(run(vmscope, "report", "--json", *inputs).stdout)
    # captures: one row, its span and events as report says
    cap = q("SELECT first_ns, last_ns, events, time_unit FROM captures WHERE capture = $C")
    ok(len(cap) == 1 and [int(cap[0][0]), int(cap[0][1]), int(cap[0][2])] ==
       [rep["first_ns"], rep["last_ns"], rep["events"]] and cap[0][3] == "ns",
       "%s: captures row: span and events of report --json" % label, (cap, rep["events"]))
    # machines
    exp = sorted((m["name"], m.get("path") or "", m.get("format") or "",
                  str(m.get("cpus", "")), str(m.get("lost_events", ""))) for m in rep["machines"])
    got = sorted((r[0], norm(r[1]), norm(r[2]), norm(r[3]), norm(r[4])) for r in
                 q("SELECT machine, path, format, cpus, lost_events FROM machines WHERE capture = $C"))
    ok(got == exp, "%s: machines = report --json's" % label, (got, exp))
    # vcpus: every state's time (NULL where report says null), exits, host_tid
    states = ["unknown", "idle", "running", "vmm", "preempted", "halted"]
    exp = []
    for m in rep["machines"]:
        for v in m["vcpus"]:
            exp.append((m["name"], str(v["vcpu"]), norm(v["host_tid"])) +
                       tuple(norm(v["ns"][s]) for s in states) +
                       (norm(v["halt_poll_ns"]), norm(v["hypervisor_ns"]),
                        str(sum(e["count"] for e in v["exits"])), str(v["exits_unfinished"]),
                        str(v["first_ns"]), str(v["last_ns"])))
    got = multiset(q("SELECT machine, vcpu, host_tid, unknown_ns, idle_ns, running_ns, vmm_ns, "
                     "preempted_ns, halted_ns, halt_poll_ns, hypervisor_ns, exits, "
                     "exits_unfinished, first_ns, last_ns FROM vcpus WHERE capture = $C"))
    ok(got == sorted(exp) and exp, "%s: vcpus = report --json's vcpus (%d)" % (label, len(exp)),
       (got, sorted(exp)))
    compare_steal(rep, q, label)
    # findings: kind, machine and sentence, in rank order
    exp = [(f["kind"], f["machine"], f["text"]) for f in rep.get("findings", [])]
    got = [tuple(r) for r in q("SELECT kind, machine, text FROM findings WHERE capture = $C "
                                "ORDER BY rank")]
    ok(got == exp, "%s: findings = report --json's (%d)" % (label, len(exp)), (got, exp))

    # the interval tables, row for row
    for cmd, table, cols in [
            ("vcpus", "vcpu_intervals", "machine, vcpu, start_ns, end_ns, status, state"),
            ("threads", "thread_intervals",
             "machine, tid, start_ns, end_ns, reason, exit_reason, host_tid"),
            ("pcpus", "pcpu_intervals",
             "host, cpu, start_ns, end_ns, coalesce(machine, 'unknown'), vcpu, tid, comm")]:
        _, exp = csv_rows(vmscope, cmd, inputs)
        got = multiset(q("SELECT %s FROM %s WHERE capture = $C" % (cols, table)))
        ok(got == multiset(exp), "%s: %s = %s --csv (%d rows)" % (label, table, cmd, len(exp)),
           "first differences: %s" % [x for x in zip(got, multiset(exp)) if x[0] != x[1]][:5])
    # exit_stats = exits --csv; exits (every exit) sum to it
    _, exp = csv_rows(vmscope, "exits", inputs)
    got = multiset(q("SELECT machine, vcpu, isa, reason, name, count, total_ns, min_ns, max_ns, "
                     "mean_ns, p50_ns, p90_ns, p99_ns, unfinished FROM exit_stats WHERE capture = $C"))
    ok(got == multiset(exp), "%s: exit_stats = exits --csv (%d rows)" % (label, len(exp)),
       (got[:5], multiset(exp)[:5]))
    per = multiset([r[0], r[1], r[2], r[3], r[5], r[6], r[13]] for r in exp)
    got = multiset(q("SELECT machine, vcpu, isa, reason, count(*), "
                     "sum(CASE WHEN outcome = 'ended' THEN duration_ns ELSE 0 END), "
                     "sum(CASE WHEN outcome = 'ended' THEN 0 ELSE 1 END) FROM exits "
                     "WHERE capture = $C GROUP BY machine, vcpu, isa, reason"))
    ok(got == per, "%s: exits: %d exits, per vCPU and reason their count, time and unfinished "
       "= exits --csv" % (label, sum(int(r[4]) for r in per)), (got[:5], per[:5]))
    # wakeups = latency --csv
    _, exp = csv_rows(vmscope, "latency", inputs)
    got = multiset(q("SELECT machine, tid, comm, wakeup_ns, run_ns, latency_ns, "
                     "guest_runqueue_ns, preempted_ns, exits_ns, halted_wakeup_ns, unknown_ns, "
                     "top_cause, culprit FROM wakeups WHERE capture = $C"))
    ok(got == multiset(exp), "%s: wakeups = latency --csv (%d rows)" % (label, len(exp)),
       (got[:3], multiset(exp)[:3]))


def compare_steal(rep, q, label):
    """the steal table = report --json's steal entries, with their layer: report's "layer"
    (a nested model), else the vCPU's host; NULL for the unattributed bucket"""
    exp = []
    for m in rep["machines"]:
        for v in m["vcpus"]:
            for s in v["steal"]:
                layer = s.get("layer", m.get("host") if s["kind"] != "unattributed" else None)
                exp.append((m["name"], str(v["vcpu"]), s["kind"], norm(s["tid"]),
                            norm(s["pid"]), norm(layer), s["comm"], str(s["ns"]),
                            norm(s.get("threads"))))
    got = multiset(q("SELECT machine, vcpu, kind, host_tid, host_pid, layer, comm, ns, threads "
                     "FROM steal WHERE capture = $C"))
    ok(got == sorted(exp), "%s: steal = report --json's steal with its layer (%d rows, %d ns)"
       % (label, len(exp), sum(int(s[7]) for s in exp)), (got, sorted(exp)))
    return got


def nested_set(tmp):
    """tests/nested's l0s/l1s/l2s (mk_nested.c, VMS_MK_NESTED): three layers, each preemption
    by 300 threads with the same tids on L0 and L1; None without the maker"""
    mk = os.environ.get("VMS_MK_NESTED")
    if not mk:
        return None
    d = os.path.join(tmp, "nested")
    os.makedirs(d, exist_ok=True)
    subprocess.run([mk, d], check=True, capture_output=True)
    return [os.path.join(d, f) for f in ("l0s.dat", "l1s.dat", "l2s.dat")]


def compare_nested(vmscope, inputs, capture, fetch, label):
    """a nested capture's steal rows: report --json's, with their layers; and by hand
    (tests/nested): the L2 vCPU's two "other threads" rows, 44 threads / 132 ns at l0s and
    300 / 900 ns at l1, told apart by layer alone; tid 1000 taken at both layers, one row
    each would be ambiguous without it (the L2 vCPU's 256 itemised are L0's)"""
    def q(sql):
        return fetch(sql.replace("$C", "'%s'" % capture))
    rep = json.loads(run(vmscope, "report", "--json", *inputs).stdout)
    compare_steal(rep, q, label)
    got = multiset(q("SELECT machine, layer, ns, threads FROM steal WHERE capture = $C AND "
                     "kind = 'other threads'"))
    exp = multiset([("l1", "l0s", 132, 44), ("l2", "l0s", 132, 44), ("l2", "l1", 900, 300)])
    ok(got == exp, "%s: other threads per layer, by hand" % label, (got, exp))
    got = multiset(q("SELECT machine, layer, count(*), sum(ns) FROM steal WHERE capture = $C "
                     "AND kind = 'thread' GROUP BY machine, layer"))
    exp = multiset([("l1", "l0s", 256, 768), ("l2", "l0s", 256, 768)])
    ok(got == exp, "%s: itemised thieves: 256 of L0's, 3 ns each, per vCPU" % label, (got, exp))


def input_sets(vmscope, shared, tmp):
    """[(label, inputs)]: a synthesized pair (noisy neighbour: steal) written in tmp, the
    shared kvm-hip24 pair, Trace Compass's OneQemuKvm and the Xen host xentrace.bin (its CPU
    rate given, so that times are ns)"""
    syn = os.path.join(tmp, "syn")
    run(vmscope, "synth", "--out", syn, "--seed", "7", "--events", "60k")
    traces = os.path.join(shared, "traces")
    return [("synth noisy-neighbour", [os.path.join(syn, f) for f in ("host.dat", "guest.dat")]),
            ("kvm-hip24", [os.path.join(traces, "kvm-hip24", f)
                           for f in ("host.dat", "guest-Salamander4.dat")]),
            ("OneQemuKvm", [os.path.join(traces, "tracecompass-vm/OneQemuKvm", f)
                            for f in ("host.xml", "guest.xml")]),
            ("xentrace.bin", ["--cpu-hz", "2.4G", os.path.join(traces, "xen", "xentrace.bin")])]


def capture_of(load_stdout):
    """the id in `capture ID (host H) written to ...`"""
    words = load_stdout.decode().split()
    return words[1] if len(words) > 1 and words[0] == "capture" else None


def fleet_expected(vmscope, fleet_dir, truth):
    """what the fleet queries must answer, from the commands on each host's pair"""
    exp = {"steal": {}, "storms": {}, "p99": {}, "kernel": {}}
    lat_by_kernel = {}
    for h in truth["hosts"]:
        inputs = [os.path.join(fleet_dir, h["dir"], f) for f in ("host.dat", "guest.dat")]
        rep = json.loads(run(vmscope, "report", "--json", *inputs).stdout)
        steal = sum(s["ns"] for m in rep["machines"] for v in m["vcpus"] for s in v["steal"])
        if steal:
            exp["steal"][h["name"]] = steal
        _, rips = csv_rows(vmscope, "exits", ["--by", "rip"] + inputs)
        if h["storm"]:
            top = max((r for r in rips if r[3] == "EPT_MISCONFIG"), key=lambda r: int(r[6]))
            exp["storms"][h["name"]] = (top[0], top[3], top[5], int(top[6]))
        _, lat = csv_rows(vmscope, "latency", inputs)
        by_guest = {}
        for r in lat:
            by_guest.setdefault(r[0], []).append(int(r[5]))
            lat_by_kernel.setdefault(h["kernel"], []).append(int(r[5]))
        for g, v in by_guest.items():
            exp["p99"][(h["name"], g)] = (len(v), p99(v))
    for k, v in lat_by_kernel.items():
        exp["kernel"][k] = (sum(1 for h in truth["hosts"] if h["kernel"] == k), len(v), p99(v))
    return exp


def p99(values):
    """nearest rank: the sample of rank ceil(0.99 n)"""
    v = sorted(values)
    return v[-(-len(v) * 99 // 100) - 1]


def fleet_checks(query, truth, exp, label):
    """query(name) -> rows (lists of text, no header) of vmscope db --query NAME --csv"""
    rows = query("top-steal")
    got = {r[0]: int(r[1]) for r in rows}
    ok(got == exp["steal"], "%s: top-steal: each host's steal = report --json's sum" % label,
       (got, exp["steal"]))
    noisy = sorted(r[0] for r in rows if int(r[3]) >= 100)
    ok(noisy == sorted(truth["noisy"]) and noisy,
       "%s: top-steal: the hosts above 1%% are exactly the planted noisy ones %s" %
       (label, noisy), (rows, truth["noisy"]))
    ok([r[0] for r in rows[:len(truth["noisy"])]] == [r[0] for r in rows if int(r[3]) >= 100],
       "%s: top-steal: the noisy hosts first" % label, rows)
    rows = query("exit-storms")
    storms = sorted({r[0] for r in rows})
    ok(storms == sorted(truth["storms"]), "%s: exit-storms: exactly the planted storm hosts %s" %
       (label, storms), (rows, truth["storms"]))
    first = {}
    for r in rows:
        first.setdefault(r[0], (r[1], r[2], r[3], int(r[4])))
    ok(first == exp["storms"], "%s: exit-storms: guest, reason, symbol and count of each storm "
       "= exits --by rip's top EPT_MISCONFIG row" % label, (first, exp["storms"]))
    rows = query("wakeup-p99")
    got = {(r[0], r[1]): (int(r[2]), int(r[3])) for r in rows}
    ok(got == exp["p99"], "%s: wakeup-p99: per host and guest, count and nearest-rank p99 of "
       "latency --csv (%d guests)" % (label, len(got)), (got, exp["p99"]))
    rows = query("wakeup-p99-kernel")
    got = {r[0]: (int(r[1]), int(r[2]), int(r[3])) for r in rows}
    ok(got == exp["kernel"], "%s: wakeup-p99-kernel: per kernel, hosts, count and p99 of the "
       "hosts' latency --csv" % label, (got, exp["kernel"]))


def doc_blocks(source_dir):
    """docs/fleet.md's SQL: {(name, "SQLite" | "ClickHouse"): sql}"""
    text = open(os.path.join(source_dir, "docs", "fleet.md")).read()
    out, name = {}, None
    for part in re.split(r"(?m)^## ([a-z0-9-]+):.*$", text)[1:]:
        if name is None:
            name = part
            continue
        for backend, sql in re.findall(r"(SQLite|ClickHouse):\n\n```sql\n(.*?)\n```", part, re.S):
            out[(name, backend)] = sql
        name = None
    return out

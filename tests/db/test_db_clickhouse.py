#!/usr/bin/env python3
"""vmscope db --clickhouse (TAP), with real ClickHouse servers started here on loopback (own
config and data directory, free ports; stopped at the end, also on failure); skipped with a
message where clickhouse-server is not installed.
 - one server: the synthesized pair, kvm-hip24 and OneQemuKvm loaded; every table equals the
   commands' output (db_compare.compare, read back over HTTP); a rerun writes nothing;
 - the server killed in the middle of a load: the load fails with one line saying what was
   not written; after a restart the captures committed before are intact, the cut capture
   has no commit marker, and a rerun completes it with no duplicates;
 - the fleet queries on a synthesized fleet of 8 hosts find exactly the planted hosts;
 - two servers as the two shards of a cluster, the fleet loaded through Distributed tables:
   both shards hold captures, and the queries on the Distributed tables give what the
   per-host commands give (the same checks as on one server).

usage: test_db_clickhouse.py VMSCOPE SHARED_DIR TMPDIR"""
import csv, io, json, os, shutil, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clickhouse_server as chs
import db_compare as dc
from db_compare import ok, skip, run

vmscope, shared, tmp = sys.argv[1:4]
if not chs.binary():
    print("1..0 # SKIP clickhouse-server is not installed (apt-get install clickhouse-server)")
    sys.exit(0)
shutil.rmtree(tmp, ignore_errors=True)
os.makedirs(tmp)


def table_counts(srv, capture):
    return {t: int(srv.query("SELECT count() FROM %s WHERE capture = '%s'" % (t, capture)))
            for t in ["captures", "machines", "vcpus", "vcpu_intervals", "thread_intervals",
                      "pcpu_intervals", "exits", "exit_stats", "steal", "wakeups", "findings"]}


def querier(url, *extra):
    def query(name):
        out = run(vmscope, "db", "--query", name, "--clickhouse", url, "--csv", *extra).stdout
        return list(csv.reader(io.StringIO(out.decode())))[1:]
    return query


sets = dc.input_sets(vmscope, shared, tmp)

srv = chs.Server(os.path.join(tmp, "one"))
try:
    srv.start()
    ok(srv.query("SELECT version()").strip() != "", "a ClickHouse server on loopback port %d "
       "(%s)" % (srv.http, srv.query("SELECT version()").strip()))
    loaded = []
    for label, inputs in sets:
        if not all(os.path.exists(p) for p in inputs if "/" in p):   # the files, not options
            skip("%s: every table equals the commands' output" % label, "shared traces missing")
            continue
        p = run(vmscope, "db", "--clickhouse", srv.url, "--batch-rows", "5000", *inputs, check=False)
        cap = dc.capture_of(p.stdout)
        ok(p.returncode == 0 and cap, "%s: loaded into ClickHouse in batches of 5000 rows" % label,
           p.stderr.decode())
        if cap:
            dc.compare(vmscope, inputs, cap, srv.rows, "clickhouse " + label)
            loaded.append((label, inputs, cap))
    before = {cap: table_counts(srv, cap) for _, _, cap in loaded}
    label, inputs, cap = loaded[0]
    p = run(vmscope, "db", "--clickhouse", srv.url, *inputs, check=False)
    ok(p.returncode == 0 and b"already in" in p.stderr and table_counts(srv, cap) == before[cap],
       "a rerun of a committed capture writes nothing", p.stderr.decode())

    p = run(vmscope, "db", "--clickhouse", srv.url, "--replace", *inputs, check=False)
    ok(p.returncode == 0 and dc.capture_of(p.stdout) == cap and table_counts(srv, cap) == before[cap],
       "--replace: the capture deleted (ALTER DELETE, waited for) and written again, no "
       "duplicates", (p.stderr.decode(), table_counts(srv, cap), before[cap]))
    # hostile names, in TabSeparated bodies: data, never SQL or a broken row
    hostile = b"h'\t); DROP TABLE captures; --\\\xff\n"
    p = subprocess.run([vmscope.encode(), b"db", b"--clickhouse", srv.url.encode(), b"--host-name",
                        hostile, b"--kernel", b"k'\\N"] + [a.encode() for a in inputs],
                       capture_output=True)
    got = srv.rows("SELECT host, kernel FROM captures WHERE kernel LIKE 'k%'")
    ok(p.returncode == 0 and got == [["h'\\x09); DROP TABLE captures; --\\\\\\xff\\x0a", "k'\\\\N"]],
       "hostile names (quote, tab, newline, backslash, invalid UTF-8) stored as data, escaped",
       (got, p.stderr))
    ok({c: table_counts(srv, c) for c in before} == before, "the other captures untouched")

    # the server killed in the middle of a load (of a capture not there yet: another host name)
    srv.query("SELECT 1")
    load = subprocess.Popen([vmscope, "db", "--clickhouse", srv.url, "--batch-rows", "100",
                             "--host-name", "cut-short", *inputs],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    cut = None
    t0 = time.time()
    while time.time() - t0 < 120 and load.poll() is None:
        try:
            n = int(srv.query("SELECT count() FROM vcpu_intervals WHERE capture NOT IN "
                              "(SELECT capture FROM captures)"))
        except OSError:
            n = 0
        if n >= 500:
            srv.kill()
            cut = n
            break
        time.sleep(0.02)
    out, err = load.communicate()
    lines = [l for l in err.decode().splitlines() if "not committed" in l]
    ok(cut and load.returncode == 1 and len(lines) == 1,
       "the server killed after %s rows of the load: it fails, exit 1, one line" % cut,
       (load.returncode, err.decode()))
    ok(lines and "rows sent before the failure" in lines[0] and "the rest not written" in lines[0],
       "that line says what was sent and that the rest was not written", lines)
    srv.start()
    ok({c: table_counts(srv, c) for c in before} == before,
       "after a restart, the captures committed before are intact", before)
    cut_id = [r[0] for r in srv.rows("SELECT DISTINCT capture FROM vcpu_intervals WHERE capture "
                                     "NOT IN (SELECT capture FROM captures)")]
    ok(len(cut_id) == 1 and srv.query("SELECT count() FROM captures WHERE host = 'cut-short'")
       .strip() == "0", "the cut capture's rows are there without their commit marker "
       "(queries joining captures do not see them)", cut_id)
    p = run(vmscope, "db", "--clickhouse", srv.url, "--host-name", "cut-short", *inputs,
            check=False)
    ok(p.returncode == 0 and dc.capture_of(p.stdout) == (cut_id or [None])[0],
       "a rerun completes the cut capture", p.stderr.decode())
    if cut_id:
        # a complete capture again, with no duplicates: the same rows as the commands print
        dc.compare(vmscope, inputs, cut_id[0], srv.rows, "clickhouse rerun after the kill")
        mine = table_counts(srv, cut_id[0])
        theirs = before[cap]
        ok(mine == theirs, "the rerun's row counts equal the same inputs' committed capture",
           (mine, theirs))

    # the fleet, on one server
    fleet = os.path.join(tmp, "fleet")
    run(vmscope, "synth", "--hosts", "8", "--out", fleet, "--events", "30k")
    truth = json.load(open(os.path.join(fleet, "fleet.json")))
    fdb = "fleetdb"
    srv.query("CREATE DATABASE IF NOT EXISTS " + fdb)
    url = srv.url + "/?database=" + fdb
    for h in truth["hosts"]:
        d = os.path.join(fleet, h["dir"])
        run(vmscope, "db", "--clickhouse", url, "--host-name", h["name"], "--kernel", h["kernel"],
            os.path.join(d, "host.dat"), os.path.join(d, "guest.dat"))
    exp = dc.fleet_expected(vmscope, fleet, truth)
    one = {q: querier(url)(q) for q in ["top-steal", "exit-storms", "wakeup-p99",
                                        "wakeup-p99-kernel"]}
    dc.fleet_checks(lambda q: one[q], truth, exp, "clickhouse")
finally:
    srv.stop()

# two shards, a Distributed table over them
s1 = chs.Server(os.path.join(tmp, "shard1"))
s2 = chs.Server(os.path.join(tmp, "shard2"))
shards = [("127.0.0.1", s1.tcp), ("127.0.0.1", s2.tcp)]
s1.shards = s2.shards = shards
try:
    s1.start()
    s2.start()
    urls = s1.url + "," + s2.url
    for h in truth["hosts"]:
        d = os.path.join(fleet, h["dir"])
        run(vmscope, "db", "--clickhouse", urls, "--cluster", "fleet", "--host-name", h["name"],
            "--kernel", h["kernel"], os.path.join(d, "host.dat"), os.path.join(d, "guest.dat"))
    n1 = int(s1.query("SELECT count() FROM captures"))
    n2 = int(s2.query("SELECT count() FROM captures"))
    ok(n1 + n2 == 8 and n1 and n2, "two shards: the 8 captures spread over both (%d + %d)" %
       (n1, n2))
    e1 = int(s1.query("SELECT count() FROM exits"))
    e2 = int(s2.query("SELECT count() FROM exits"))
    eall = int(s1.query("SELECT count() FROM exits_all"))
    ok(eall == e1 + e2 and e1 and e2, "exits_all (Distributed) sees both shards' exits: "
       "%d = %d + %d" % (eall, e1, e2))
    dist = {q: querier(urls, "--cluster", "fleet")(q) for q in one}
    dc.fleet_checks(lambda q: dist[q], truth, exp, "clickhouse 2 shards")
    ok(dist == one, "every fleet query on the Distributed tables = the same query on one server")
    p = run(vmscope, "db", "--clickhouse", urls, "--cluster", "fleet", "--host-name",
            truth["hosts"][0]["name"], "--kernel", truth["hosts"][0]["kernel"],
            os.path.join(fleet, "host-000", "host.dat"), os.path.join(fleet, "host-000", "guest.dat"),
            check=False)
    ok(p.returncode == 0 and b"already in" in p.stderr and
       int(s1.query("SELECT count() FROM captures_all")) == 8,
       "a rerun through the cluster writes nothing", p.stderr.decode())
finally:
    s1.stop()
    s2.stop()

print("1..%d" % dc.n)
sys.exit(1 if dc.failed else 0)

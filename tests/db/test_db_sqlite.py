#!/usr/bin/env python3
"""vmscope db --sqlite (TAP): on the shared kvm-hip24 pair, Trace Compass's OneQemuKvm and a
synthesized pair, every table equals what report --json, vcpus, threads, pcpus, exits and
latency print on the same inputs (db_compare.py); a rerun writes nothing, --replace writes
the capture again without duplicates; hostile names are stored as data; a full disk fails
the load with one line and leaves the file as it was; docs/schema.md is db --schema.

usage: test_db_sqlite.py VMSCOPE SHARED_DIR SOURCE_DIR TMPDIR"""
import os, shutil, sqlite3, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import db_compare as dc
from db_compare import ok, skip, run

vmscope, shared, source, tmp = sys.argv[1:5]
shutil.rmtree(tmp, ignore_errors=True)
os.makedirs(tmp)


def fetcher(path):
    def fetch(sql):
        con = sqlite3.connect(path)
        try:
            return [list(r) for r in con.execute(sql)]
        finally:
            con.close()
    return fetch


def counts(path):
    con = sqlite3.connect(path)
    try:
        return {t: con.execute("SELECT count(*) FROM %s" % t).fetchone()[0] for t in
                ["captures", "machines", "vcpus", "vcpu_intervals", "thread_intervals",
                 "pcpu_intervals", "exits", "exit_stats", "steal", "wakeups", "findings"]}
    finally:
        con.close()


# the schema's one text
schema = run(vmscope, "db", "--schema").stdout.decode()
with open(os.path.join(source, "docs", "schema.md")) as f:
    ok(f.read() == schema, "docs/schema.md is what vmscope db --schema prints")

sets = dc.input_sets(vmscope, shared, tmp)
db = os.path.join(tmp, "all.db")
loaded = []
for label, inputs in sets:
    if not all(os.path.exists(p) for p in inputs if "/" in p):   # the files, not options
        skip("%s: every table equals the commands' output" % label,
             "the shared traces are missing (%s)" % inputs[0])
        continue
    p = run(vmscope, "db", "--sqlite", db, *inputs, check=False)
    cap = dc.capture_of(p.stdout)
    ok(p.returncode == 0 and cap, "%s: loaded into SQLite" % label, p.stderr.decode())
    if cap:
        dc.compare(vmscope, inputs, cap, fetcher(db), label)
        loaded.append((label, inputs, cap))

# a nested model (three layers): the steal rows name their layer
nested = dc.nested_set(tmp)
if nested:
    ndb = os.path.join(tmp, "nested.db")
    p = run(vmscope, "db", "--sqlite", ndb, *nested, check=False)
    cap = dc.capture_of(p.stdout)
    ok(p.returncode == 0 and cap, "nested l0s/l1s/l2s: loaded into SQLite", p.stderr.decode())
    if cap:
        dc.compare_nested(vmscope, nested, cap, fetcher(ndb), "nested l0s/l1s/l2s")
else:
    skip("nested l0s/l1s/l2s: steal rows with their layer", "VMS_MK_NESTED not set")

# many captures in one file: each its own, no row without its capture
before = counts(db)
ok(before["captures"] == len(loaded), "%d captures in one file" % len(loaded), before)
orphans = fetcher(db)("SELECT count(*) FROM exits WHERE capture NOT IN (SELECT capture FROM captures)")
ok(orphans == [[0]], "every row's capture is committed", orphans)

# rerun: nothing written; --replace: the same rows again, not twice
if loaded:
    label, inputs, cap = loaded[0]
    p = run(vmscope, "db", "--sqlite", db, *inputs, check=False)
    ok(p.returncode == 0 and b"already in" in p.stderr and counts(db) == before,
       "a rerun of a capture writes nothing (exit 0, said on stderr)", p.stderr.decode())
    p = run(vmscope, "db", "--sqlite", db, "--replace", *inputs, check=False)
    ok(p.returncode == 0 and dc.capture_of(p.stdout) == cap and counts(db) == before,
       "--replace writes the capture again: the same row counts, no duplicates",
       (p.stderr.decode(), counts(db), before))

    # hostile names: quotes, SQL, invalid UTF-8, a control character, as data
    hostile = b"h'); DROP TABLE captures; --\xff\x01\"x"
    kern = b"6.1'||(SELECT 1)||'\\"
    hdb = os.path.join(tmp, "hostile.db")
    env_inputs = [a.encode() for a in inputs]
    p = subprocess.run([vmscope.encode(), b"db", b"--sqlite", hdb.encode(), b"--host-name", hostile,
                        b"--kernel", kern] + env_inputs, capture_output=True)
    ok(p.returncode == 0, "hostile host name and kernel label: loaded", p.stderr.decode(errors="replace"))
    got = fetcher(hdb)("SELECT host, kernel FROM captures")
    ok(got == [["h'); DROP TABLE captures; --\\xff\\x01\"x", "6.1'||(SELECT 1)||'\\\\"]],
       "stored as data, escaped as the text writers do (\\xHH, \\\\), never run as SQL", got)
    ok(set(counts(hdb)) and counts(hdb)["captures"] == 1, "every table still there", counts(hdb))
    g = subprocess.run([vmscope.encode(), b"db", b"--sqlite", hdb.encode(), b"--query",
                        b"top-steal"], capture_output=True)
    ok(g.returncode == 0 and b"DROP TABLE captures; --\\xff\\x01" in g.stdout and
       b"\xff" not in g.stdout,
       "a fleet query over the hostile capture prints it escaped", g.stdout + g.stderr)
    guest = b"g'\xfe;DROP TABLE exits"
    p = subprocess.run([vmscope.encode(), b"db", b"--sqlite", hdb.encode(), b"--host",
                        env_inputs[0], b"--guest", guest + b"=" + env_inputs[1]],
                       capture_output=True)
    got = fetcher(hdb)("SELECT DISTINCT machine FROM vcpus WHERE machine LIKE 'g''%'")
    ok(p.returncode == 0 and got == [["g'\\xfe;DROP TABLE exits"]],
       "a hostile guest name (--guest) is a machine name like any other", (got, p.stderr))
    # the rows of every table that names the guest carry it escaped the same way (db_capture
    # escapes a machine's name once per capture, not per row)
    gcap = dc.capture_of(p.stdout)
    for t in ["machines", "vcpu_intervals", "thread_intervals", "pcpu_intervals", "exits",
              "exit_stats", "wakeups"]:
        got = fetcher(hdb)("SELECT machine, count(*) > 0 FROM %s WHERE capture = '%s' AND "
                           "machine LIKE 'g''%%' GROUP BY machine" % (t, gcap))
        ok(got == [["g'\\xfe;DROP TABLE exits", 1]], "the hostile guest name in %s: escaped" % t, got)

# usage errors: exit 2, one line
for args, what in [(["db", "x.dat"], "no backend"),
                   (["db", "--sqlite", db, "--clickhouse", "http://127.0.0.1:1", "x.dat"], "two backends"),
                   (["db", "--query", "nonesuch", "--sqlite", db], "an unknown query"),
                   (["db", "--csv", "--sqlite", db, "x.dat"], "--csv without --query"),
                   (["db", "--query", "top-steal", "--sqlite", db, "x.dat"], "--query with traces"),
                   (["db", "--batch-rows", "0", "--sqlite", db, "x.dat"], "--batch-rows 0")]:
    p = run(vmscope, *args, check=False)
    ok(p.returncode == 2 and len(p.stderr.decode().splitlines()) == 1,
       "usage error, exit 2, one line: %s" % what, (p.returncode, p.stderr))
notdb = os.path.join(tmp, "not.db")
with open(notdb, "w") as f:
    f.write("this is not a database\n" * 100)
p = run(vmscope, "db", "--sqlite", notdb, *sets[0][1], check=False)
ok(p.returncode == 1 and len(p.stderr.decode().splitlines()) == 1 and b"not.db" in p.stderr,
   "a file that is not a database: exit 1, one line naming it", p.stderr)

# a full disk: the load fails with one line, the file is as it was (needs a small tmpfs). A
# small synthesized capture fits, then the 60k pair's cannot: the tmpfs is sized between the
# two databases' sizes, measured on the ordinary disk first (so that the test needs no
# ../shared trace and holds whatever the schema's size)
full = os.path.join(tmp, "full")
os.makedirs(full)
small_dir = os.path.join(tmp, "syn-small")
run(vmscope, "synth", "--out", small_dir, "--seed", "3", "--events", "2k")
small = ["synth 2k", [os.path.join(small_dir, f) for f in ("host.dat", "guest.dat")]]
big = [x for x in loaded if x[0] == "synth noisy-neighbour"]
sizes = []
for label, inputs in ([small] + [big[0][:2]] if big else []):
    probe = os.path.join(tmp, "probe-%d.db" % len(sizes))
    run(vmscope, "db", "--sqlite", probe, *inputs, check=False)
    sizes.append(os.path.getsize(probe) if os.path.exists(probe) else 0)
room = (max(2 * sizes[0], sizes[0] + 65536) + 4095) // 4096 * 4096 if sizes else 0
fits = len(sizes) == 2 and 0 < sizes[0] and 2 * room < sizes[1]
mounted = fits and os.geteuid() == 0 and subprocess.run(
    ["mount", "-t", "tmpfs", "-o", "size=%d" % room, "tmpfs", full],
    capture_output=True).returncode == 0
if not mounted:
    skip("a full disk", "mounting a small tmpfs needs root" if fits else
         "the databases' sizes leave no room between them: %s" % sizes)
else:
    try:
        fdb = os.path.join(full, "f.db")
        p = run(vmscope, "db", "--sqlite", fdb, *small[1], check=False)
        ok(p.returncode == 0, "a full disk: a small capture (%s, %d of %d bytes) fits first" %
           (small[0], sizes[0], room), p.stderr.decode())
        con = sqlite3.connect(fdb)
        before_full = list(con.iterdump())
        con.close()
        label, inputs, cap = big[0]
        p = run(vmscope, "db", "--sqlite", fdb, *inputs, check=False)
        lines = [l for l in p.stderr.decode().splitlines() if "disk is full" in l]
        ok(p.returncode == 1 and len(lines) == 1 and "rolled back" in lines[0],
           "a full disk: exit 1, one line saying so (%s: %d bytes)" % (label, sizes[1]),
           p.stderr.decode())
        con = sqlite3.connect(fdb)
        after_full = list(con.iterdump())
        con.close()
        ok(after_full == before_full and fetcher(fdb)("SELECT count(*) FROM captures") == [[1]],
           "the file holds what it held before: the capture committed first intact, nothing "
           "of the failed one")
    finally:
        subprocess.run(["umount", full])

print("1..%d" % dc.n)
sys.exit(1 if dc.failed else 0)

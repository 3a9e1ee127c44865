#!/usr/bin/env python3
"""The fleet queries (docs/fleet.md) on SQLite (TAP): a synthesized fleet (vmscope synth
--hosts 8: noisy neighbours on host-001 and host-005, exit storms on host-003 and host-007,
fleet.json) loaded one capture per host; each query must find exactly the planted hosts, and
its numbers must be what report --json, exits --by rip and latency --csv give per host
(db_compare.fleet_expected). docs/fleet.md's SQL blocks are the SQL vmscope runs (--print-sql)
and give the same table when the sqlite3 program runs them.

usage: test_db_fleet.py VMSCOPE SOURCE_DIR TMPDIR"""
import csv, io, json, os, shutil, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import db_compare as dc
from db_compare import ok, skip, run

vmscope, source, tmp = sys.argv[1:4]
shutil.rmtree(tmp, ignore_errors=True)
os.makedirs(tmp)
fleet = os.path.join(tmp, "fleet")
run(vmscope, "synth", "--hosts", "8", "--out", fleet, "--events", "30k")
truth = json.load(open(os.path.join(fleet, "fleet.json")))
ok(truth["noisy"] == ["host-001", "host-005"] and truth["storms"] == ["host-003", "host-007"],
   "synth --hosts 8: the planted subset as its --help says", truth)
db = os.path.join(tmp, "fleet.db")
for h in truth["hosts"]:
    d = os.path.join(fleet, h["dir"])
    run(vmscope, "db", "--sqlite", db, "--host-name", h["name"], "--kernel", h["kernel"],
        os.path.join(d, "host.dat"), os.path.join(d, "guest.dat"))
exp = dc.fleet_expected(vmscope, fleet, truth)


def query(name):
    out = run(vmscope, "db", "--query", name, "--sqlite", db, "--csv").stdout.decode()
    return list(csv.reader(io.StringIO(out)))[1:]


dc.fleet_checks(query, truth, exp, "sqlite")

blocks = dc.doc_blocks(source)
names = ["top-steal", "exit-storms", "wakeup-p99", "wakeup-p99-kernel"]
for name in names:
    for backend, args in [("SQLite", ["--sqlite", "x"]),
                          ("ClickHouse", ["--clickhouse", "http://127.0.0.1:8123"])]:
        sql = run(vmscope, "db", "--query", name, "--print-sql", *args).stdout.decode().rstrip("\n")
        ok(blocks.get((name, backend)) == sql, "docs/fleet.md's %s SQL of %s is what vmscope runs"
           % (backend, name), (blocks.get((name, backend)), sql))
if not shutil.which("sqlite3"):
    skip("docs/fleet.md's SQL in the sqlite3 program", "sqlite3 is not installed")
else:
    for name in names:
        p = subprocess.run(["sqlite3", "-csv", db], input=blocks[(name, "SQLite")] + ";\n",
                           capture_output=True, text=True)
        mine = query(name)
        theirs = list(csv.reader(io.StringIO(p.stdout)))
        ok(p.returncode == 0 and theirs == mine and mine,
           "sqlite3 running docs/fleet.md's %s gives vmscope db --query's table" % name,
           (p.stderr, theirs[:3], mine[:3]))

print("1..%d" % dc.n)
sys.exit(1 if dc.failed else 0)

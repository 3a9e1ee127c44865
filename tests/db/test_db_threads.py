#!/usr/bin/env python3
"""vmscope db's writer thread (lib/output/db_writer.c) (TAP): the rows go to SQLite through a
bounded queue from the analysis; VMS_DB_THREADS=0 gives them to SQLite at once. Checks:
 - a synthesized pair loaded with and without the thread: the two files hold the same rows
   in the same order (sqlite3's dump, table by table, rowid by rowid), and the row counts
   printed are the file's;
 - a row larger than one of the queue's blocks (a 70,000-byte guest name on every guest
   row; the blocks are 64 KiB) is written whole, in its place among the others;
 - a failure in the writer thread mid-way (the file may not grow past a limit: RLIMIT_FSIZE,
   so no root is needed): exit 1, one line, the capture rolled back, the capture committed
   before it intact; a rerun without the limit gives the file a fresh load gives.
Run under ThreadSanitizer by scripts/test.sh (suite threads; VMS_THREADS_TEST_EVENTS sizes
the pair).

usage: test_db_threads.py VMSCOPE SHARED_DIR TMPDIR"""
import os, resource, shutil, signal, sqlite3, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import db_compare as dc
from db_compare import ok, skip, run

vmscope, shared, tmp = sys.argv[1:4]
shutil.rmtree(tmp, ignore_errors=True)
os.makedirs(tmp)
events = os.environ.get("VMS_THREADS_TEST_EVENTS", "200000")


def dump(path):
    con = sqlite3.connect(path)
    try:
        return list(con.iterdump())
    finally:
        con.close()


def count(path, table, capture=None):
    con = sqlite3.connect(path)
    try:
        if capture is None:
            return con.execute("SELECT count(*) FROM %s" % table).fetchone()[0]
        return con.execute("SELECT count(*) FROM %s WHERE capture = ?" % table,
                           (capture,)).fetchone()[0]
    finally:
        con.close()


def load(db, *args, threads=True, limit=None):
    env = dict(os.environ, VMS_DB_THREADS="1" if threads else "0")

    def cap_size():   # a write past `limit` bytes fails with EFBIG (the signal ignored)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return subprocess.run([vmscope, "db", "--sqlite", db] + list(args), capture_output=True,
                          env=env, preexec_fn=cap_size if limit else None)


pair = os.path.join(tmp, "pair")
run(vmscope, "synth", "--out", pair, "--seed", "3", "--events", events)
P = [os.path.join(pair, f) for f in ("host.dat", "guest.dat")]

# 1. the same rows with and without the thread
a, b = os.path.join(tmp, "threaded.db"), os.path.join(tmp, "unthreaded.db")
pa, pb = load(a, *P), load(b, *P, threads=False)
ok(pa.returncode == 0 and pb.returncode == 0, "the pair loaded with and without the writer thread",
   pa.stderr + pb.stderr)
da = dump(a)
ok(len(da) > 1000 and da == dump(b),
   "the same rows in the same order in both files (%d lines of sqlite3's dump)" % len(da))
ok(pa.stdout.replace(b"threaded.db", b"unthreaded.db") == pb.stdout, "the same rows counted",
   (pa.stdout, pb.stdout))
printed = dict((w.split()[0], int(w.split()[1])) for w in
               pa.stdout.decode().split(": ", 1)[1].replace(" rows", "").strip().split(", "))
ok(all(count(a, t) == n for t, n in printed.items()) and printed.get("vcpu_intervals", 0) > 1000,
   "the counts printed are the file's rows", printed)

# 2. a row larger than a block of the queue
T = os.path.join(shared, "traces", "tracecompass-vm", "OneQemuKvm")
if not os.path.exists(os.path.join(T, "host.xml")):
    skip("a row larger than a block", "the shared traces are missing (%s)" % T)
else:
    name = "g" * 70000
    big = [os.path.join(tmp, "big%d.db" % i) for i in (0, 1)]
    args = ["--host", os.path.join(T, "host.xml"), "--guest", name + "=" + os.path.join(T, "guest.xml")]
    p0, p1 = load(big[0], *args, threads=False), load(big[1], *args)
    ok(p0.returncode == 0 and p1.returncode == 0, "a 70,000-byte guest name: loaded", p0.stderr + p1.stderr)
    con = sqlite3.connect(big[1])
    got = con.execute("SELECT count(*), min(length(machine)), sum(machine = ?) FROM vcpu_intervals",
                      (name,)).fetchone()
    con.close()
    ok(got[0] > 0 and got[0] == got[2] and got[1] == 70000,
       "every guest row holds the whole name", got)
    ok(dump(big[0]) == dump(big[1]), "those rows in their place among the others (the same dump "
       "as without the thread)")

# 3. a failure in the writer thread mid-way
f = os.path.join(tmp, "limited.db")
first = P[:1]   # the host alone: a smaller capture, committed first
p = load(f, *first)
cap1 = dc.capture_of(p.stdout)
ok(p.returncode == 0 and cap1, "a first capture committed", p.stderr)
before = dump(f)
size = os.path.getsize(f)
p = load(f, *P, limit=size + (1 << 20))
lines = p.stderr.decode().splitlines()
ok(p.returncode == 1 and len(lines) == 1 and "rolled back" in lines[0] and "writing a row of" in lines[0],
   "a write past the file-size limit mid-way: exit 1, one line, rolled back", p.stderr.decode())
ok(dump(f) == before, "the file holds what it held before: the first capture intact, nothing "
   "of the second")
p = load(f, *P)
cap2 = dc.capture_of(p.stdout)
fresh = os.path.join(tmp, "fresh.db")
load(fresh, *P)
ok(p.returncode == 0 and cap2 and count(f, "vcpu_intervals", cap2) == count(fresh, "vcpu_intervals") and
   count(f, "captures") == 2 and
   [l for l in dump(f) if cap2 in l] == [l for l in dump(fresh) if cap2 in l],
   "the rerun without the limit writes the capture whole, as a fresh load", p.stderr)

print("1..%d" % dc.n)
sys.exit(1 if dc.failed else 0)

#!/usr/bin/env python3
"""Rewrites the SQL blocks of docs/fleet.md from `vmscope db --query NAME --print-sql`, so the
file holds the SQL vmscope runs (tests/db/test_db_fleet.py checks it does).
usage: scripts/gen_fleet_md.py VMSCOPE [docs/fleet.md]"""
import re, subprocess, sys

vmscope = sys.argv[1]
path = sys.argv[2] if len(sys.argv) > 2 else "docs/fleet.md"
text = open(path).read()


def sql(name, backend):
    args = ["--sqlite", "x"] if backend == "SQLite" else ["--clickhouse", "http://127.0.0.1:8123"]
    return subprocess.run([vmscope, "db", "--query", name, "--print-sql"] + args, check=True,
                          capture_output=True, text=True).stdout.rstrip("\n")


def fill(m):
    return "%s:\n\n```sql\n%s\n```" % (m.group(1), sql(current[0], m.group(1)))


out, current = [], [None]
for part in re.split(r"(?m)^(## [a-z0-9-]+:.*)$", text):
    m = re.match(r"## ([a-z0-9-]+):", part)
    if m:
        current[0] = m.group(1)
    elif current[0]:
        part = re.sub(r"(SQLite|ClickHouse):\n\n```sql\n.*?\n```", fill, part, flags=re.S)
    out.append(part)
open(path, "w").write("".join(out))

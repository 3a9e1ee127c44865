#!/usr/bin/env python3
"""Counts test cases from meson's testlog.json. Every test speaks TAP: each 'ok'/'not ok'
line is a case ('# SKIP' marks a skipped one). A test program that failed without a failing
case (a crash, a sanitizer report, a timeout) counts as one more failure. Prints the closing
line 'N passed, N failed[, N skipped]' and exits non-zero when anything failed."""
import json, re, sys

case = re.compile(r"^(not ok|ok)\b(.*)$")
passed = failed = skipped = 0
for path in sys.argv[1:]:
  with open(path) as f:
    for line in f:
        line = line.strip()
        if not line:
            continue
        t = json.loads(line)
        p = fl = sk = 0
        for out in (t.get("stdout") or "").splitlines():
            m = case.match(out)
            if not m:
                continue
            if re.search(r"#\s*SKIP", m.group(2), re.I):
                sk += 1
            elif m.group(1) == "ok":
                p += 1
            else:
                fl += 1
        ok = t["result"] in ("OK", "EXPECTEDFAIL", "SKIP")
        if p + fl + sk == 0:
            if t["result"] == "SKIP":
                sk = 1
            elif ok:
                p = 1
        if not ok and fl == 0:
            fl = 1
            print(f"failed outside any case: {t['name']} ({t['result']})", file=sys.stderr)
        passed += p
        failed += fl
        skipped += sk
line = f"{passed} passed, {failed} failed"
if skipped:
    line += f", {skipped} skipped"
print(line)
sys.exit(1 if failed else 0)

#!/usr/bin/env python3
"""Counts test cases from meson's testlog.json: each TAP subtest is a case, a test without
subtests counts once. Prints the closing line 'N passed, N failed[, N skipped]'."""
import json, sys

passed = failed = skipped = 0
with open(sys.argv[1]) as f:
    for line in f:
        line = line.strip()
        if not line:
            continue
        t = json.loads(line)
        subs = t.get("results") or []
        if subs:
            for s in subs:
                r = s.get("result", "")
                if r in ("OK", "EXPECTEDFAIL"):
                    passed += 1
                elif r == "SKIP":
                    skipped += 1
                else:
                    failed += 1
            if t["result"] not in ("OK", "EXPECTEDFAIL", "SKIP") and not any(
                    s.get("result") not in ("OK", "EXPECTEDFAIL", "SKIP") for s in subs):
                failed += 1  # the program failed outside any case (crash, sanitizer)
        else:
            r = t["result"]
            if r in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif r == "SKIP":
                skipped += 1
            else:
                failed += 1
line = f"{passed} passed, {failed} failed"
if skipped:
    line += f", {skipped} skipped"
print(line)
sys.exit(1 if failed else 0)

#!/usr/bin/env python3
"""Independent record counter for trace.dat v7 files compressed with zlib or not at all.

Debian's trace-cmd cannot read zlib trace.dat files, so the tests cross-check the C reader's
counts on ../shared/traces/kvm-hip24/*.dat with this separate implementation (the walker in
tests/common/tdwalk.py, written from trace-cmd.dat.v7(5) and the kernel's ring-buffer layout
only). Output lines:
  cpu <buffer> <cpu> <records>
  event <name> <records>
  lost <sum of stored missed-event counts>
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from tdwalk import TraceDat  # noqa: E402


def main(path):
    t = TraceDat(path)
    counts = {}
    for name, cpu, records in t.cpus():
        for payload in records:
            nm = t.name_of(payload)
            counts[nm] = counts.get(nm, 0) + 1
        print('cpu %s %d %d' % (name or '-', cpu, len(records)))
    for nm in sorted(counts):
        print('event %s %d' % (nm, counts[nm]))
    print('lost %d' % t.lost)


if __name__ == '__main__':
    main(sys.argv[1])

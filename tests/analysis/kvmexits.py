#!/usr/bin/env python3
"""Independent count of KVM exits per host thread and reason in a trace.dat v7 file
(zlib-compressed or not), for the analysis tests to check vmscope's exit tables against.

It uses the walker in tests/common/tdwalk.py (written from trace-cmd.dat.v7(5), the kernel's
ring-buffer page layout and the events' format text only; Debian's trace-cmd cannot read zlib
trace.dat files). It reads no timestamps: it counts, per common_pid, the kvm_exit records of
each (isa, exit_reason) and the kvm_entry records. Output lines:
  exit <pid> <isa> <reason> <count>
  entry <pid> <count>
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from tdwalk import TraceDat  # noqa: E402


def main(path):
    t = TraceDat(path)
    exits, entries = {}, {}
    for _name, _cpu, records in t.cpus():
        for payload in records:
            nm = t.name_of(payload)
            if nm == 'kvm_exit':
                key = (t.field(payload, nm, 'common_pid'), t.field(payload, nm, 'isa'),
                       t.field(payload, nm, 'exit_reason'))
                exits[key] = exits.get(key, 0) + 1
            elif nm == 'kvm_entry':
                pid = t.field(payload, nm, 'common_pid')
                entries[pid] = entries.get(pid, 0) + 1
    for (pid, isa, reason), n in sorted(exits.items()):
        print('exit %d %d %d %d' % (pid, isa, reason, n))
    for pid, n in sorted(entries.items()):
        print('entry %d %d' % (pid, n))


if __name__ == '__main__':
    main(sys.argv[1])

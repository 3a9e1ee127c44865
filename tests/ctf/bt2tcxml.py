#!/usr/bin/env python3
"""babeltrace2's text of one CTF trace (stdin: `babeltrace2 --clock-cycles --no-delta DIR`)
-> a Trace Compass XML stub trace (stdout): one <event timestamp=NS name=...> per line, the
stream's cpu_id as the `cpu` field, the payload's fields as long or string fields. The
timestamps are the clock's cycles (ns at 1 GHz) without the epoch offset. Written apart from
vmscope's readers, so that the XML path checks the CTF path. The stub format has no tid:
the current thread comes from sched_switch."""
import re
import sys
from xml.sax.saxutils import quoteattr

LINE = re.compile(r'^\[(\d+)\] \S+ ([\w:]+): \{ cpu_id = (\d+) \}, (?:\{ [^{}]* \}, )?\{ ?(.*?) ?\}$')
FIELD = re.compile(r'(\w+) = ("(?:[^"\\]|\\.)*"|[^,]+)')

out = sys.stdout
out.write("<trace>\n")
n = 0
for line in sys.stdin:
    m = LINE.match(line.rstrip("\n"))
    if not m:
        sys.exit("bt2tcxml: cannot parse: " + line[:200])
    ts, name, cpu, payload = m.groups()
    out.write('<event timestamp="%d" name=%s>\n' % (int(ts), quoteattr(name)))
    out.write('<field name="cpu" value="%s" type="int" />\n' % cpu)
    for k, v in FIELD.findall(payload):
        if v.startswith('"'):
            out.write('<field name=%s value=%s type="string" />\n' % (quoteattr(k), quoteattr(v[1:-1])))
        else:
            out.write('<field name=%s value="%d" type="long" />\n' % (quoteattr(k), int(v, 0)))
    out.write("</event>\n")
    n += 1
out.write("</trace>\n")

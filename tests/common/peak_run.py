#!/usr/bin/env python3
"""peak_run.py OUT ERR CMD...: runs CMD with stdout to OUT and stderr to ERR and prints
"STATUS PEAK_KB" (ru_maxrss of the child, a sanitized build's own memory included), for the
shell tests that bound what a command may cost."""
import resource
import subprocess
import sys

out, err, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(out, "wb") as o, open(err, "wb") as e:
    st = subprocess.call(cmd, stdout=o, stderr=e)
print(st, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)

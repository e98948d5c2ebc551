#!/usr/bin/env python3
"""Runs one command and writes `wall user sys maxrss` to OUT, as `/usr/bin/time -f
"%e %U %S %M"` does (seconds; KiB), with the wall time from perf_counter around the
child rather than rounded to 10 ms (a fifth of rooftop's run on a 28 MB trace).

    time1.py OUT CMD [ARGS...]

The child's stdout is discarded, its stderr passed on; the exit status is the child's."""
import os
import subprocess
import sys
import time

if len(sys.argv) < 3:
    sys.exit(__doc__)
out, cmd = sys.argv[1], sys.argv[2:]
t = time.perf_counter()
child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
wall = time.perf_counter() - t
with open(out, "w") as f:
    f.write(f"{wall:.4f} {usage.ru_utime:.4f} {usage.ru_stime:.4f} {usage.ru_maxrss}\n")
sys.exit(os.waitstatus_to_exitcode(status))

#!/usr/bin/env python3
"""Times a short command N times with millisecond resolution (`/usr/bin/time` rounds to
10 ms, which is a fifth of a small trace's run).

    python3 bench/small/rep.py N CMD [ARGS...]

Prints the minimum and median wall time (perf_counter around the child), the median CPU
time of the child (user + sys, from getrusage) and the largest peak RSS of any run. Run
it under `taskset -c 0,1` to time two cores. Used for the small-trace rows of
docs/validation.md."""
import resource
import statistics as st
import subprocess
import sys
import time

if len(sys.argv) < 3 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
    sys.exit(__doc__)
n = int(sys.argv[1])
cmd = sys.argv[2:]
wall, cpu = [], []
for _ in range(n):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    t = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall.append(t)
    cpu.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
print(
    f"wall min {min(wall) * 1e3:.1f} med {st.median(wall) * 1e3:.1f} ms  "
    f"cpu med {st.median(cpu) * 1e3:.1f} ms  maxrss {r1.ru_maxrss / 1024:.0f} MiB (n={n})"
)

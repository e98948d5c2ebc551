#!/usr/bin/env python3
"""Interleaved A/B timing of two or more rooftop binaries on the same arguments.

    bench/ab/ab.py N BIN_A BIN_B [BIN_C ...] -- ARGS...

Runs `BIN ARGS` for every binary in turn, N rounds (A B A B ...), so that a machine
whose speed drifts (other tenants, thermal) slows every binary alike. Each run is pinned
to CPUs 0 and 1 (`taskset -c 0,1`, when taskset exists) and timed with `os.wait4`
around the child: wall time to the microsecond, user and system CPU seconds and peak RSS
as the kernel reports them. Prints one raw line per run (`run BIN wall_s user_s sys_s
peak_MiB exit`), then per binary the best and median wall, the median CPU (user + sys)
and the median peak RSS. Standard output and standard error of the runs are discarded;
a run that exits non-zero is reported in its raw line.
"""
import os
import shutil
import statistics
import subprocess
import sys
import time


def main() -> int:
    if len(sys.argv) < 4 or "--" not in sys.argv:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    sep = sys.argv.index("--")
    rounds = int(sys.argv[1])
    bins, args = sys.argv[2:sep], sys.argv[sep + 1:]
    pin = ["taskset", "-c", "0,1"] if shutil.which("taskset") else []
    runs = {b: [] for b in bins}
    for _ in range(rounds):
        for b in bins:
            t = time.perf_counter()
            p = subprocess.Popen(pin + [b] + args, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            _, status, ru = os.wait4(p.pid, 0)
            wall = time.perf_counter() - t
            code = os.waitstatus_to_exitcode(status)
            r = (wall, ru.ru_utime, ru.ru_stime, ru.ru_maxrss / 1024, code)
            runs[b].append(r)
            print(f"run {b} {r[0]:.4f} {r[1]:.3f} {r[2]:.3f} {r[3]:.0f} {code}", flush=True)
    for b in bins:
        w = sorted(r[0] for r in runs[b])
        cpu = statistics.median(r[1] + r[2] for r in runs[b])
        rss = statistics.median(r[3] for r in runs[b])
        print(f"{os.path.basename(b):>24}: wall best {w[0] * 1e3:8.1f} median "
              f"{statistics.median(w) * 1e3:8.1f} ms  CPU median {cpu * 1e3:8.1f} ms  "
              f"peak RSS median {rss:5.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

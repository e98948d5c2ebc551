#!/usr/bin/env python3
"""Resident memory of a command over time: where its peak is reached.

    bench/memory/rss_timeline.py [--every-ms N] [--step-ms M] -- CMD ARGS...

Starts CMD (standard output discarded, standard error passed through) and reads its
resident set size from /proc/PID/statm every N ms (default 2) until it exits. Prints
the peak and when it was reached, then one line per M ms (default 40): seconds since
the start and MiB resident. Linux only. The sampling adds a little load of its own: use
bench/ab/ab.py for the peak RSS the kernel reports, and this for where the curve rises.
"""
import subprocess
import sys
import time


def main() -> int:
    args = sys.argv[1:]
    every, step = 2.0, 40.0
    usage = __doc__.strip().splitlines()[2]
    while args and args[0] != "--":
        if args[0] in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        if args[0] not in ("--every-ms", "--step-ms") or len(args) < 2:
            print(usage, file=sys.stderr)
            return 2
        try:
            value = float(args[1])
        except ValueError:
            print(f"{args[0]} takes a number of milliseconds, not {args[1]!r}", file=sys.stderr)
            return 2
        if args[0] == "--every-ms":
            every = value
        else:
            step = value
        args = args[2:]
    if not args or len(args) < 2:
        print(usage, file=sys.stderr)
        return 2
    cmd = args[1:]
    page = 4096
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    samples = []
    while p.poll() is None:
        try:
            with open(f"/proc/{p.pid}/statm") as f:
                rss = int(f.read().split()[1]) * page / 2**20
            samples.append((time.perf_counter() - t0, rss))
        except (OSError, ValueError, IndexError):
            pass
        time.sleep(every / 1e3)
    if not samples:
        print("no samples: the command ended before the first", file=sys.stderr)
        return p.returncode or 1
    at, peak = max(samples, key=lambda s: s[1])
    print(f"peak {peak:.0f} MiB at {at:.3f} s (exit {p.returncode})")
    next_t = 0.0
    for t, rss in samples:
        if t >= next_t:
            print(f"{t:.3f} {rss:.0f}")
            next_t = t + step / 1e3
    return p.returncode


if __name__ == "__main__":
    sys.exit(main())

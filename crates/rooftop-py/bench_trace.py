#!/usr/bin/env python3
"""Time reading a trace from Python against the `rooftop` command, run alternately.

    python bench_trace.py TRACE [--rooftop target/release/rooftop] [--runs 5]

Each run is a fresh process, one of each in turn:
- cli:     `rooftop trace TRACE --format json -o /dev/null` (read, analyse, write JSON);
- python:  `rooftop.trace(TRACE)` then `.ops` (read, analyse, render the JSON report,
           parse it, build the DataFrame), timed inside the process with pandas
           already imported (its first import alone takes 1-2 s);
- python+: the same Python process timed from outside (interpreter start and
           `import pandas, rooftop` included).
Prints the median and best of each and the ratios python/cli. Make the trace with
`bench/trace/gen.py FIXTURE OUT --target-mb 200`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CHILD = """
import sys, time
import pandas  # imported before the clock starts, as in a notebook session
import rooftop
t0 = time.perf_counter()
r = rooftop.trace(sys.argv[1])
ops = r.ops
t1 = time.perf_counter()
print(t1 - t0)
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--rooftop", default="target/release/rooftop")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    cli, inside, outside = [], [], []
    for _ in range(a.runs):
        t0 = time.perf_counter()
        subprocess.run(
            [a.rooftop, "trace", a.trace, "--format", "json", "-o", "/dev/null"], check=True
        )
        cli.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", CHILD, a.trace], check=True, capture_output=True, text=True
        ).stdout
        outside.append(time.perf_counter() - t0)
        inside.append(float(out.strip()))
    for name, xs in (("cli", cli), ("python", inside), ("python+", outside)):
        print(f"{name:8} median {statistics.median(xs):.3f} s  best {min(xs):.3f} s  runs {xs}")
    for name, xs in (("python", inside), ("python+", outside)):
        print(
            f"{name}/cli: median {statistics.median(xs) / statistics.median(cli):.3f}  "
            f"best {min(xs) / min(cli):.3f}"
        )


if __name__ == "__main__":
    main()

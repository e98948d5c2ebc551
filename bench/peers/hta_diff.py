#!/usr/bin/env python3
"""Times Holistic Trace Analysis (HTA) comparing two Kineto traces: the two loaded, then
`TraceDiff.compare_traces` (op and kernel counts and durations, CPU and GPU), what
`rooftop diff A B` answers from the traces themselves.

    hta_diff.py CONTROL TEST

Prints one line: `load_s compare_s rows` (in-process wall times; rows of HTA's table).
HTA reads a directory of ranks, so each trace is linked into a temporary directory.
Time the whole process from outside (`/usr/bin/time`) to compare with rooftop's.
"""

import os
import sys
import tempfile
import time
from pathlib import Path


def linked(path, d):
    """`path` linked into the directory `d` under a name HTA reads."""
    name = path.name if path.name.endswith((".json", ".json.gz")) else path.name + ".json"
    os.symlink(path, Path(d) / name)
    return d


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    a, b = (Path(p).resolve() for p in sys.argv[1:3])
    from hta.common.trace import Trace
    from hta.trace_diff import LabeledTrace, TraceDiff

    with tempfile.TemporaryDirectory() as da, tempfile.TemporaryDirectory() as db:
        t0 = time.perf_counter()
        traces = []
        for label, path, d in (("control", a, da), ("test", b, db)):
            t = Trace(trace_dir=linked(path, d))
            t.parse_traces()
            traces.append(LabeledTrace(label=label, t=t))
        t1 = time.perf_counter()
        df = TraceDiff.compare_traces(traces[0], traces[1])
        t2 = time.perf_counter()
    print(f"{t1 - t0:.3f} {t2 - t1:.3f} {len(df)}")


if __name__ == "__main__":
    main()

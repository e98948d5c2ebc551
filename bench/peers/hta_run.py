#!/usr/bin/env python3
"""Times Holistic Trace Analysis (HTA) on one Kineto trace: what a user runs to get the
numbers `rooftop trace F --format json` gives (the trace loaded, then HTA's temporal
breakdown, kernel breakdown, idle-time breakdown, launch statistics, queue lengths and
the critical path of the first ProfilerStep).

    hta_run.py TRACE [--load-only]

Prints one line: `load_s analyses_s` (in-process wall times). HTA reads a directory of
ranks, so the trace is linked into a temporary directory first.
"""

import os
import sys
import tempfile
import time
from pathlib import Path


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    path = Path(sys.argv[1]).resolve()
    load_only = "--load-only" in sys.argv
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as d:
        name = path.name if path.name.endswith((".json", ".json.gz")) else path.name + ".json"
        os.symlink(path, Path(d) / name)
        t0 = time.perf_counter()
        a = TraceAnalysis(trace_dir=d)
        t1 = time.perf_counter()
        if not load_only:
            a.get_temporal_breakdown(visualize=False)
            a.get_gpu_kernel_breakdown(visualize=False)
            a.get_idle_time_breakdown(visualize=False)
            a.get_cuda_kernel_launch_stats(visualize=False)
            a.get_queue_length_summary(ranks=[0])
            try:
                a.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=0)
            except Exception as e:  # a trace without a ProfilerStep
                print(f"critical path: {e}", file=sys.stderr)
        t2 = time.perf_counter()
    print(f"{t1 - t0:.3f} {t2 - t1:.3f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Times TraceLens (AMD-AGI/TraceLens) on one Kineto trace: the trace loaded into its
tree (`TreePerfAnalyzer.from_file`), then the tables of its PyTorch perf report that
`rooftop trace --format json` also computes (GPU timeline, kernel launchers and their
summaries, kernel summary), each called when the installed version has it.

    tracelens_run.py TRACE

Prints one line: `load_s analyses_s` (in-process wall times). TraceLens is not on PyPI
(the `tracelens` package there is an unrelated project): install it from its source
first. Not run for docs/validation.md: no TraceLens source was at hand.
"""

import sys
import time


def main():
    from TraceLens import TreePerfAnalyzer

    t0 = time.perf_counter()
    perf = TreePerfAnalyzer.from_file(profile_filepath=sys.argv[1])
    t1 = time.perf_counter()
    for name in ("get_df_gpu_timeline", "get_df_kernel_launchers",
                 "get_df_kernel_launchers_summary", "get_df_kernel_launchers_summary_by_category",
                 "get_df_kernels_summary"):
        f = getattr(perf, name, None)
        if f is not None:
            f()
    t2 = time.perf_counter()
    print(f"{t1 - t0:.3f} {t2 - t1:.3f}")


if __name__ == "__main__":
    main()

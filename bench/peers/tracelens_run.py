#!/usr/bin/env python3
"""Times TraceLens (AMD-AGI/TraceLens) on one Kineto trace: the trace loaded into its
tree (`TreePerfAnalyzer.from_file`), then the tables of its PyTorch perf report that
`rooftop trace --format json` also computes: the GPU timeline, the kernel launchers
(with their kernel details), their summary by name and by category, the perf-model
table of each op category and its summary (GEMM, CONV, SDPA, element-wise...: what
`rooftop trace` puts in its category tables), and the kernel summary, each called when
the installed version has it.

    tracelens_run.py TRACE

Prints one line: `load_s analyses_s` (in-process wall times); what TraceLens itself
prints goes to stderr. TraceLens is not on PyPI (the `tracelens` package there is an
unrelated project): install it from its source first, or put a copy of its `TraceLens/`
package on PYTHONPATH. Run against a copy reconstructed from the public repository; the
commit of each of its files is in that copy's PROVENANCE.txt.
"""

import contextlib
import inspect
import sys
import time


def launchers_summary(perf, name, df_kl):
    """Recent TraceLens has the launcher summaries as static methods that take the
    launchers dataframe; older versions as methods that build it themselves."""
    if not hasattr(perf, name):
        return
    if isinstance(inspect.getattr_static(type(perf), name), staticmethod):
        getattr(perf, name)(df_kl)
    else:
        getattr(perf, name)()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    from TraceLens import TreePerfAnalyzer

    with contextlib.redirect_stdout(sys.stderr):
        t0 = time.perf_counter()
        perf = TreePerfAnalyzer.from_file(profile_filepath=sys.argv[1])
        t1 = time.perf_counter()
        perf.get_df_gpu_timeline()
        try:
            df_kl = perf.get_df_kernel_launchers(include_kernel_details=True)
        except TypeError:  # versions without kernel details
            df_kl = perf.get_df_kernel_launchers()
        launchers_summary(perf, "get_df_kernel_launchers_summary", df_kl)
        launchers_summary(perf, "get_df_kernel_launchers_summary_by_category", df_kl)
        if "op category" in df_kl and hasattr(perf, "build_df_perf_metrics"):
            for cat in sorted(set(df_kl["op category"]) - {"other"}):
                uids = df_kl[df_kl["op category"] == cat]["UID"]
                events = [perf.tree.get_UID2event(u) for u in uids]
                df = perf.build_df_perf_metrics(events, include_kernel_details=True,
                                                include_args=True)
                TreePerfAnalyzer.summarize_df_perf_metrics(df, ["mean", "median", "std",
                                                                "min", "max"])
        if hasattr(perf, "get_df_kernels_summary"):
            perf.get_df_kernels_summary()
        t2 = time.perf_counter()
    print(f"{t1 - t0:.3f} {t2 - t1:.3f}")


if __name__ == "__main__":
    main()

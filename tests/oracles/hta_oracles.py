#!/usr/bin/env python3
"""Oracle numbers from Holistic Trace Analysis (HTA) for rooftop's trace-gap tests.

Runs HTA's own analyses on our Kineto fixtures and writes what they print to
`tests/oracles/hta_numbers.json`. The numbers are committed; HTA is not a dependency of
rooftop or of its tests. Re-run to refresh (versions used are recorded in the output):

    python3 -m venv /tmp/htaenv
    /tmp/htaenv/bin/pip install HolisticTraceAnalysis==0.5.0 "pandas<3"
    /tmp/htaenv/bin/python tests/oracles/hta_oracles.py

HTA 0.5.0 fails on pandas 3 (`DataFrame.drop(axis=..., columns=...)`), hence `pandas<3`.

Settings, and why:
- `HTA_DISABLE_NS_ROUNDING=1`: HTA otherwise rounds each event's start up and its end
  down to whole microseconds (`round_down_time_stamps`), which moves every gap by up to
  2 µs. With it off HTA works on the trace's own float microseconds, which rooftop reads
  exactly (integer nanoseconds), so the numbers compare to a few ns.
- `include_last_profiler_step=True`: with two or more `ProfilerStep#` annotations HTA
  drops the CPU events of the last step and the GPU events they launched; rooftop
  analyses the whole trace.
- idle time: `consecutive_kernel_delay=30` (HTA's default; HTA documents it in ns but
  compares it with gaps in the trace's unit, microseconds).

Per trace the file holds: the idle-time breakdown per stream and category with the
interval statistics; per-kernel launch statistics (correlation, CPU duration of the
launch, GPU duration, launch delay); the queue-length summary per stream; and, where a
window is given, the critical path: its length (sum of edge weights, µs), its breakdown
by `bound_by`, and the time of its operator edges by the name of the event each is
attributed to.
"""

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"

import hta  # noqa: E402
import pandas as pd  # noqa: E402
from hta.trace_analysis import TraceAnalysis  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "kineto"
OUT = ROOT / "tests" / "oracles" / "hta_numbers.json"

# (fixture, critical-path annotation, instance) — annotation None: no critical path.
TRACES = [
    ("hta_a100_alexnet.json.gz", "[param|pytorch.model.alex_net|0|0|0|measure|forward]", 1),
    ("hta_mi250_minitoy_train.json.gz", "ProfilerStep", 0),
    ("tracelens_h100/gaunernst_bert-small-uncased__1016001.json.gz", "ProfilerStep", 0),
    ("tracelens_h100/Falconsai_nsfw_image_detection__1016002.json.gz", "ProfilerStep", 0),
    ("tracelens_mi300/gaunernst_bert-small-uncased__1016001.json.gz", "ProfilerStep", 0),
]


def num(x):
    """JSON number (None for NaN)."""
    if x is None or (isinstance(x, float) and x != x):
        return None
    return float(x)


def idle(a):
    df, stats = a.get_idle_time_breakdown(
        consecutive_kernel_delay=30, visualize=False, show_idle_interval_stats=True
    )
    rows = []
    for r in df.itertuples():
        rows.append(
            {"stream": int(r.stream), "category": r.idle_category, "idle_us": num(r.idle_time)}
        )
    st = []
    if stats is not None:
        for cat, r in stats.iterrows():
            st.append(
                {
                    "stream": int(r["stream"]),
                    "category": cat,
                    "count": int(r["count"]),
                    "mean_us": num(r["mean"]),
                    "min_us": num(r["min"]),
                    "median_us": num(r["50%"]),
                    "max_us": num(r["max"]),
                }
            )
    return rows, st


def launch(a):
    d = a.get_cuda_kernel_launch_stats(visualize=False)
    df = d.get(0)
    if df is None:
        return []
    return [
        {
            "correlation": int(r.correlation),
            "cpu_duration_us": num(r.cpu_duration),
            "gpu_duration_us": num(r.gpu_duration),
            "launch_delay_us": num(r.launch_delay),
        }
        for r in df.itertuples()
    ]


def queue(a):
    q = a.get_queue_length_summary()
    if q is None:
        return []
    out = []
    for (rank, stream), r in q.iterrows():
        r = r["queue_length"]
        out.append(
            {
                "stream": int(stream),
                "count": int(r["count"]),
                "mean": num(r["mean"]),
                "min": num(r["min"]),
                "median": num(r["50%"]),
                "max": num(r["max"]),
            }
        )
    return out


def critical_path(a, annotation, instance):
    g, ok = a.critical_path_analysis(rank=0, annotation=annotation, instance_id=instance)
    if not ok:
        return {"ok": False}
    bd = g.get_critical_path_breakdown()
    t = a.t
    df = t.get_trace(0)
    sym = t.symbol_table.get_sym_table()
    # Time of the path's operator edges by the name of the event each is attributed to.
    by_event = {}
    nodes = g.critical_path_nodes
    for u, v in zip(nodes, nodes[1:]):
        e = g.edges[u, v]["object"]
        if e.type.value != "critical_path_operator" or e.weight == 0:
            continue
        ev = g.get_event_attribution_for_edge(e)
        name = sym[int(df.loc[ev, "name"])] if ev is not None and ev in df.index else ""
        by_event[name] = by_event.get(name, 0.0) + float(e.weight)
    by = bd.groupby("bound_by").duration.sum()
    return {
        "ok": True,
        "annotation": annotation,
        "instance": instance,
        "length_us": num(bd.duration.sum()),
        "edges": len(bd),
        "bound_by_us": {k if k else "dependency": num(v) for k, v in by.items()},
        "by_event_us": by_event,
    }


def main():
    out = {
        "hta_version": getattr(hta, "__version__", None),
        "pandas_version": pd.__version__,
        "settings": {
            "HTA_DISABLE_NS_ROUNDING": "1",
            "include_last_profiler_step": True,
            "consecutive_kernel_delay": 30,
        },
        "traces": {},
    }
    try:
        from importlib.metadata import version

        out["hta_version"] = version("HolisticTraceAnalysis")
    except Exception:  # noqa: BLE001
        pass
    for fixture, ann, inst in TRACES:
        with tempfile.TemporaryDirectory() as d:
            shutil.copy(FIX / fixture, Path(d) / Path(fixture).name)
            a = TraceAnalysis(trace_dir=d, include_last_profiler_step=True)
            rows, stats = idle(a)
            entry = {
                "idle": rows,
                "idle_intervals": stats,
                "launch": launch(a),
                "queue_length": queue(a),
            }
            if ann is not None:
                entry["critical_path"] = critical_path(a, ann, inst)
            out["traces"][fixture] = entry
            print(f"{fixture}: done", file=sys.stderr)
    OUT.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()

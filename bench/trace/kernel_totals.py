#!/usr/bin/env python3
"""Compares `rooftop trace --format json`'s per-kernel totals with PyTorch's own.

Usage: kernel_totals.py TRACE ROOFTOP_JSON KERNELS_CSV [--tolerance PCT]

KERNELS_CSV is written in the same profiling run from `prof.key_averages()`: one row per
device event name with `name,count,self_device_time_total_us` (kernels, and the
profiler's `Memcpy …`/`Memset …` rows, and the GPU-side user annotations such as
`Optimizer.step#AdamW.step`, which are skipped: their names are read from TRACE's
`gpu_user_annotation` events). The script sums rooftop's `kernels` rows by name
(they are grouped by name, parent op and stream), prints every name whose count differs or
whose time differs by more than the tolerance (default 1%), then the totals. Memcpy and
memset rows are compared with the timeline's `memcpy (total)` and `memset` times. Exit 1
when anything disagrees.
"""

import csv
import gzip
import json
import sys
from collections import defaultdict


def main() -> int:
    args = sys.argv[1:]
    tol = 1.0
    if "--tolerance" in args:
        i = args.index("--tolerance")
        tol = float(args[i + 1])
        del args[i : i + 2]
    if len(args) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    opener = gzip.open if args[0].endswith(".gz") else open
    with opener(args[0], "rt", encoding="utf-8") as f:
        events = json.load(f).get("traceEvents", [])
    annotations = {e.get("name") for e in events if e.get("cat") == "gpu_user_annotation"}
    args = args[1:]
    with open(args[0], encoding="utf-8") as f:
        report = json.load(f)
    ours_t: dict[str, float] = defaultdict(float)
    ours_n: dict[str, int] = defaultdict(int)
    for k in report["kernels"]:
        ours_t[k["name"]] += k["total_us"]
        ours_n[k["name"]] += k["count"]
    theirs_t: dict[str, float] = {}
    theirs_n: dict[str, int] = {}
    copies = {"memcpy": 0.0, "memset": 0.0}
    with open(args[1], encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            name, us = row["name"], float(row["self_device_time_total_us"])
            if name in annotations:
                continue
            kind = name.split(" ", 1)[0].lower()
            if kind in copies and "(" in name:
                copies[kind] += us
                continue
            theirs_t[name] = us
            theirs_n[name] = int(row["count"])
    bad = 0
    for name in sorted(set(ours_t) | set(theirs_t)):
        a, b = ours_t.get(name, 0.0), theirs_t.get(name, 0.0)
        na, nb = ours_n.get(name, 0), theirs_n.get(name, 0)
        off = abs(a - b) / b * 100.0 if b else float("inf")
        if na != nb or off > tol:
            bad += 1
            print(f"  {name[:90]}: rooftop {na} × {a:.3f} µs, key_averages {nb} × {b:.3f} µs")
    sa, sb = sum(ours_t.values()), sum(theirs_t.values())
    print(
        f"kernels: rooftop {sum(ours_n.values())} launches {sa:.3f} µs, key_averages "
        f"{sum(theirs_n.values())} launches {sb:.3f} µs ({(sa - sb) / sb * 100.0:+.3f}%); "
        f"{len(theirs_t)} names, {bad} disagree"
    )
    tl = report["timeline"]
    for kind, ours in (("memcpy", tl["memcpy"]["time_ms"]), ("memset", tl["memset"]["time_ms"])):
        b = copies[kind]
        off = abs(ours * 1000.0 - b) / b * 100.0 if b else (0.0 if ours == 0 else float("inf"))
        bad += off > tol
        print(f"{kind}: rooftop timeline {ours * 1000.0:.3f} µs, key_averages {b:.3f} µs")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

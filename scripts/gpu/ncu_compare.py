"""One row of ncu_compare.csv (scripts/gpu-validate.sh): rooftop's event-timed median for
a kernel beside Nsight Compute's gpu__time_duration.sum (mean over the launches it
profiled) for the same kernel and size.

    python3 ncu_compare.py NCU.csv BENCH.json KERNEL CONFIG CLOCK_CONTROL
"""
import csv
import json
import sys

SCALE_US = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3,
            "s": 1e6, "second": 1e6}


def ncu_mean_us(path):
    rows = list(csv.reader(l for l in open(path, errors="replace") if l.startswith('"')))
    if not rows:
        raise SystemExit(f"{path}: no CSV rows from ncu")
    head = rows[0]
    vals = []
    if "Metric Name" in head:  # the details layout: one row per metric
        name, unit, value = (head.index(c) for c in ("Metric Name", "Metric Unit", "Metric Value"))
        for r in rows[1:]:
            if r[name] == "gpu__time_duration.sum":
                vals.append(float(r[value].replace(",", "")) * SCALE_US[r[unit]])
    else:  # the raw layout: one column per metric, units in the second row
        col = head.index("gpu__time_duration.sum")
        scale = SCALE_US[rows[1][col]]
        for r in rows[2:]:
            vals.append(float(r[col].replace(",", "")) * scale)
    if not vals:
        raise SystemExit(f"{path}: no gpu__time_duration.sum values")
    return sum(vals) / len(vals), len(vals)


def medians(o):
    if isinstance(o, dict):
        if "median_s" in o and o["median_s"] is not None:
            yield o["median_s"]
        for v in o.values():
            yield from medians(v)
    elif isinstance(o, list):
        for v in o:
            yield from medians(v)


def main(ncu_csv, bench_json, kernel, config, clock):
    ncu_us, launches = ncu_mean_us(ncu_csv)
    m = list(medians(json.load(open(bench_json))))
    if not m:
        raise SystemExit(f"{bench_json}: no median_s")
    event_us = m[0] * 1e6
    diff = (event_us - ncu_us) / ncu_us * 100
    ok = abs(diff) <= 3 if ncu_us >= 10 else "n/a (<10 us)"
    print(f"{kernel},{config},{clock},{event_us:.3f},{ncu_us:.3f},{diff:.2f},{ok}")
    print(f"{kernel} {clock}: {launches} launches profiled", file=sys.stderr)


if __name__ == "__main__":
    main(*sys.argv[1:6])

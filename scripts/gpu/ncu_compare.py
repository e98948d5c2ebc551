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


def ncu_mean_us(path, function):
    rows = list(csv.reader(l for l in open(path, errors="replace") if l.startswith('"')))
    if not rows:
        raise SystemExit(f"{path}: no CSV rows from ncu")
    head = rows[0]
    vals = []
    if "Metric Name" in head:  # the details layout: one row per metric
        name, unit, value = (head.index(c) for c in ("Metric Name", "Metric Unit", "Metric Value"))
        kname = head.index("Kernel Name")
        for r in rows[1:]:
            if r[name] == "gpu__time_duration.sum" and r[kname].split("(")[0] == function:
                vals.append(float(r[value].replace(",", "")) * SCALE_US[r[unit]])
    else:  # the raw layout: one column per metric, units in the second row
        col = head.index("gpu__time_duration.sum")
        kname = head.index("Kernel Name")
        scale = SCALE_US[rows[1][col]]
        for r in rows[2:]:
            if r[kname].split("(")[0] != function:
                continue
            vals.append(float(r[col].replace(",", "")) * scale)
    if not vals:
        raise SystemExit(f"{path}: no gpu__time_duration.sum values for {function}")
    return sum(vals) / len(vals), len(vals)


def main(ncu_csv, bench_json, kernel, config, clock):
    # rooftop's own implementation: its median and its (one) kernel function's name, the
    # third word of the launch label (`gemm [rooftop] rt_gemm_t64_f32 grid=...`).
    rec = next(r for r in json.load(open(bench_json))["results"]
               if r["implementation"]["id"] == "rooftop")
    function = rec["launches"][0]["label"].split()[2]
    event_us = rec["median_s"] * 1e6
    ncu_us, launches = ncu_mean_us(ncu_csv, function)
    diff = (event_us - ncu_us) / ncu_us * 100
    ok = abs(diff) <= 3 if ncu_us >= 10 else "n/a (<10 us)"
    csv.writer(sys.stdout, lineterminator="\n").writerow(
        [kernel, function, config, clock, f"{event_us:.3f}", f"{ncu_us:.3f}", f"{diff:.2f}", ok])
    print(f"{kernel} {clock}: {launches} launches of {function} profiled", file=sys.stderr)


if __name__ == "__main__":
    main(*sys.argv[1:6])

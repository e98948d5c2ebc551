"""The targets of the CUDA validation, from the files scripts/gpu-validate.sh wrote.

    python3 summarize.py OUTDIR

Prints one line per target: PASS / MISS (a target not met: a finding, not a broken step)
/ NONE (its inputs are missing), with the numbers it compared.
"""
import csv
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"NONE {os.path.basename(path)}: {e}")
        return None


def line(ok, text):
    print(("PASS " if ok else "MISS ") + text)


def main(out):
    bench = load(os.path.join(out, "bench.json"))
    ceil = load(os.path.join(out, "ceilings.json"))
    torch = load(os.path.join(out, "torch_reference.json"))
    ours = {}
    if bench:
        for r in bench["results"]:
            if r["implementation"].get("builtin"):
                continue
            if not r["check"].get("passed"):
                print(f"MISS {r['kernel']} {r['config']['label']}: check failed")
            if r.get("achieved_gbs") is not None:
                ours.setdefault(r["kernel"], []).append(r)
        unchecked = [r for r in bench["results"] if not r["check"].get("passed")]
        line(not unchecked, f"bench: {len(bench['results'])} results, {len(unchecked)} failed their check")
    gbs = {k: max(x["achieved_gbs"] for x in v) for k, v in ours.items()}
    if torch and "copy" in gbs:
        r = gbs["copy"] / torch["copy_gbs"]
        line(r >= 0.97, f"copy {gbs['copy']:.0f} GB/s = {r:.3f} x torch copy {torch['copy_gbs']:.0f} GB/s (target >= 0.97)")
    if torch and ceil:
        bf16 = [c["gflops"] for c in ceil.get("compute", []) if c["precision"] == "bf16" and c["variant"] == "matrix"]
        if bf16:
            r = bf16[0] / 1e3 / torch["gemm_bf16_tflops"]
            line(r >= 0.97, f"cuBLASLt bf16 8192^3 {bf16[0] / 1e3:.0f} TFLOP/s = {r:.3f} x torch.matmul "
                 f"{torch['gemm_bf16_tflops']:.0f} (target >= 0.97)")
            f32 = torch.get("gemm_bf16_fp32out_tflops")
            if f32:
                r = bf16[0] / 1e3 / f32
                line(r >= 0.97, f"cuBLASLt bf16 8192^3 (fp32 out) = {r:.3f} x torch.mm out_dtype=fp32 "
                     f"{f32:.0f} TFLOP/s (same output type; target >= 0.97)")
        else:
            print("NONE bf16 matrix ceiling: not in ceilings.json")
    if "copy" in gbs:
        for k in ("read", "write", "scale", "add", "triad"):
            if k in gbs:
                r = gbs[k] / gbs["copy"]
                line(r >= 0.9, f"{k} {gbs[k]:.0f} GB/s = {r:.3f} x copy (target >= 0.9)")
    if ceil:
        dram = [b["gbs"] for b in ceil.get("bandwidth", []) if b["level"] in ("dram", "hbm", "DRAM")]
        if dram:
            top = max(dram)
            for k in ("rmsnorm", "softmax", "layernorm"):
                if k in gbs:
                    r = gbs[k] / top
                    line(r >= 0.7, f"{k} {gbs[k]:.0f} GB/s = {r:.3f} of the measured DRAM ceiling {top:.0f} GB/s (target >= 0.7)")
            beat = {k: v for k, v in gbs.items() if v > top * 1.03}
            for k, v in beat.items():
                rows = ours[k]
                res = {x.get("residency") for x in rows}
                print(f"NOTE {k} {v:.0f} GB/s exceeds the DRAM ceiling {top:.0f} by >3% (residency {res})")
    try:
        with open(os.path.join(out, "ncu_compare.csv")) as f:
            rows = list(csv.DictReader(f))
        for r in rows:
            if r["within_3pct"] in ("True", "False"):
                line(r["within_3pct"] == "True", f"{r['kernel']} {r.get('function', '')} ({r['clock_control']}): event "
                     f"{float(r['event_us']):.1f} us vs ncu {float(r['ncu_us']):.1f} us ({r['diff_pct']}%)")
    except OSError:
        print("NONE ncu_compare.csv")
    try:
        with open(os.path.join(out, "occupancy_compare.csv")) as f:
            rows = list(csv.DictReader(f))
        bad = [r for r in rows if r["agree"] != "true"]
        line(rows and not bad, f"occupancy: {len(rows) - len(bad)} of {len(rows)} configurations agree with the driver")
    except OSError:
        print("NONE occupancy_compare.csv")


if __name__ == "__main__":
    main(sys.argv[1])

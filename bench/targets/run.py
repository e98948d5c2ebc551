#!/usr/bin/env python3
"""Every speed and memory target of the trace and counter readers, measured in one go,
with a verdict per target (the targets of issue 31; docs/validation.md records runs).

    bench/targets/run.py [ROOFTOP_BIN] [--runs N] [--dir DIR] [--only NAME,...]

ROOFTOP_BIN defaults to target/release/rooftop (built first when it is missing). The
inputs are generated once into DIR (default $BENCH_DIR or /tmp/rooftop-bench) from the
fixtures, by the generators beside this script; about 2.5 GB of files:

| name | input | command | target |
|---|---|---|---|
| small | MI300 image-classification fixture scaled to 27.5 MB | `trace F --format json` | best wall; with peers: >= 100x TraceLens |
| large | H100 image-classification fixture scaled to 1,000 MB | `trace F --format json` | <= 1.2 s, >= 500 MB/s per CPU-s, <= 1 GB RSS |
| gzip | the same, `gzip -1` (the least compressed, the slowest to inflate) | `trace F.gz --format json` | <= 1.3x the plain file's best, same runs |
| gzip9 | the same, `gzip -9`: the level PyTorch writes its `.json.gz` traces at | `trace F.gz --format json` | <= 1.3x the plain file's best, same runs |
| ranks | `bench/ranks/gen.py --ranks 8 --target-mb 100` | `trace DIR --format json` | >= 400 MB/s per CPU-s |
| xplane | the gfx950 JAX fixture x2,500 (`scale_xplane`) | `trace F --format json` | >= 200 MB/s, RSS <= 2x the file |
| nest | 100,000 strictly nested ops (`bench/nesting/gen.py`) | `trace F --format json` | <= 2 s |
| nsys | an nsys SQLite export of 1 M kernels (`bench/counters/gen.py`) | `counters F` (table) | <= 3 s, <= 500 MB RSS |

Each command runs RUNS times (default 3); the plain 1 GB trace and its gzips alternate,
so that the ratios compare runs of the same minutes. PyTorch's profiler writes a trace
named `*.json.gz` through Python's `gzip.open`, whose default level is 9; `gzip FILE`
writes level 6, which inflates about as fast as level 9 here; `gzip -1` leaves more,
shorter matches and is the slowest of the three to inflate. The host's speed in the hour is
printed first: `gzip -1` of the small trace (a program that is not rooftop, on one
core), timed before each round and at the end, so that sets taken in different hours can
be compared. Wall time is measured around the
child (perf_counter), CPU time and peak RSS are the child's rusage (RSS includes the
mapped file's pages). MB is 10^6 bytes. "MB/s per CPU-s" is the input's bytes over the
user + system seconds of the run with the least CPU time. Output goes to /dev/null.

With PEERS=1 (and TRACELENS_PY, PYTHONPATH, HTA_PY as bench/peers/run.sh reads them),
the small trace is also timed against TraceLens and HTA by bench/peers/run.sh (PEER_RUNS
runs of each tool, alternated; default 5), whose table is printed as it is.

Measure on an otherwise idle machine: on a shared host the numbers are the host's.
"""

import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MI300 = "tests/fixtures/kineto/tracelens_mi300/Falconsai_nsfw_image_detection__1016002.json.gz"
H100 = "tests/fixtures/kineto/tracelens_h100/Falconsai_nsfw_image_detection__1016002.json.gz"
JAX = "tests/fixtures/jax/amd_gfx950_te_fused_attn.xplane.pb"
NAMES = ("small", "large", "gzip", "gzip9", "ranks", "xplane", "nest", "nsys")
GZIPS = {"gzip": "-1", "gzip9": "-9"}


def sh(*cmd):
    """Runs a generator, failing loudly."""
    print("generating:", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT, stdout=sys.stderr)


def inputs(d, names):
    """The input file (or directory) of each target in `names`, generated if missing."""
    os.makedirs(d, exist_ok=True)
    f = {
        "small": os.path.join(d, "t27.json"),
        "large": os.path.join(d, "h100_1000.json"),
        "gzip": os.path.join(d, "h100_1000.json.gz"),
        "gzip9": os.path.join(d, "h100_1000_l9.json.gz"),
        "ranks": os.path.join(d, "ranks8x100"),
        "xplane": os.path.join(d, "jax_2500.xplane.pb"),
        "nest": os.path.join(d, "nest100k.json"),
        "nsys": os.path.join(d, "nsys1m.sqlite"),
    }
    # The small trace is also the host reference's input (`main`).
    need = set(names) | {"small"}
    if need & set(GZIPS):
        need.add("large")
    if "small" in need and not os.path.exists(f["small"]):
        sh("python3", "bench/trace/gen.py", MI300, f["small"], "--target-mb", "27.5")
    if "large" in need and not os.path.exists(f["large"]):
        sh("python3", "bench/trace/gen.py", H100, f["large"], "--target-mb", "1000")
    for name, level in GZIPS.items():
        if name in need and not os.path.exists(f[name]):
            print(f"generating: gzip {level} -c {f['large']} > {f[name]}", file=sys.stderr,
                  flush=True)
            with open(f[name] + ".part", "wb") as out:
                subprocess.run(["gzip", level, "-c", f["large"]], check=True, stdout=out)
            os.replace(f[name] + ".part", f[name])
    if "ranks" in need and not os.path.exists(os.path.join(f["ranks"], "rank7.json")):
        sh("python3", "bench/ranks/gen.py", f["ranks"], "--ranks", "8", "--target-mb", "100")
    if "xplane" in need and not os.path.exists(f["xplane"]):
        sh("cargo", "build", "--release", "--quiet", "-p", "rooftop-ingest",
           "--example", "scale_xplane")
        target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
        sh(os.path.join(target, "release", "examples", "scale_xplane"), JAX, f["xplane"],
           "2500")
    if "nest" in need and not os.path.exists(f["nest"]):
        sh("python3", "bench/nesting/gen.py", "100000", f["nest"], "--step", "--kernel")
    if "nsys" in need and not os.path.exists(f["nsys"]):
        sh("python3", "bench/counters/gen.py", "nsys-sqlite", "1000000", f["nsys"])
    return f


def size(path):
    """Bytes of a file, or of the files directly in a directory."""
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path)
                   if os.path.isfile(os.path.join(path, n)))
    return os.path.getsize(path)


def run1(cmd):
    """(wall s, CPU s, peak RSS in MB) of one run; exits when the command fails."""
    t = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"bench/targets: `{' '.join(cmd)}` failed (exit "
                 f"{os.waitstatus_to_exitcode(status)})")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024 / 1e6


def command(binary, name, path):
    if name == "nsys":
        return [binary, "counters", path, "-o", os.devnull]
    return [binary, "trace", path, "--format", "json", "-o", os.devnull]


def summary(runs):
    walls = sorted(r[0] for r in runs)
    return {
        "best": walls[0],
        "median": walls[len(walls) // 2],
        "cpu": min(r[1] for r in runs),
        "rss": max(r[2] for r in runs),
    }


def verdict(ok):
    return "**met**" if ok else "**not met**"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default_binary = os.path.join(ROOT, "target/release/rooftop")
    ap.add_argument("binary", nargs="?", default=default_binary)
    ap.add_argument("--runs", type=int, default=int(os.environ.get("RUNS", "3")))
    ap.add_argument("--dir", default=os.environ.get("BENCH_DIR", "/tmp/rooftop-bench"))
    ap.add_argument("--only", default=",".join(NAMES),
                    help="comma-separated targets (default: all): " + ", ".join(NAMES))
    a = ap.parse_args()
    names = [n.strip() for n in a.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in NAMES]
    if unknown:
        ap.error(f"unknown target {unknown[0]!r}; the targets are {', '.join(NAMES)}")
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    binary = os.path.abspath(a.binary)
    if not os.path.exists(binary):
        if binary != default_binary:
            ap.error(f"{binary}: no such binary")
        sh("cargo", "build", "--release", "--quiet", "-p", "rooftop-cli", "--bin", "rooftop")
    files = inputs(a.dir, names)

    runs = {n: [] for n in names}
    paired = [n for n in ("large", *GZIPS) if n in names]
    order = [n for n in names if n not in paired]
    # The host's speed this hour, by a program that is not rooftop: `gzip -1` of the small
    # trace on one core, before each round of the commands and once after them. Sets
    # taken in different hours compare through it.
    reference_cmd = ["gzip", "-1", "-c", files["small"]]
    reference = []
    for _ in range(a.runs):
        reference.append(run1(reference_cmd))
        for n in paired:  # alternated: the ratio compares the same minutes
            runs[n].append(run1(command(binary, n, files[n])))
    for n in order:
        for _ in range(a.runs):
            runs[n].append(run1(command(binary, n, files[n])))
    reference.append(run1(reference_cmd))

    load = " ".join(open("/proc/loadavg").read().split()[:3]) if os.path.exists(
        "/proc/loadavg") else "?"
    print(f"rooftop: {binary}; runs per command: {a.runs}; {os.cpu_count()} CPUs; "
          f"load average {load}")
    ref = summary(reference)
    print(f"host reference: `gzip -1 -c {os.path.basename(files['small'])}` (one core), best "
          f"{ref['best']:.3f} s, median {ref['median']:.3f} s of {len(reference)}")
    print()
    print("| target | input | wall best / median | measured | target | verdict |")
    print("|---|---|---|---|---|---|")
    s = {n: summary(r) for n, r in runs.items()}
    for n in names:
        r = s[n]
        mb = size(files[n]) / 1e6
        walls = f"{r['best']:.3f} / {r['median']:.3f} s"
        if n == "small":
            row = (f"{r['rss']:.0f} MB RSS", "≥ 100× TraceLens (PEERS=1)", "—")
        elif n == "large":
            rate = mb / r["cpu"]
            ok = r["best"] <= 1.2 and rate >= 500 and r["rss"] <= 1000
            row = (f"{rate:.0f} MB/s per CPU-s, {r['rss']:.0f} MB RSS",
                   "≤ 1.2 s, ≥ 500 MB/s per CPU-s, ≤ 1 GB", verdict(ok))
        elif n in GZIPS:
            if "large" in s:
                ratio = r["best"] / s["large"]["best"]
                row = (f"{ratio:.2f}× the plain file's best", "≤ 1.3×", verdict(ratio <= 1.3))
            else:
                row = ("—", "≤ 1.3× (needs `large` too)", "—")
        elif n == "ranks":
            rate = mb / r["cpu"]
            row = (f"{rate:.0f} MB/s per CPU-s ({r['cpu']:.2f} CPU-s)", "≥ 400",
                   verdict(rate >= 400))
        elif n == "xplane":
            rate, times = mb / r["best"], r["rss"] / mb
            row = (f"{rate:.0f} MB/s, RSS {r['rss']:.0f} MB ({times:.1f}× the file)",
                   "≥ 200 MB/s, ≤ 2×", verdict(rate >= 200 and times <= 2))
        elif n == "nest":
            row = (f"{r['rss']:.0f} MB RSS", "≤ 2 s", verdict(r["best"] <= 2))
        else:  # nsys
            row = (f"{r['rss']:.0f} MB RSS", "≤ 3 s, ≤ 500 MB",
                   verdict(r["best"] <= 3 and r["rss"] <= 500))
        print(f"| {n} | {os.path.basename(files[n])} ({mb:.1f} MB) | {walls} | "
              + " | ".join(row) + " |")
    sys.stdout.flush()
    if "small" in names and os.environ.get("PEERS") == "1":
        print()
        env = dict(os.environ, RUNS=os.environ.get("PEER_RUNS", "5"))
        subprocess.run(["bash", "bench/peers/run.sh", files["small"], binary], cwd=ROOT,
                       env=env, check=True)


if __name__ == "__main__":
    main()

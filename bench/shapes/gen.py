#!/usr/bin/env python3
"""Write a Kineto trace of N repetitions of one awkward shape: the cases where an
analysis that is linear on a training step's usual mix could turn quadratic (one
thread with N children, N threads, N distinct names, N overlapping kernels, ...).

    gen.py SHAPE N OUT
    gen.py --list

Every trace names an H100 in `deviceProperties`, so that the whole report (work
models, roofline) runs. Times are in µs, as Kineto writes them.
"""

import argparse
import json

DEVICE = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0,
          "totalGlobalMem": 85000000000, "numSms": 132}


def op(name, ts, dur, tid=1, ext=None, args=None):
    a = {} if ext is None else {"External id": ext}
    a.update(args or {})
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts,
            "dur": dur, "args": a}


def kernel(name, ts, dur, corr, stream=7):
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts,
            "dur": dur, "args": {"correlation": corr, "External id": corr, "device": 0,
                                 "stream": stream, "grid": [1, 1, 1], "block": [128, 1, 1]}}


def launch(ts, corr, tid=1):
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
            "tid": tid, "ts": ts, "dur": 2, "args": {"correlation": corr, "External id": corr}}


def distinct_kernels(n):
    """Every kernel and its op a new name (compiled Triton kernels, never repeated)."""
    for i in range(n):
        t = i * 10
        yield op(f"triton_op_{i}", t, 5, ext=i)
        yield launch(t + 1, i)
        yield kernel(f"triton_poi_fused_add_mul_{i}", t + 3, 4, i)


def gpu_only(n):
    """Kernels with no CPU side at all."""
    for i in range(n):
        yield kernel("ampere_sgemm_128x64_nn", i * 10, 8, i)


def threads(n):
    """One op on each of N threads."""
    for i in range(n):
        yield op("aten::add", i, 5, tid=i)


def flat(n):
    """One op with N children."""
    yield op("aten::big", 0, n * 10 + 10)
    for i in range(n):
        yield op("aten::add", 1 + i * 10, 5)


def same_instant(n):
    """N zero-length ops at one instant (each contains the next: a chain N deep)."""
    for _ in range(n):
        yield op("aten::empty", 100, 0)


def overlapping_kernels(n):
    """N kernels on 64 streams, each lasting as long as the whole trace."""
    for i in range(n):
        yield kernel("k", i, n, i, stream=i % 64)


def flows(n):
    """Launches linked to their kernels by `ac2g` flow events."""
    for i in range(n):
        t = i * 10
        yield op("aten::mm", t, 5, ext=i)
        yield launch(t + 1, i)
        yield {"ph": "s", "id": i, "pid": 1, "tid": 1, "ts": t + 1, "cat": "ac2g",
               "name": "ac2g"}
        yield {"ph": "f", "id": i, "pid": 0, "tid": 7, "ts": t + 3, "cat": "ac2g",
               "name": "ac2g", "bp": "e"}
        yield kernel("k", t + 3, 4, i)


def distinct_ops(n):
    """N op names, with 97 distinct shapes among them."""
    for i in range(n):
        yield op(f"aten::custom_{i}", i * 10, 5,
                 args={"Input Dims": [[i % 97 + 1, 3]], "Input type": ["float"]})


def nested_annotations(n):
    """N user annotations, each inside the one before."""
    for i in range(n):
        yield {"ph": "X", "cat": "user_annotation", "name": f"region_{i % 50}", "pid": 1,
               "tid": 1, "ts": i, "dur": 2 * (n - i)}


def memory(n):
    """N allocations and frees of 4 KiB, alternating."""
    for i in range(n):
        yield {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]",
               "pid": 1, "tid": 1, "ts": i,
               "args": {"Device Type": 1, "Device Id": 0, "Addr": 1000 + i % 1000,
                        "Bytes": 4096 if i % 2 == 0 else -4096,
                        "Total Allocated": 4096 * (i % 2), "Total Reserved": 1 << 20}}


def steps(n):
    """N profiler steps of one op and one kernel each."""
    for i in range(n):
        t = i * 20
        yield {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1,
               "tid": 1, "ts": t, "dur": 18}
        yield {"ph": "X", "cat": "gpu_user_annotation", "name": f"ProfilerStep#{i}",
               "pid": 0, "tid": 7, "ts": t + 2, "dur": 15}
        yield op("aten::mm", t + 1, 5, ext=i)
        yield launch(t + 2, i)
        yield kernel("ampere_sgemm_128x64_nn", t + 4, 4, i)


def collectives(n):
    """N all-reduces on a stream of their own, each overlapping a GEMM."""
    for i in range(n):
        t = i * 10
        yield op("record_param_comms", t, 5, ext=i,
                 args={"Collective name": "all_reduce", "In msg nelems": 1024,
                       "Out msg nelems": 1024, "dtype": "Float", "Group size": 8})
        yield launch(t + 1, i)
        yield kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", t + 3, 12, i, stream=13)
        yield kernel("ampere_sgemm_128x64_nn", t + 2, 9, 10_000_000 + i)


SHAPES = {f.__name__: f for f in (distinct_kernels, gpu_only, threads, flat, same_instant,
                                  overlapping_kernels, flows, distinct_ops,
                                  nested_annotations, memory, steps, collectives)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("shape", nargs="?", choices=sorted(SHAPES))
    ap.add_argument("n", nargs="?", type=int, help="repetitions of the shape")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--list", action="store_true", help="print the shapes and exit")
    a = ap.parse_args()
    if a.list:
        for name, f in SHAPES.items():
            print(f"{name}: {f.__doc__.split(chr(10))[0]}")
        return
    if a.shape is None or a.n is None or a.out is None:
        ap.error("SHAPE, N and OUT are required")
    with open(a.out, "w") as out:
        out.write('{"schemaVersion": 1, "deviceProperties": [')
        out.write(json.dumps(DEVICE))
        out.write('],\n"traceEvents": [\n')
        for k, ev in enumerate(SHAPES[a.shape](a.n)):
            out.write(("" if k == 0 else ",\n") + json.dumps(ev))
        out.write("\n]}\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Write a Kineto trace of N strictly nested CPU ops on one thread (worst case for
anything that walks an op's ancestors), optionally inside a ProfilerStep annotation and
with one kernel launched by the innermost op.

Op k (0 = outermost) starts at k µs and lasts 2 (N - k) + 10 µs, so op k + 1 lies
strictly inside op k.

    gen.py N OUT [--step] [--kernel]
"""

import argparse
import json


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", type=int, help="nesting depth (number of ops)")
    ap.add_argument("out")
    ap.add_argument("--step", action="store_true", help="wrap the ops in ProfilerStep#0")
    ap.add_argument("--kernel", action="store_true",
                    help="the innermost op launches one kernel")
    a = ap.parse_args()
    n = a.n
    with open(a.out, "w") as out:
        out.write('{\n  "schemaVersion": 1,\n  "traceEvents": [\n')
        first = True

        def emit(ev):
            nonlocal first
            out.write(("" if first else ",\n") + "  " + json.dumps(ev))
            first = False

        if a.step:
            emit({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1,
                  "tid": 1, "ts": 0, "dur": 2 * n + 20, "args": {}})
        for k in range(n):
            emit({"ph": "X", "cat": "cpu_op", "name": f"op{k % 17}", "pid": 1, "tid": 1,
                  "ts": k + 1, "dur": 2 * (n - k) + 10,
                  "args": {"External id": k + 1, "Input Dims": [[4, 4]],
                           "Input type": ["float"]}})
        if a.kernel:
            emit({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                  "tid": 1, "ts": n + 2, "dur": 2, "args": {"correlation": 1,
                                                            "External id": n}})
            emit({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                  "ts": n + 6, "dur": 3, "args": {"correlation": 1, "External id": n,
                                                  "device": 0, "stream": 7}})
        out.write("\n  ]\n}\n")


if __name__ == "__main__":
    main()

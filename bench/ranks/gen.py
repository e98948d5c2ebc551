#!/usr/bin/env python3
"""Synthetic multi-rank PyTorch profiler traces with planted stragglers.

Writes one Kineto trace per rank (rank<R>.json, or .json.gz with --gzip) in the layout
libkineto writes (output_json.cpp): `distributedInfo`, `baseTimeNanoseconds` (a
different clock base per rank unless --same-clock-base), `deviceProperties`,
`ProfilerStep#N` annotations, `cpu_op` / `cuda_runtime` / `kernel` events linked by
correlation ids and `ac2g` flows, and for each collective a `record_param_comms` op
whose arguments libkineto copies onto the NCCL kernel (`Collective name`,
`In msg nelems`, `Out msg nelems`, `Group size`, `dtype`, `In/Out split size`,
`Process Group Name/Description/Ranks`, `Seq`). Lists of more than 30 ranks are
truncated as PyTorch truncates them (`[0, 1, ..., 28, 1023]`).

The schedule, on a common clock, per step and per layer:
  compute: --kernels GEMM kernels of --gemm-us each; rank --straggler runs one more
           kernel of --delay-us (so it reaches every collective --delay-us late), and
           every rank a seeded random extra of up to --jitter-us;
  with --tp N: an all-reduce of --tp-msg-mb MB in each group of N consecutive ranks
           (process groups "1", "2", ..., description "tp"), bus bandwidth
           --tp-busbw-gbs;
  an all-reduce of --msg-mb MB bf16 over all ranks (group "0", "default_pg"): each
           rank's kernel starts when it is ready and ends when the last rank is ready
           plus the transfer time S * 2(n-1)/n / --busbw-gbs (NCCL-tests bus
           bandwidth), so every instance's bus bandwidth is exactly --busbw-gbs;
  with --a2a: an all_to_allv per step in which rank --hot-rank sends --hot-factor times
           more to each destination than the others.
The next layer starts when the all-reduce ends. Expected values follow from these
parameters by hand (see README.md); nothing here reads rooftop's output. The schedule
is computed first, then each rank's file is written on its own (--procs in parallel).

    gen.py OUT --ranks 8 [--steps 2 --layers 4] [--target-mb 200] [--straggler 5 --delay-us 300]
"""

import argparse
import gzip
import multiprocessing
import os
import random
import sys

DEVICE = ('{"id": %d, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045603328, '
          '"computeMajor": 9, "computeMinor": 0, "maxThreadsPerBlock": 1024, '
          '"maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32, '
          '"sharedMemPerBlock": 49152, "numSms": 132, "sharedMemPerMultiprocessor": 233472}')
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
NCCL_AR = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
NCCL_A2A = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"
BASE = 1_700_000_000_000_000_000
A2A_ELEMS = 1024


def ts(ns):
    """Kineto's `ts`: microseconds with three decimals."""
    return "%d.%03d" % (ns // 1000, ns % 1000)


def plist(v):
    """A list as PyTorch formats it for the trace: more than 30 entries are truncated."""
    v = list(v)
    if len(v) > 30:
        return "[%s, ..., %d]" % (", ".join(map(str, v[:29])), v[-1])
    return "[%s]" % ", ".join(map(str, v))


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--layers", type=int, default=4, help="all-reduces per step")
    ap.add_argument("--kernels", type=int, default=4, help="GEMM kernels before each all-reduce")
    ap.add_argument("--gemm-us", type=int, default=100)
    ap.add_argument("--msg-mb", type=float, default=16.0, help="all-reduce size, MB (10^6 bytes)")
    ap.add_argument("--busbw-gbs", type=float, default=360.0)
    ap.add_argument("--tp", type=int, default=0, help="tensor-parallel group size (0: none)")
    ap.add_argument("--tp-msg-mb", type=float, default=8.0)
    ap.add_argument("--tp-busbw-gbs", type=float, default=400.0)
    ap.add_argument("--straggler", type=int, default=None, help="rank that arrives late")
    ap.add_argument("--delay-us", type=int, default=300)
    ap.add_argument("--jitter-us", type=int, default=0, help="random extra compute per rank (seeded)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--a2a", action="store_true", help="add an all_to_allv per step")
    ap.add_argument("--hot-rank", type=int, default=0)
    ap.add_argument("--hot-factor", type=int, default=3)
    ap.add_argument("--gpus-per-node", type=int, default=8)
    ap.add_argument("--no-seq", action="store_true", help="omit `Seq` (older PyTorch)")
    ap.add_argument("--args", choices=["kernel", "op", "none"], default="kernel",
                    help="where the collective arguments are: on the kernel and the op "
                         "(PyTorch >= 2.1), on the record_param_comms op only (older), or "
                         "nowhere (kernel names only)")
    ap.add_argument("--same-clock-base", action="store_true",
                    help="one `baseTimeNanoseconds` for all ranks (tools that ignore it, such as "
                         "TraceLens, then compare start times correctly)")
    ap.add_argument("--target-mb", type=float, default=None,
                    help="grow --steps until each rank's JSON is about this size (MB)")
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--procs", type=int, default=1, help="ranks written at once")
    return ap.parse_args()


def xfer(size_bytes, n, busbw_gbs):
    """All-reduce transfer time, ns: S * 2(n-1)/n / busbw (bytes / (GB/s) = ns)."""
    return int(round(size_bytes * 2 * (n - 1) / n / busbw_gbs)) if n > 1 else 1000


def schedule(a):
    """Per step: [layers of (compute_ns per rank, tp (ready, end) per group, dp ready per
    rank, dp end)], the a2a (start, end) and the step's (start, end)."""
    n = a.ranks
    rng = random.Random(a.seed)
    gemm_ns = a.gemm_us * 1000
    nelems = int(a.msg_mb * 1e6 / 2)
    tp_nelems = int(a.tp_msg_mb * 1e6 / 2)
    dp_x = xfer(nelems * 2, n, a.busbw_gbs)
    tp_x = xfer(tp_nelems * 2, a.tp, a.tp_busbw_gbs) if a.tp else 0
    groups = [list(range(g, min(g + a.tp, n))) for g in range(0, n, a.tp)] if a.tp else []
    t = BASE + 10_000_000_000
    steps = []
    for s in range(a.steps):
        start = t
        layers = []
        for _ in range(a.layers):
            extra = [(a.delay_us * 1000 if r == a.straggler else 0)
                     + (rng.randint(0, a.jitter_us * 1000) if a.jitter_us else 0) for r in range(n)]
            compute_end = [t + a.kernels * gemm_ns + extra[r] for r in range(n)]
            tp_end = {}
            if groups:
                for gi, g in enumerate(groups):
                    tp_end[gi] = max(compute_end[r] for r in g) + tp_x
                dp_ready = [tp_end[r // a.tp] for r in range(n)]
            else:
                dp_ready = compute_end
            dp_end = max(dp_ready) + dp_x
            layers.append((extra, compute_end, tp_end, dp_ready, dp_end))
            t = dp_end
        a2a = None
        if a.a2a:
            hot_bytes = A2A_ELEMS * a.hot_factor * n * 2
            a2a = (t, t + int(hot_bytes / a.busbw_gbs) + 5000)
            t = a2a[1]
        steps.append((start, layers, a2a, t))
        t += 10_000
    return steps, groups, nelems, tp_nelems, dp_x, tp_x


def write_rank(job):
    a, r, steps, groups, nelems, tp_nelems = job
    n = a.ranks
    base = BASE + (0 if a.same_clock_base else r * 1_234_567)
    dev = r % a.gpus_per_node
    path = os.path.join(a.out, "rank%d.json%s" % (r, ".gz" if a.gzip else ""))
    f = gzip.open(path, "wt", compresslevel=1) if a.gzip else open(path, "w", buffering=1 << 20)
    group = plist(range(n))
    f.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [%s],\n' % (DEVICE % dev))
    f.write('  "distributedInfo": {"backend": "nccl", "rank": %d, "world_size": %d, '
            '"pg_count": 1, "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", '
            '"backend_config": "cuda:nccl", "pg_size": %d, "ranks": "%s"}], '
            '"nccl_version": "2.21.5"},\n' % (r, n, n, group))
    f.write('  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": %d,\n  "traceEvents": [\n  ' % base)
    out = []
    ids = [0]
    pid = 4000 + r
    gemm_ns = a.gemm_us * 1000
    dp_seq = 0
    tp_seq = 0
    gi = r // a.tp if a.tp else None
    tp_group = plist(groups[gi]) if a.tp else None

    def flush():
        if out:
            f.write(",\n  ".join(out) + ",\n  ")
            out.clear()

    for s, (start, layers, a2a, end) in enumerate(steps):
        t = start
        for extra, compute_end, tp_end, dp_ready, dp_end in layers:
            tt = t
            for dur in [gemm_ns] * a.kernels + ([extra[r]] if extra[r] else []):
                emit_gemm(out, ids, pid, base, tt, dur, dev)
                tt += dur
            if a.tp:
                tp_seq += 1
                emit_coll(out, ids, r, pid, base, compute_end[r], tp_end[gi], "allreduce", tp_nelems,
                          tp_nelems, "[]", "[]", len(groups[gi]), str(1 + gi), "tp", tp_group,
                          None if a.no_seq else tp_seq, NCCL_AR, dev, a.args)
            dp_seq += 1
            emit_coll(out, ids, r, pid, base, dp_ready[r], dp_end, "allreduce", nelems, nelems,
                      "[]", "[]", n, "0", "default_pg", group, None if a.no_seq else dp_seq,
                      NCCL_AR, dev, a.args)
            t = dp_end
            if len(out) > 4096:
                flush()
        if a2a:
            dp_seq += 1
            sends = [A2A_ELEMS * (a.hot_factor if r == a.hot_rank else 1)] * n
            recvs = [A2A_ELEMS * (a.hot_factor if q == a.hot_rank else 1) for q in range(n)]
            emit_coll(out, ids, r, pid, base, a2a[0], a2a[1], "all_to_allv", sum(sends), sum(recvs),
                      plist(sends), plist(recvs), n, "0", "default_pg", group,
                      None if a.no_seq else dp_seq, NCCL_A2A, dev, a.args)
        ids[0] += 1
        out.append('{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d", "pid": %d, '
                   '"tid": %d, "ts": %s, "dur": %s, "args": {"External id": %d}}'
                   % (s, pid, pid, ts(start - base), ts(end - start), ids[0]))
    flush()
    last = steps[-1][3] if steps else BASE
    f.write('{"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": %s}\n'
            '  ],\n  "traceName": "synthetic"\n}\n' % ts(last - base))
    f.close()
    return path


def emit_gemm(out, ids, pid, base, t, dur, dev):
    ids[0] += 1
    e = c = ids[0]
    op_ts = t - 8000
    out.append('{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": %d, "tid": %d, "ts": %s, "dur": %s, '
               '"args": {"External id": %d, "Record function id": 0, "Ev Idx": %d, '
               '"Input Dims": [[4096, 4096], [4096, 4096]], "Input type": ["c10::BFloat16", "c10::BFloat16"], '
               '"Input Strides": [[4096, 1], [4096, 1]], "Concrete Inputs": ["", ""]}}'
               % (pid, pid, ts(op_ts - base), ts(6000), e, e))
    out.append('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": %d, "tid": %d, '
               '"ts": %s, "dur": %s, "args": {"External id": %d, "cbid": 211, "correlation": %d}}'
               % (pid, pid, ts(op_ts + 1000 - base), ts(4000), e, c))
    out.append('{"ph": "X", "cat": "kernel", "name": "%s", "pid": %d, "tid": 7, "ts": %s, "dur": %s, '
               '"args": {"External id": %d, "queued": 0, "device": %d, "context": 1, "stream": 7, '
               '"correlation": %d, "registers per thread": 168, "shared memory": 213248, '
               '"blocks per SM": 0.96, "warps per SM": 3.88, "grid": [128, 1, 1], "block": [384, 1, 1], '
               '"est. achieved occupancy %%": 0}}'
               % (GEMM, dev, ts(t - base), ts(dur), e, dev, c))
    out.append('{"ph": "s", "id": %d, "pid": %d, "tid": %d, "ts": %s, "cat": "ac2g", "name": "ac2g"}'
               % (c, pid, pid, ts(op_ts + 1000 - base)))
    out.append('{"ph": "f", "id": %d, "pid": %d, "tid": 7, "ts": %s, "cat": "ac2g", "name": "ac2g", "bp": "e"}'
               % (c, dev, ts(t - base)))


def emit_coll(out, ids, r, pid, base, start, end, name, in_n, out_n, in_split, out_split, n,
              pg, desc, ranks, seq, kernel, dev, mode="kernel"):
    ids[0] += 1
    e = c = ids[0]
    op_ts = start - 20000
    seq_arg = ', "Seq": %d' % seq if seq is not None else ""
    common = ('"Collective name": "%s", "In msg nelems": %d, "Out msg nelems": %d, "Group size": %d, '
              '"dtype": "BFloat16", "In split size": "%s", "Out split size": "%s", '
              '"Process Group Name": "%s", "Process Group Description": "%s", '
              '"Process Group Ranks": "%s"%s'
              % (name, in_n, out_n, n, in_split, out_split, pg, desc, ranks, seq_arg))
    op_args = common + ', "Global rank start": 0, "Global rank stride": 1, "Rank": %d' % r
    kernel_args = common if mode == "kernel" else '"queued": 0'
    if mode == "none":
        op_args = '"Rank": %d' % r
    out.append('{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": %d, "tid": %d, '
               '"ts": %s, "dur": %s, "args": {"External id": %d, "Record function id": 0, "Ev Idx": %d, '
               '%s}}'
               % (pid, pid, ts(op_ts - base), ts(15000), e, e, op_args))
    out.append('{"ph": "X", "cat": "cpu_op", "name": "nccl:%s", "pid": %d, "tid": %d, "ts": %s, '
               '"dur": %s, "args": {"External id": %d, "Record function id": 0, "Ev Idx": %d}}'
               % ("all_reduce" if name == "allreduce" else name, pid, pid, ts(op_ts + 1000 - base),
                  ts(12000), e, e))
    out.append('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", "pid": %d, "tid": %d, '
               '"ts": %s, "dur": %s, "args": {"External id": %d, "cbid": 430, "correlation": %d}}'
               % (pid, pid, ts(op_ts + 2000 - base), ts(8000), e, c))
    out.append('{"ph": "X", "cat": "kernel", "name": "%s", "pid": %d, "tid": 20, "ts": %s, "dur": %s, '
               '"args": {"External id": %d, "queued": 0, "device": %d, "context": 1, "stream": 20, '
               '"correlation": %d, "registers per thread": 96, "shared memory": 0, "grid": [24, 1, 1], '
               '"block": [640, 1, 1], %s}}'
               % (kernel, dev, ts(start - base), ts(end - start), e, dev, c, kernel_args))
    out.append('{"ph": "s", "id": %d, "pid": %d, "tid": %d, "ts": %s, "cat": "ac2g", "name": "ac2g"}'
               % (c, pid, pid, ts(op_ts + 2000 - base)))
    out.append('{"ph": "f", "id": %d, "pid": %d, "tid": 20, "ts": %s, "cat": "ac2g", "name": "ac2g", "bp": "e"}'
               % (c, dev, ts(start - base)))


def main():
    a = parse()
    if a.target_mb:
        # About 1.24 kB of JSON per GEMM kernel (op, launch, kernel, flows) and 1.78 kB
        # per collective (measured); grow the step count to reach the target.
        colls = 1 + (1 if a.tp else 0)
        per_step = a.layers * (a.kernels * 1240 + colls * 1780) + 150
        a.steps = max(1, int(a.target_mb * 1e6 / per_step))
    os.makedirs(a.out, exist_ok=True)
    steps, groups, nelems, tp_nelems, dp_x, tp_x = schedule(a)
    jobs = [(a, r, steps, groups, nelems, tp_nelems) for r in range(a.ranks)]
    if a.procs > 1:
        with multiprocessing.Pool(a.procs) as pool:
            for _ in pool.imap_unordered(write_rank, jobs):
                pass
    else:
        for j in jobs:
            write_rank(j)
    sys.stderr.write("wrote %d ranks x %d steps x %d layers to %s (all-reduce transfer %d ns%s)\n"
                     % (a.ranks, a.steps, a.layers, a.out, dp_x,
                        ", tp %d ns" % tp_x if a.tp else ""))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Synthetic multi-rank PyTorch profiler traces with planted stragglers.

Writes one Kineto trace per rank (rank<R>.json, or .json.gz with --gzip) in the layout
libkineto writes (output_json.cpp): `distributedInfo`, `baseTimeNanoseconds` (a
different clock base per rank), `deviceProperties`, `ProfilerStep#N` annotations,
`cpu_op` / `cuda_runtime` / `kernel` events linked by correlation ids and `ac2g`
flows, and for each collective a `record_param_comms` op whose arguments libkineto
copies onto the NCCL kernel (`Collective name`, `In msg nelems`, `Out msg nelems`,
`Group size`, `dtype`, `Process Group Name/Description/Ranks`, `Seq`).

The schedule, on a common clock, per step and per layer:
  compute: --kernels GEMM kernels of --gemm-us each (rank --straggler adds one more
           kernel of --delay-us: it reaches every collective --delay-us late);
  all-reduce of --msg-mb MB bf16 over all ranks: each rank's kernel starts when its
           compute ends and ends when the last rank's started plus the transfer time
           S * 2(n-1)/n / --busbw-gbs (NCCL-tests bus bandwidth), so the bus bandwidth
           of every instance is exactly --busbw-gbs;
  with --a2a: an all_to_allv per step in which rank --hot-rank sends --hot-factor times
           more to each destination than the others.
The next layer starts when the collective ends. Expected values follow from these
parameters by hand (see README.md); nothing here reads rooftop's output.

    gen.py OUT --ranks 8 [--steps 2 --layers 4] [--target-mb 200] [--straggler 5 --delay-us 300]
"""

import argparse
import gzip
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


def ts(ns):
    """Kineto's `ts`: microseconds with three decimals."""
    return "%d.%03d" % (ns // 1000, ns % 1000)


class Writer:
    def __init__(self, path, gz):
        self.f = gzip.open(path, "wt", compresslevel=1) if gz else open(path, "w")
        self.n = 0
        self.parts = []

    def ev(self, text):
        self.parts.append(text)
        if len(self.parts) >= 4096:
            self.flush()

    def flush(self):
        if self.parts:
            self.f.write(",\n  ".join(self.parts) + ",\n  ")
            self.parts = []

    def close(self, tail):
        self.flush()
        self.f.write(tail)
        self.f.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--layers", type=int, default=4, help="all-reduces per step")
    ap.add_argument("--kernels", type=int, default=4, help="GEMM kernels before each all-reduce")
    ap.add_argument("--gemm-us", type=int, default=100)
    ap.add_argument("--msg-mb", type=float, default=16.0, help="all-reduce size, MB (10^6 bytes)")
    ap.add_argument("--busbw-gbs", type=float, default=360.0)
    ap.add_argument("--straggler", type=int, default=None, help="rank that arrives late")
    ap.add_argument("--delay-us", type=int, default=300)
    ap.add_argument("--jitter-us", type=int, default=0, help="random extra compute per rank (seeded)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--a2a", action="store_true", help="add an all_to_allv per step")
    ap.add_argument("--hot-rank", type=int, default=0)
    ap.add_argument("--hot-factor", type=int, default=3)
    ap.add_argument("--gpus-per-node", type=int, default=8)
    ap.add_argument("--no-seq", action="store_true", help="omit `Seq` (older PyTorch)")
    ap.add_argument("--same-clock-base", action="store_true",
                    help="one `baseTimeNanoseconds` for all ranks (tools that ignore it, such as "
                         "TraceLens, then compare start times correctly)")
    ap.add_argument("--target-mb", type=float, default=None,
                    help="grow --steps until each rank's JSON is about this size (MB)")
    ap.add_argument("--gzip", action="store_true")
    a = ap.parse_args()

    n = a.ranks
    if a.target_mb:
        # About 2.3 kB of JSON per GEMM kernel (op, launch, kernel, flows) and 3.4 kB per
        # collective; grow the step count to reach the target.
        per_step = a.layers * (a.kernels * 2300 + 3400) + (1 if a.straggler is not None else 0)
        a.steps = max(1, int(a.target_mb * 1e6 / per_step))
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random(a.seed)
    nelems = int(a.msg_mb * 1e6 / 2)
    size_bytes = nelems * 2
    xfer_ns = int(round(size_bytes * 2 * (n - 1) / n / a.busbw_gbs))  # bytes / (GB/s) = ns
    group = "[%s]" % ", ".join(str(r) for r in range(n))
    # Common-clock schedule: ready[r] for every collective, then each rank's events.
    # Epoch nanoseconds, 10 s after the latest process's clock base: each rank's `ts`
    # is relative to its own base, as libkineto writes it.
    t0 = 1_700_000_000_000_000_000 + 10_000_000_000
    gemm_ns = a.gemm_us * 1000
    jitter = [[[rng.randint(0, a.jitter_us * 1000) if a.jitter_us else 0 for _ in range(a.layers)]
               for _ in range(a.steps)] for _ in range(n)]
    a2a_elems = 1024

    writers = []
    for r in range(n):
        name = "rank%d.json%s" % (r, ".gz" if a.gzip else "")
        w = Writer(os.path.join(a.out, name), a.gzip)
        # Each process has its own clock base, unless --same-clock-base.
        base = 1_700_000_000_000_000_000 + (0 if a.same_clock_base else r * 1_234_567)
        w.base = base
        dev = r % a.gpus_per_node
        w.f.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [%s],\n' % (DEVICE % dev))
        w.f.write('  "distributedInfo": {"backend": "nccl", "rank": %d, "world_size": %d, '
                  '"pg_count": 1, "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", '
                  '"backend_config": "cuda:nccl", "pg_size": %d, "ranks": "%s"}], '
                  '"nccl_version": "2.21.5"},\n' % (r, n, n, group if n <= 30 else "..."))
        w.f.write('  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": %d,\n  "traceEvents": [\n  ' % base)
        writers.append(w)

    ids = [0] * n  # per-rank correlation / external id counter
    pid = [4000 + r for r in range(n)]
    t = t0
    seq = 0
    for s in range(a.steps):
        step_start = t
        step_events = [[] for _ in range(n)]
        collectives = []
        for l in range(a.layers):
            seq += 1
            ready = []
            for r in range(n):
                late = a.delay_us * 1000 if r == a.straggler else 0
                ready.append(t + a.kernels * gemm_ns + late + jitter[r][s][l])
            start_last = max(ready)
            end = start_last + xfer_ns
            collectives.append(("allreduce", seq, ready, end, nelems, nelems, "[]", NCCL_AR))
            for r in range(n):
                w = writers[r]
                tt = t
                kernels = [gemm_ns] * a.kernels
                if r == a.straggler:
                    kernels.append(a.delay_us * 1000)
                if jitter[r][s][l]:
                    kernels.append(jitter[r][s][l])
                for dur in kernels:
                    emit_gemm(w, r, pid[r], ids, tt, dur, r % a.gpus_per_node)
                    tt += dur
                emit_coll(w, r, pid[r], ids, ready[r], end, "allreduce", nelems, nelems,
                          "[]", "[]", n, group, None if a.no_seq else seq, NCCL_AR,
                          r % a.gpus_per_node)
            t = end
        if a.a2a:
            seq += 1
            # Rank `hot` sends hot_factor x a2a_elems to each destination, others a2a_elems.
            sends = [[a2a_elems * (a.hot_factor if r == a.hot_rank else 1)] * n for r in range(n)]
            recvs = [[sends[q][r] for q in range(n)] for r in range(n)]
            start = t
            # The all-to-all lasts as long as its largest transfer: time ∝ the hot rank's bytes.
            a2a_ns = int(sum(sends[a.hot_rank]) * 2 / a.busbw_gbs) + 5000
            for r in range(n):
                emit_coll(writers[r], r, pid[r], ids, start, start + a2a_ns, "all_to_allv",
                          sum(sends[r]), sum(recvs[r]),
                          "[%s]" % ", ".join(map(str, sends[r])),
                          "[%s]" % ", ".join(map(str, recvs[r])),
                          n, group, None if a.no_seq else seq, NCCL_A2A, r % a.gpus_per_node)
            t = start + a2a_ns
        for r in range(n):
            w = writers[r]
            w.ev('{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d", "pid": %d, '
                 '"tid": %d, "ts": %s, "dur": %s, "args": {"External id": %d}}'
                 % (s, pid[r], pid[r], ts(step_start - w.base + 0), ts(t - step_start), next_id(ids, r)))
        t += 10_000

    for w in writers:
        w.close('{"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": %s}\n'
                '  ],\n  "traceName": "synthetic"\n}\n' % ts(t - w.base))
    sys.stderr.write("wrote %d ranks x %d steps x %d layers to %s (transfer %d ns per all-reduce)\n"
                     % (n, a.steps, a.layers, a.out, xfer_ns))


def next_id(ids, r):
    ids[r] += 1
    return ids[r]


def emit_gemm(w, r, pid, ids, t, dur, dev):
    e = next_id(ids, r)
    c = e
    tid = pid
    op_ts = t - 8000
    w.ev('{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": %d, "tid": %d, "ts": %s, "dur": %s, '
         '"args": {"External id": %d, "Record function id": 0, "Ev Idx": %d, '
         '"Input Dims": [[4096, 4096], [4096, 4096]], "Input type": ["c10::BFloat16", "c10::BFloat16"], '
         '"Input Strides": [[4096, 1], [4096, 1]], "Concrete Inputs": ["", ""]}}'
         % (pid, tid, ts(op_ts - w.base), ts(6000), e, e))
    w.ev('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": %d, "tid": %d, '
         '"ts": %s, "dur": %s, "args": {"External id": %d, "cbid": 211, "correlation": %d}}'
         % (pid, tid, ts(op_ts + 1000 - w.base), ts(4000), e, c))
    w.ev('{"ph": "X", "cat": "kernel", "name": "%s", "pid": %d, "tid": 7, "ts": %s, "dur": %s, '
         '"args": {"External id": %d, "queued": 0, "device": %d, "context": 1, "stream": 7, '
         '"correlation": %d, "registers per thread": 168, "shared memory": 213248, '
         '"blocks per SM": 0.96, "warps per SM": 3.88, "grid": [128, 1, 1], "block": [384, 1, 1], '
         '"est. achieved occupancy %%": 0}}'
         % (GEMM, dev, ts(t - w.base), ts(dur), e, dev, c))
    w.ev('{"ph": "s", "id": %d, "pid": %d, "tid": %d, "ts": %s, "cat": "ac2g", "name": "ac2g"}'
         % (c, pid, tid, ts(op_ts + 1000 - w.base)))
    w.ev('{"ph": "f", "id": %d, "pid": %d, "tid": 7, "ts": %s, "cat": "ac2g", "name": "ac2g", "bp": "e"}'
         % (c, dev, ts(t - w.base)))


def emit_coll(w, r, pid, ids, start, end, name, in_n, out_n, in_split, out_split, n, group,
              seq, kernel, dev):
    e = next_id(ids, r)
    c = e
    tid = pid
    op_ts = start - 20000
    seq_arg = ', "Seq": %d' % seq if seq is not None else ""
    common = ('"Collective name": "%s", "In msg nelems": %d, "Out msg nelems": %d, "Group size": %d, '
              '"dtype": "BFloat16", "In split size": "%s", "Out split size": "%s", '
              '"Process Group Name": "0", "Process Group Description": "default_pg", '
              '"Process Group Ranks": "%s"%s'
              % (name, in_n, out_n, n, in_split, out_split, group, seq_arg))
    w.ev('{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": %d, "tid": %d, '
         '"ts": %s, "dur": %s, "args": {"External id": %d, "Record function id": 0, "Ev Idx": %d, '
         '%s, "Global rank start": 0, "Global rank stride": 1, "Rank": %d}}'
         % (pid, tid, ts(op_ts - w.base), ts(15000), e, e, common, r))
    w.ev('{"ph": "X", "cat": "cpu_op", "name": "nccl:%s", "pid": %d, "tid": %d, "ts": %s, '
         '"dur": %s, "args": {"External id": %d, "Record function id": 0, "Ev Idx": %d}}'
         % ("all_reduce" if name == "allreduce" else name, pid, tid, ts(op_ts + 1000 - w.base),
            ts(12000), e, e))
    w.ev('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", "pid": %d, "tid": %d, '
         '"ts": %s, "dur": %s, "args": {"External id": %d, "cbid": 430, "correlation": %d}}'
         % (pid, tid, ts(op_ts + 2000 - w.base), ts(8000), e, c))
    w.ev('{"ph": "X", "cat": "kernel", "name": "%s", "pid": %d, "tid": 20, "ts": %s, "dur": %s, '
         '"args": {"External id": %d, "queued": 0, "device": %d, "context": 1, "stream": 20, '
         '"correlation": %d, "registers per thread": 96, "shared memory": 0, "grid": [24, 1, 1], '
         '"block": [640, 1, 1], %s}}'
         % (kernel, dev, ts(start - w.base), ts(end - start), e, dev, c, common))
    w.ev('{"ph": "s", "id": %d, "pid": %d, "tid": %d, "ts": %s, "cat": "ac2g", "name": "ac2g"}'
         % (c, pid, tid, ts(op_ts + 2000 - w.base)))
    w.ev('{"ph": "f", "id": %d, "pid": %d, "tid": 20, "ts": %s, "cat": "ac2g", "name": "ac2g", "bp": "e"}'
         % (c, dev, ts(start - w.base)))


if __name__ == "__main__":
    main()

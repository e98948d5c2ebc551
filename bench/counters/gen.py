#!/usr/bin/env python3
"""Writes large synthetic counter files in the documented layouts, to time
`rooftop counters` at scale (the real fixtures are a few KB):

  gen.py ncu-raw N OUT.csv      Nsight Compute --csv --page raw: N launches, ~400 metric
                                columns (the names of `--set full` style ids), units row
  gen.py ncu-details N OUT.csv  Nsight Compute --csv --page details: the real A100
                                export tests/fixtures/ncu/clima_a100_details_excerpt.csv
                                (82 rows of one launch, grouped digits, auto-scaled
                                units) repeated for launch IDs 0..N-1
  gen.py rocprofv3 N OUTDIR     rocprofv3 kernel_trace.csv + counter_collection.csv
                                (long format: 12 counters per dispatch)
  gen.py nsys-sqlite N OUT.sqlite  an `nsys export --type sqlite` database with the
                                schema of tests/fixtures/nsys/sqlite/make_nsys_sqlite.py:
                                N kernels, N launching CUDA API calls, N/10 memcpys and
                                one NVTX range per 20 kernels, nested in one per 1000
  gen.py rocpd N OUT.db         a rocprofv3 rocpd database with the schema of
                                tests/fixtures/rocprof/rocpd/make_rocpd.py: N dispatches,
                                each with its event, its hipLaunchKernel region (and its
                                event) and 8 counters (two of them in 16 instances: 38
                                value rows), N/10 copies, a ROCTX range per 20 dispatches
                                nested in one per 1000
  gen.py rocpd-trace N OUT.db   the same without counters (a tracing run)

The values are random but consistent (bytes >= 0, percentages in 0..100); the files are
for timing only, never for expected values.
"""
import os
import random
import sys

random.seed(1)
KERNELS = [
    "void gemm_kernel<float, 128, 128, 8>(int, int, int, float const*, float const*, float*)",
    "void rmsnorm_kernel<__nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16 const*, int)",
    "void softmax_warp_forward<float, float, float, 10, false>(float*, float const*, int)",
    "elementwise_kernel_with_index",
    "ampere_sgemm_128x64_nn",
]
NCU_FIXED = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context",
             "Stream", "Block Size", "Grid Size", "Device", "CC"]
NCU_KNOWN = [
    ("gpu__time_duration.sum", "nsecond"),
    ("dram__bytes_read.sum", "byte"),
    ("dram__bytes_write.sum", "byte"),
    ("lts__t_bytes.sum", "byte"),
    ("l1tex__t_bytes.sum", "byte"),
    ("lts__t_sector_hit_rate.pct", "%"),
    ("l1tex__t_sector_hit_rate.pct", "%"),
    ("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", "inst"),
    ("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", "inst"),
    ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "%"),
    ("sm__maximum_warps_per_active_cycle_pct", "%"),
    ("launch__waves_per_multiprocessor", ""),
]


def q(s):
    return '"' + s.replace('"', '""') + '"'


def ncu_raw(n, out):
    filler = [(f"sm__metric_{i:03d}.avg.pct_of_peak_sustained_elapsed", "%") for i in range(390)]
    cols = NCU_KNOWN + filler
    with open(out, "w") as f:
        f.write(",".join(q(c) for c in NCU_FIXED + [c for c, _ in cols]) + "\n")
        f.write(",".join(q("") for _ in NCU_FIXED) + "," + ",".join(q(u) for _, u in cols) + "\n")
        for i in range(n):
            k = KERNELS[i % len(KERNELS)]
            fixed = [str(i), "4242", "python3", "host", k, "1", "7", "(256, 1, 1)",
                     f"({random.randint(1, 4096)}, 1, 1)", "0", "9.0"]
            vals = []
            for c, u in cols:
                if u == "%":
                    vals.append(f"{random.uniform(0, 100):.2f}")
                elif u == "nsecond":
                    vals.append(str(random.randint(2_000, 2_000_000)))
                elif u == "":
                    vals.append(f"{random.uniform(0.1, 20):.2f}")
                else:
                    vals.append(str(random.randint(0, 1 << 28)))
            f.write(",".join(q(v) for v in fixed + vals) + "\n")


def rocprofv3(n, outdir):
    os.makedirs(outdir, exist_ok=True)
    counters = ["SQ_WAVES", "GRBM_GUI_ACTIVE", "FETCH_SIZE", "WRITE_SIZE", "TCC_HIT",
                "TCC_MISS", "SQ_INSTS_VALU_ADD_F32", "SQ_INSTS_VALU_MUL_F32",
                "SQ_INSTS_VALU_FMA_F32", "SQ_INSTS_VALU_TRANS_F32", "SQ_LDS_BANK_CONFLICT",
                "SQ_LDS_IDX_ACTIVE"]
    with open(os.path.join(outdir, "1_kernel_trace.csv"), "w") as kt, \
            open(os.path.join(outdir, "1_counter_collection.csv"), "w") as cc:
        kt.write("Kind,Agent_Id,Queue_Id,Stream_Id,Thread_Id,Dispatch_Id,Kernel_Id,Kernel_Name,"
                 "Correlation_Id,Start_Timestamp,End_Timestamp,LDS_Block_Size,Scratch_Size,"
                 "VGPR_Count,Accum_VGPR_Count,SGPR_Count,Workgroup_Size_X,Workgroup_Size_Y,"
                 "Workgroup_Size_Z,Grid_Size_X,Grid_Size_Y,Grid_Size_Z\n")
        cc.write("Correlation_Id,Dispatch_Id,Agent_Id,Queue_Id,Process_Id,Thread_Id,Grid_Size,"
                 "Kernel_Id,Kernel_Name,Workgroup_Size,LDS_Block_Size,Scratch_Size,VGPR_Count,"
                 "Accum_VGPR_Count,SGPR_Count,Counter_Name,Counter_Value,Start_Timestamp,"
                 "End_Timestamp\n")
        t = 10**12
        for i in range(1, n + 1):
            k = KERNELS[i % len(KERNELS)]
            dur = random.randint(2_000, 2_000_000)
            grid = 256 * random.randint(1, 4096)
            kt.write(f'"KERNEL_DISPATCH","Agent 4",1,0,77,{i},{i % 5},{q(k)},{i},{t},{t + dur},'
                     f"1024,0,64,0,32,256,1,1,{grid},1,1\n")
            for c in counters:
                cc.write(f'{i},{i},"Agent 4",1,77,77,{grid},{i % 5},{q(k)},256,1024,0,64,0,32,'
                         f'"{c}",{random.uniform(0, 1e7):.6f},{t},{t + dur}\n')
            t += dur + 1000


def nsys_sqlite(n, out):
    import importlib.util
    import sqlite3
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        "make_nsys_sqlite",
        os.path.join(here, "../../tests/fixtures/nsys/sqlite/make_nsys_sqlite.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    if os.path.exists(out):
        os.remove(out)
    db = sqlite3.connect(out)
    db.executescript(m.SCHEMA)
    db.executemany("INSERT INTO StringIds VALUES (?, ?)",
                   [(i + 1, k) for i, k in enumerate(KERNELS)] + [(100, "cudaLaunchKernel_v7000"),
                                                                 (101, "step"), (102, "layer")])
    db.execute("INSERT INTO TARGET_INFO_GPU (id, name, smCount, computeMajor, computeMinor) "
               "VALUES (0, 'NVIDIA H100 80GB HBM3', 132, 9, 0)")
    tid = m.gtid(4242, 4243)
    pid = m.gtid(4242, 0)
    t = 1_000_000
    kernels, runtime, copies, nvtx = [], [], [], []
    for i in range(n):
        if i % 1000 == 0:
            nvtx.append((t, t + 1000 * 30_000, 59, None, tid, 101))
        if i % 20 == 0:
            nvtx.append((t, t + 20 * 30_000, 59, None, tid, 102))
        dur = random.randint(2_000, 20_000)
        kernels.append((t + 5_000, t + 5_000 + dur, 0, 1, 7, i, pid, 1 + i % len(KERNELS),
                        1 + i % len(KERNELS), 64, random.randint(1, 4096), 1, 1, 256, 1, 1, 0,
                        16384, 0, 0, i))
        runtime.append((t, t + 4_000, 1, tid, i, 100, 0))
        if i % 10 == 0:
            copies.append((t, t + 10_000, 0, 1, 7, n + i, pid, 1 << 20, 1))
        t += 30_000
    db.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, "
        "correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY, "
        "gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, "
        "localMemoryPerThread, localMemoryTotal, gridId) VALUES "
        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", kernels)
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, "
                   "correlationId, nameId, returnValue) VALUES (?, ?, ?, ?, ?, ?, ?)", runtime)
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, "
                   "streamId, correlationId, globalPid, bytes, copyKind) VALUES "
                   "(?, ?, ?, ?, ?, ?, ?, ?, ?)", copies)
    db.executemany("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId) "
                   "VALUES (?, ?, ?, ?, ?, ?)", nvtx)
    db.commit()
    db.close()


def rocpd(n, out, with_counters=True):
    import importlib.util
    import json
    import sqlite3
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        "make_rocpd", os.path.join(here, "../../tests/fixtures/rocprof/rocpd/make_rocpd.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    if os.path.exists(out):
        os.remove(out)
    db = sqlite3.connect(out)
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    db.executescript(m.fill(m.TABLES))
    for v in m.VIEWS:
        db.execute(f"CREATE VIEW IF NOT EXISTS `{v}` AS SELECT * FROM `{v}_{m.UUID}`")
    t = lambda name: f"`{name}_{m.UUID}`"
    nid, pid, tid = m.NID, m.PID, m.TID
    db.executemany(f"INSERT INTO {t('rocpd_metadata')} (tag, value) VALUES (?, ?)",
                   [("schema_version", "3"), ("uuid", "_" + m.UUID), ("guid", m.GUID)])
    strings = ["HIP_RUNTIME_API_EXT", "MARKER_CORE_API", "KERNEL_DISPATCH", "MEMORY_COPY",
               "hipLaunchKernel", "step", "layer", "MEMORY_COPY_HOST_TO_DEVICE"] + KERNELS
    db.executemany(f"INSERT INTO {t('rocpd_string')} (id, string) VALUES (?, ?)",
                   list(enumerate(strings, start=1)))
    ext = {"cu_count": 304, "simd_per_cu": 4, "wave_front_size": 64, "max_waves_per_cu": 32,
           "max_engine_clk_fcompute": 2100, "num_xcc": 8}
    db.execute(f"INSERT INTO {t('rocpd_info_agent')} (id, nid, pid, type, name, model_name, "
               "product_name, extdata) VALUES (1, ?, ?, 'GPU', 'gfx942', 'aqua_vanjaram', "
               "'AMD Instinct MI300X', ?)", (nid, pid, json.dumps(ext)))
    db.executemany(
        f"INSERT INTO {t('rocpd_info_kernel_symbol')} (id, nid, pid, code_object_id, "
        "kernel_name, display_name, sgpr_count, arch_vgpr_count, accum_vgpr_count) VALUES "
        "(?, ?, ?, 1, ?, ?, 32, 64, 0)",
        [(i + 1, nid, pid, k + ".kd", k) for i, k in enumerate(KERNELS)])
    pmc = [("SQ_WAVES", 1), ("SQ_INSTS_VALU", 1), ("SQ_INSTS_SALU", 1), ("GRBM_GUI_ACTIVE", 1),
           ("FETCH_SIZE", 1), ("WRITE_SIZE", 1), ("TCC_HIT", 16), ("TCC_MISS", 16)]
    db.executemany(
        f"INSERT INTO {t('rocpd_info_pmc')} (id, nid, pid, agent_id, target_arch, name, symbol) "
        "VALUES (?, ?, ?, 1, 'GPU', ?, ?)",
        [(i + 1, nid, pid, name, name) for i, (name, _) in enumerate(pmc)])
    events, regions, kernels, values, copies = [], [], [], [], []
    ev, tm = 0, 1_000_000
    for i in range(n):
        if i % 1000 == 0:
            ev += 1
            events.append((ev, 2, 0))
            regions.append((nid, pid, tid, tm, tm + 1000 * 30_000, 6, ev))
        if i % 20 == 0:
            ev += 1
            events.append((ev, 2, 0))
            regions.append((nid, pid, tid, tm, tm + 20 * 30_000, 7, ev))
        stack = 10 + i
        ev += 1
        events.append((ev, 1, stack))
        regions.append((nid, pid, tid, tm, tm + 4_000, 5, ev))
        ev += 1
        events.append((ev, 3, stack))
        k = i % len(KERNELS)
        dur = random.randint(2_000, 20_000)
        kernels.append((nid, pid, tid, k + 1, i + 1, tm + 5_000, tm + 5_000 + dur, 16384,
                        256, random.randint(1, 4096) * 256, ev))
        if with_counters:
            for j, (_, inst) in enumerate(pmc):
                for _ in range(inst):
                    # FETCH_SIZE and WRITE_SIZE are in KiB (up to 10 MiB), the others counts.
                    top = 10_000 if j in (4, 5) else 10_000_000
                    values.append((ev, j + 1, float(random.randint(0, top))))
        if i % 10 == 0:
            ev += 1
            events.append((ev, 4, 0))
            copies.append((nid, pid, tid, tm, tm + 10_000, 8, 1 << 20, ev))
        tm += 30_000
    db.executemany(f"INSERT INTO {t('rocpd_event')} (id, category_id, stack_id) "
                   "VALUES (?, ?, ?)", events)
    db.executemany(f"INSERT INTO {t('rocpd_region')} (nid, pid, tid, start, end, name_id, "
                   "event_id) VALUES (?, ?, ?, ?, ?, ?, ?)", regions)
    db.executemany(
        f"INSERT INTO {t('rocpd_kernel_dispatch')} (nid, pid, tid, agent_id, kernel_id, "
        "dispatch_id, queue_id, stream_id, start, end, private_segment_size, "
        "group_segment_size, workgroup_size_x, workgroup_size_y, workgroup_size_z, "
        "grid_size_x, grid_size_y, grid_size_z, event_id) VALUES "
        "(?, ?, ?, 1, ?, ?, 1, 0, ?, ?, 0, ?, ?, 1, 1, ?, 1, 1, ?)", kernels)
    db.executemany(f"INSERT INTO {t('rocpd_pmc_event')} (event_id, pmc_id, value) "
                   "VALUES (?, ?, ?)", values)
    db.executemany(f"INSERT INTO {t('rocpd_memory_copy')} (nid, pid, tid, start, end, name_id, "
                   "size, event_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", copies)
    db.commit()
    db.close()


def ncu_details(n, out):
    here = os.path.dirname(os.path.abspath(__file__))
    fixture = os.path.join(here, "..", "..", "tests", "fixtures", "ncu",
                           "clima_a100_details_excerpt.csv")
    with open(fixture, encoding="utf-8") as f:
        header, *rows = f.read().splitlines()
    # Every row starts with the launch ID, quoted: `"0",`.
    assert all(r.startswith('"0",') for r in rows), "expected one launch, ID 0"
    with open(out, "w", encoding="utf-8") as f:
        f.write(header + "\n")
        for i in range(n):
            lead = '"%d",' % i
            f.write("".join(lead + r[4:] + "\n" for r in rows))


if __name__ == "__main__":
    gens = {"ncu-raw": ncu_raw, "ncu-details": ncu_details, "rocprofv3": rocprofv3, "nsys-sqlite": nsys_sqlite,
            "rocpd": rocpd, "rocpd-trace": lambda n, out: rocpd(n, out, False)}
    if len(sys.argv) != 4 or sys.argv[1] not in gens:
        sys.exit(__doc__)
    gens[sys.argv[1]](int(sys.argv[2]), sys.argv[3])

//! Counter lists of the profiling presets, per vendor.
//!
//! Each preset is a list of groups; a group is a list of the tool's own counter names.
//! NVIDIA names are Nsight Compute metrics (`ncu --query-metrics`); AMD names are
//! rocprofiler counters and derived metrics (`rocprofv3 --list-avail`), chosen so that
//! one name works from gfx90a (MI200) to gfx942 (MI300). The formulas that turn them
//! into bytes and FLOPs are in `rooftop_core::counters`.

use super::Preset;

/// Metrics every ncu preset collects (duration, launch shape, occupancy).
pub const NCU_BASE: &[&str] = &[
    "gpu__time_duration.sum",
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__waves_per_multiprocessor",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
];
/// ncu: DRAM bytes, L2 and L1 traffic, their hit rates.
pub const NCU_MEMORY: &[&str] = &[
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_bytes.sum",
    "l1tex__t_bytes.sum",
    "lts__t_sector_hit_rate.pct",
    "l1tex__t_sector_hit_rate.pct",
];
/// ncu: thread-level FP add/mul/fma per precision, and tensor-core operations.
///
/// Tensor FLOPs come from the `sm__ops_path_tensor_src_<type>[_dst_<type>].sum` op
/// counters (one multiply-add = 2 ops, what `rooftop_core::counters::nvidia` converts),
/// whose names differ per architecture (Hopper has `src_fp16` and `src_bf16_dst_fp32`,
/// Ada `src_fp16_dst_fp32_sparsity_off`), so they are asked for by a regular
/// expression, which ncu's `--metrics` expands to the names the GPU has
/// (`regex:<expression>`, a partial match). `sm__inst_executed_pipe_tensor.sum` counts
/// instructions, whose FLOPs depend on the MMA shape, so it is not converted: it stays
/// in the list as the evidence that the tensor pipe ran when no op counter says how much.
pub const NCU_COMPUTE: &[&str] = &[
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
    NCU_TENSOR_OPS,
    "sm__inst_executed_pipe_tensor.sum",
];
/// The tensor-core op counters of every precision the GPU has, as ncu's `--metrics`
/// takes them ([`NCU_COMPUTE`] says why a regular expression).
pub const NCU_TENSOR_OPS: &str = "regex:^sm__ops_path_tensor_src_";
/// ncu: hit rates, sectors vs requests (coalescing), shared-memory bank conflicts.
pub const NCU_CACHE: &[&str] = &[
    "lts__t_sector_hit_rate.pct",
    "l1tex__t_sector_hit_rate.pct",
    "lts__t_bytes.sum",
    "l1tex__t_bytes.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
];
/// ncu: warp stall reasons (average latency per reason) and issue activity.
pub const NCU_STALLS: &[&str] = &[
    "smsp__average_warp_latency_issue_stalled_long_scoreboard",
    "smsp__average_warp_latency_issue_stalled_short_scoreboard",
    "smsp__average_warp_latency_issue_stalled_barrier",
    "smsp__average_warp_latency_issue_stalled_math_pipe_throttle",
    "smsp__average_warp_latency_issue_stalled_mio_throttle",
    "smsp__average_warp_latency_issue_stalled_lg_throttle",
    "smsp__average_warp_latency_issue_stalled_not_selected",
    "smsp__average_warp_latency_issue_stalled_wait",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
];

/// Counters every AMD preset collects (waves, busy cycles).
pub const AMD_BASE: &[&str] = &["SQ_WAVES", "GRBM_GUI_ACTIVE", "GRBM_COUNT"];
/// AMD: bytes fetched and written, L2 hits and misses.
///
/// FETCH_SIZE / WRITE_SIZE are rocprofiler's derived metrics (kilobytes), defined per
/// architecture by rocprofiler, so one name works on gfx90a and gfx942.
pub const AMD_MEMORY: &[&str] = &["FETCH_SIZE", "WRITE_SIZE", "TCC_HIT_sum", "TCC_MISS_sum"];
/// AMD: VALU instructions per precision and MFMA operations.
pub const AMD_COMPUTE: &[&str] = &[
    "SQ_INSTS_VALU_ADD_F32",
    "SQ_INSTS_VALU_MUL_F32",
    "SQ_INSTS_VALU_FMA_F32",
    "SQ_INSTS_VALU_TRANS_F32",
    "SQ_INSTS_VALU_ADD_F16",
    "SQ_INSTS_VALU_MUL_F16",
    "SQ_INSTS_VALU_FMA_F16",
    "SQ_INSTS_VALU_TRANS_F16",
    "SQ_INSTS_VALU_ADD_F64",
    "SQ_INSTS_VALU_MUL_F64",
    "SQ_INSTS_VALU_FMA_F64",
    "SQ_INSTS_VALU_TRANS_F64",
    "SQ_INSTS_VALU_MFMA_MOPS_F16",
    "SQ_INSTS_VALU_MFMA_MOPS_BF16",
    "SQ_INSTS_VALU_MFMA_MOPS_F32",
    "SQ_INSTS_VALU_MFMA_MOPS_F64",
];
/// AMD: L1 (TCP) and L2 (TCC) requests, hits and misses, LDS bank conflicts.
///
/// L2 bytes are the TCP→TCC requests × 64 B, reads, writes and both kinds of atomics
/// (rocprof-compute's `roofline_calc.py`), and the vL1D hit rate needs the same four:
/// without the atomics neither is given, so the preset asks for all four.
pub const AMD_CACHE: &[&str] = &[
    "TCP_TOTAL_CACHE_ACCESSES_sum",
    "TCP_TCC_READ_REQ_sum",
    "TCP_TCC_WRITE_REQ_sum",
    "TCP_TCC_ATOMIC_WITH_RET_REQ_sum",
    "TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum",
    "TCC_HIT_sum",
    "TCC_MISS_sum",
    "TCC_REQ_sum",
    "SQ_LDS_BANK_CONFLICT",
    "SQ_LDS_IDX_ACTIVE",
    "SQ_INSTS_LDS",
];
/// AMD: wave wait and busy cycles, active VALU / VMEM / LDS instructions.
pub const AMD_STALLS: &[&str] = &[
    "SQ_WAIT_ANY",
    "SQ_WAIT_INST_ANY",
    "SQ_BUSY_CYCLES",
    "SQ_ACTIVE_INST_VALU",
    "SQ_ACTIVE_INST_VMEM",
    "SQ_ACTIVE_INST_LDS",
];

/// Groups of counter names.
pub type Groups = &'static [&'static [&'static str]];

/// Every preset: (name, what it is for, NVIDIA metrics, AMD counters). `full` has no
/// NVIDIA list: ncu is asked for `--set full`.
pub const PRESETS: &[(&str, &str, Groups, Groups)] = &[
    (
        "memory",
        "DRAM bytes, L2/L1 traffic, hit rates",
        &[NCU_BASE, NCU_MEMORY],
        &[AMD_BASE, AMD_MEMORY],
    ),
    (
        "compute",
        "FLOPs per precision, tensor/MFMA",
        &[NCU_BASE, NCU_COMPUTE],
        &[AMD_BASE, AMD_COMPUTE],
    ),
    (
        "cache",
        "hit rates, coalescing, bank conflicts",
        &[NCU_BASE, NCU_CACHE],
        &[AMD_BASE, AMD_CACHE],
    ),
    ("stalls", "warp/wave stall reasons", &[NCU_BASE, NCU_STALLS], &[AMD_BASE, AMD_STALLS]),
    (
        "roofline",
        "hierarchical roofline: memory + compute",
        &[NCU_BASE, NCU_MEMORY, NCU_COMPUTE],
        &[AMD_BASE, AMD_MEMORY, AMD_COMPUTE, AMD_CACHE],
    ),
    (
        "full",
        "ncu --set full; every AMD preset",
        &[],
        &[AMD_BASE, AMD_MEMORY, AMD_COMPUTE, AMD_CACHE, AMD_STALLS],
    ),
];

/// The counters of `preset` for an AMD (`amd`) or NVIDIA tool, deduplicated, in order.
/// Empty for ncu's `full` (ncu chooses: `--set full`).
pub fn counters(preset: Preset, amd: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (name, _, nv, am) in PRESETS {
        if *name == preset.as_str() {
            for group in if amd { *am } else { *nv } {
                for c in *group {
                    if !out.iter().any(|x| x == c) {
                        out.push((*c).to_string());
                    }
                }
            }
        }
    }
    out
}

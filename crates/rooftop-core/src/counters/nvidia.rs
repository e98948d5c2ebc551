//! NVIDIA counter formulas: Nsight Compute metric ids → bytes per memory level, FLOPs,
//! hit rates, occupancy, waves, coalescing and shared-memory bank conflicts.
//!
//! Input: a [`Dispatch`] whose `counters` are keyed by ncu metric ids in base units
//! (bytes, ns, counts, percent), as the `ncu` / `nsys` readers produce them.
//!
//! Sources of the formulas (cited again in each [`Derived::formulas`] entry):
//! - FLOPs: Nsight Compute's `SpeedOfLight_RooflineChart` / `Hierarchical{Single,Double,
//!   Half}RooflineChart` sections and the `SpeedOfLight_Roofline.py` rule (one FMA = 2
//!   FLOP; the Half chart counts 2·hadd + 2·hmul + 4·hfma, packed half2). Tensor-core work: `sm__ops_path_tensor_*` op
//!   counters, plotted by the `HierarchicalTensorRooflineChart` section in OP/s.
//! - DRAM / L2 / L1 bytes: `dram__bytes_{read,write}.sum`, `lts__t_bytes.sum`,
//!   `l1tex__t_bytes.sum` (the NERSC hierarchical-roofline method);
//!   a sector is 32 bytes on every NVIDIA GPU since Maxwell, so `*_sectors*` × 32 is the
//!   fallback.
//!   When a byte metric was not collected but its rate was (the details page prints
//!   `dram__bytes.sum.per_second` as "Memory Throughput" in GB/s), bytes = rate ×
//!   duration, recorded as [`ByteSource::Derived`].
//! - Hit rates, occupancy, waves: the metrics the `MemoryWorkloadAnalysis`, `Occupancy`
//!   and `LaunchStatistics` sections show as "L1/TEX Hit Rate", "L2 Hit Rate",
//!   "Achieved Occupancy", "Theoretical Occupancy" and "Waves Per SM".
//! - Speed of Light: the `SpeedOfLight` section's throughputs, each a percentage of its
//!   unit's own peak ("Compute (SM) Throughput", "Memory Throughput", "DRAM
//!   Throughput", "L1/TEX Cache Throughput", "L2 Cache Throughput"; "SOL SM", "SOL
//!   DRAM", "SOL L1/TEX Cache", "SOL L2 Cache" before Nsight Compute 2021).
//!
//! Invariant: nothing here guesses. A quantity whose metrics are absent stays `None` and
//! is listed in [`Derived::missing`] with the metric ids that would give it.

use super::derive::ByteSource;
use super::{Coalescing, Derived, DeviceInfo, Dispatch};
use crate::device::MemLevel;
use std::collections::BTreeMap;

/// Bytes per L1TEX / L2 / DRAM sector on NVIDIA GPUs (Maxwell and later).
pub const SECTOR_BYTES: f64 = 32.0;

/// Threads per warp on every NVIDIA GPU so far (CUDA `warpSize`).
pub const WARP_SIZE: u64 = 32;

/// Bytes a fully coalesced warp of 32 threads × 4 bytes needs per global load request:
/// 4 sectors of 32 bytes.
pub const IDEAL_LOAD_BYTES_PER_REQUEST: f64 = 128.0;

const SRC_FLOPS: &str = "Nsight Compute SpeedOfLight_Roofline*Chart sections and \
                         SpeedOfLight_Roofline.py";

/// The hierarchical-roofline byte metrics (NERSC's method for Nsight Compute:
/// <https://docs.nersc.gov/tools/performance/roofline/>); a sector is 32 bytes.
const SRC_BYTES: &str = "NERSC hierarchical roofline";

/// The kernel duration (ns) from ncu metrics: `gpu__time_duration.sum`, or one of its
/// other roll-ups. `gpu__` has exactly one instance per launch, so `.avg`, `.max` and
/// `.min` equal `.sum`. Returns the value and the metric id it came from.
pub fn duration_from_metrics(
    counters: &BTreeMap<super::CounterName, f64>,
) -> Option<(f64, &'static str)> {
    [
        "gpu__time_duration.sum",
        "gpu__time_duration.avg",
        "gpu__time_duration.max",
        "gpu__time_duration.min",
    ]
    .into_iter()
    .find_map(|k| counters.get(k).map(|v| (*v, k)))
    .filter(|(v, _)| v.is_finite())
}

/// A counter that is present and finite.
fn get(d: &Dispatch, name: &str) -> Option<f64> {
    d.counter(name).filter(|v| v.is_finite())
}

/// The first of `names` that is present, with its id.
fn first<'a>(d: &Dispatch, names: &[&'a str]) -> Option<(f64, &'a str)> {
    names.iter().find_map(|n| get(d, n).map(|v| (v, *n)))
}

/// A SASS thread-instruction count, per SM (`sm__`) or per SM sub-partition (`smsp__`);
/// the `.sum` of either is the same total over the GPU. Where only the rate was
/// collected (the `SpeedOfLight_RooflineChart` section, and so a `--set full` raw page,
/// has `.sum.per_cycle_elapsed` and not `.sum`), the count is that rate × the unit's
/// `cycles_elapsed.avg`, which is what `per_cycle_elapsed` divides by; the flag says so.
fn sass_op(d: &Dispatch, op: &str) -> Option<(f64, bool)> {
    let finite = |v: Option<f64>| v.filter(|v| v.is_finite());
    let inst = "__sass_thread_inst_executed_op_";
    for unit in ["smsp", "sm"] {
        if let Some(v) = finite(d.counter_joined(&[unit, inst, op, "_pred_on.sum"])) {
            return Some((v, false));
        }
    }
    for unit in ["smsp", "sm"] {
        let rate = finite(d.counter_joined(&[unit, inst, op, "_pred_on.sum.per_cycle_elapsed"]));
        let cycles = || finite(d.counter_joined(&[unit, "__cycles_elapsed.avg"]));
        if let Some((r, c)) = rate.and_then(|r| Some((r, cycles()?))) {
            return Some((r * c, true));
        }
    }
    None
}

/// The counters whose names start with `prefix`, in name order: found in one descent of
/// the ordered map instead of a pass over each of a dispatch's (hundreds of) counters.
fn with_prefix<'d>(d: &'d Dispatch, prefix: &'d str) -> impl Iterator<Item = (&'d str, f64)> {
    use std::ops::Bound;
    d.counters
        .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
        .map(|(k, v)| (&**k, *v))
        .take_while(move |(k, _)| k.starts_with(prefix))
}

/// Derives bytes, FLOPs, hit rates and occupancy from an NVIDIA dispatch's counters.
pub fn derive(d: &Dispatch, device: &DeviceInfo) -> Derived {
    let mut out = Derived::default();
    duration(d, &mut out);
    dram(d, &mut out);
    caches(d, &mut out);
    // Each vector op's count, looked up once for the FLOPs and their completeness.
    let ops = VECTOR.map(|p| p.ops.map(|(op, _)| sass_op(d, op)));
    flops(&ops, &mut out);
    tensor(d, &mut out);
    complete_or_withdraw(d, &ops, &mut out);
    rates(d, &mut out);
    speed_of_light(d, &mut out);
    launch(d, device, &mut out);
    access_patterns(d, &mut out);
    out
}

fn duration(d: &Dispatch, out: &mut Derived) {
    let metric = duration_from_metrics(&d.counters);
    let ns = d.duration_ns.filter(|v| v.is_finite()).or(metric.map(|(v, _)| v));
    if let Some(ns) = ns {
        out.duration_ns = Some(ns);
        // Say which metric it is when the dispatch's duration is one (the ncu reader copies
        // it there); a trace's own duration needs no formula.
        if let Some((_, id)) = metric.filter(|(v, _)| *v == ns) {
            out.formula(format!(
                "duration = {id} (gpu__ has one instance per launch, so every roll-up equals .sum)"
            ));
        }
    } else {
        out.miss("duration_ns", "gpu__time_duration.sum");
    }
}

/// Bytes of `bytes` (a `*.sum` byte metric), from the metric itself, its sectors × 32, or
/// — when neither was collected — its per-second rate × the duration (the details
/// page's "Memory Throughput" in GB/s is `dram__bytes.sum.per_second`). Returns the
/// value, how it was obtained, and whether it was derived from a rate.
fn bytes_of(
    d: &Dispatch,
    duration_ns: Option<f64>,
    bytes: &str,
    sectors: &str,
) -> Option<(f64, String, ByteSource)> {
    if let Some(v) = get(d, bytes) {
        return Some((v, bytes.to_string(), ByteSource::Counter));
    }
    if let Some(s) = get(d, sectors) {
        return Some((s * SECTOR_BYTES, format!("{sectors} × 32"), ByteSource::Counter));
    }
    let rate_id = format!("{bytes}.per_second");
    let rate = get(d, &rate_id)?;
    let ns = duration_ns.filter(|t| *t > 0.0)?;
    Some((
        rate * ns * 1e-9,
        format!("{rate_id} × duration (derived: the byte counter was not collected)"),
        ByteSource::Derived,
    ))
}

fn dram(d: &Dispatch, out: &mut Derived) {
    let t = out.duration_ns;
    let mut source = ByteSource::Counter;
    let mut side = |bytes: &str, sectors: &str| -> Option<(f64, String)> {
        let (v, how, src) = bytes_of(d, t, bytes, sectors)?;
        if src == ByteSource::Derived {
            source = ByteSource::Derived;
        }
        Some((v, how))
    };
    let mut read = side("dram__bytes_read.sum", "dram__sectors_read.sum");
    let mut write = side("dram__bytes_write.sum", "dram__sectors_write.sum");
    // The total only where a side is missing: a derived total must not mark counted
    // sides as derived.
    let total = if read.is_some() && write.is_some() {
        None
    } else {
        side("dram__bytes.sum", "dram__sectors.sum")
    };
    // With the total and one side, the other side is the difference.
    if let Some((t, tid)) = &total {
        match (&read, &write) {
            (Some((r, rid)), None) if *t >= *r => {
                write = Some((t - r, format!("{tid} − {rid}")));
            }
            (None, Some((w, wid))) if *t >= *w => {
                read = Some((t - w, format!("{tid} − {wid}")));
            }
            _ => {}
        }
    }
    if read.is_none() || write.is_none() {
        if let Some((t, tid)) = &total {
            // The traffic is known even when its split is not: rates and intensity use it.
            out.dram_bytes_total = Some(*t);
            out.formula(format!(
                "DRAM bytes (total, no read/write split) = {tid} [NERSC hierarchical roofline]"
            ));
        }
    }
    if (read.is_some() && write.is_some()) || out.dram_bytes_total.is_some() {
        out.byte_sources.insert(MemLevel::Dram, source);
    }
    let only_total = total.as_ref().map_or(String::new(), |(t, tid)| {
        format!(
            " (only the total is known, {}: {tid}; it cannot be split)",
            crate::units::si(*t, "B")
        )
    });
    match read {
        Some((v, how)) => {
            out.dram_bytes_read = Some(v);
            out.formula(format!("DRAM bytes read = {how} [NERSC hierarchical roofline]"));
        }
        None => out.miss(
            "dram_bytes_read",
            format!("dram__bytes_read.sum or dram__sectors_read.sum{only_total}"),
        ),
    }
    match write {
        Some((v, how)) => {
            out.dram_bytes_written = Some(v);
            out.formula(format!("DRAM bytes written = {how} [NERSC hierarchical roofline]"));
        }
        None => out.miss(
            "dram_bytes_written",
            format!("dram__bytes_write.sum or dram__sectors_write.sum{only_total}"),
        ),
    }
}

fn caches(d: &Dispatch, out: &mut Derived) {
    let t = out.duration_ns;
    for (level, name, bytes, sectors, field) in [
        (MemLevel::L2, "L2", "lts__t_bytes.sum", "lts__t_sectors.sum", "l2_bytes"),
        (MemLevel::L1, "L1", "l1tex__t_bytes.sum", "l1tex__t_sectors.sum", "l1_bytes"),
    ] {
        match bytes_of(d, t, bytes, sectors) {
            Some((v, how, src)) => {
                if level == MemLevel::L2 {
                    out.l2_bytes = Some(v);
                } else {
                    out.l1_bytes = Some(v);
                }
                out.byte_sources.insert(level, src);
                out.formula(format!("{name} bytes = {how} [{SRC_BYTES}]"));
            }
            None => out.miss(field, format!("{bytes} or {sectors}")),
        }
    }

    if let Some(v) = get(d, "sm__sass_data_bytes_mem_shared.sum") {
        out.lds_bytes = Some(v);
        out.formula("shared-memory bytes = sm__sass_data_bytes_mem_shared.sum");
    } else if let (Some(ld), Some(st)) = (
        get(d, "sm__sass_data_bytes_mem_shared_op_ld.sum"),
        get(d, "sm__sass_data_bytes_mem_shared_op_st.sum"),
    ) {
        out.lds_bytes = Some(ld + st);
        out.formula(
            "shared-memory bytes = sm__sass_data_bytes_mem_shared_op_ld.sum + \
             sm__sass_data_bytes_mem_shared_op_st.sum (atomics not counted)",
        );
    } else {
        out.miss(
            "lds_bytes",
            "sm__sass_data_bytes_mem_shared.sum (or its _op_ld and _op_st parts)",
        );
    }
}

/// One vector precision: its SASS op names and weights (FLOP per thread instruction).
struct VectorPrecision {
    key: &'static str,
    ops: [(&'static str, f64); 3],
    text: &'static str,
}

const VECTOR: [VectorPrecision; 3] = [
    VectorPrecision {
        key: "fp32",
        ops: [("fadd", 1.0), ("fmul", 1.0), ("ffma", 2.0)],
        text: "fp32 FLOPs = fadd + fmul + 2·ffma",
    },
    VectorPrecision {
        key: "fp64",
        ops: [("dadd", 1.0), ("dmul", 1.0), ("dfma", 2.0)],
        text: "fp64 FLOPs = dadd + dmul + 2·dfma",
    },
    VectorPrecision {
        key: "fp16",
        ops: [("hadd", 2.0), ("hmul", 2.0), ("hfma", 4.0)],
        text: "fp16 FLOPs = 2·hadd + 2·hmul + 4·hfma (packed half2, as the Half roofline chart counts)",
    },
];

/// Each [`VECTOR`] precision's op counts ([`sass_op`]), in its order.
type VectorOps = [[Option<(f64, bool)>; 3]; 3];

fn flops(ops: &VectorOps, out: &mut Derived) {
    let mut any = false;
    for (p, found) in VECTOR.iter().zip(ops) {
        let vals: Vec<Option<f64>> = found.iter().map(|v| v.map(|(x, _)| x)).collect();
        if vals.iter().all(Option::is_none) {
            continue;
        }
        any = true;
        if vals.iter().all(Option::is_some) {
            let total: f64 = p.ops.iter().zip(&vals).map(|((_, w), v)| w * v.unwrap_or(0.0)).sum();
            out.flops.vector.insert(p.key.to_string(), total);
            let from = if found.iter().flatten().any(|(_, derived)| *derived) {
                "smsp__sass_thread_inst_executed_op_*_pred_on.sum, or its \
                 .sum.per_cycle_elapsed × smsp__cycles_elapsed.avg where only the rate was \
                 collected"
            } else {
                "smsp__sass_thread_inst_executed_op_*_pred_on.sum"
            };
            out.formula(format!("{} ({from}) [{SRC_FLOPS}]", p.text));
        } else {
            // Part of a precision's counts would undercount it: say which are absent.
            let absent: Vec<String> = p
                .ops
                .iter()
                .zip(&vals)
                .filter(|(_, v)| v.is_none())
                .map(|((op, _), _)| format!("smsp__sass_thread_inst_executed_op_{op}_pred_on.sum"))
                .collect();
            out.miss(format!("flops.vector.{}", p.key), absent.join(", "));
        }
    }
    if !any {
        out.miss(
            "flops.vector",
            "smsp__sass_thread_inst_executed_op_{fadd,fmul,ffma,dadd,dmul,dfma,hadd,hmul,hfma}_pred_on.sum",
        );
    }
}

/// Precision tokens that can appear in `sm__ops_path_tensor_src_<p>[_dst_<q>].sum`.
const TENSOR_PRECISIONS: [&str; 12] =
    ["fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "fp6", "fp4", "int8", "int4", "int1", "b1"];

/// One op-agnostic tensor op counter, `sm__ops_path_tensor_src_<src>[_dst_<dst>]
/// [_sparsity_{off,on}].sum`, split into its parts.
///
/// The `_sparsity_off` / `_sparsity_on` halves split a path by whether the MMA used
/// structured sparsity; Ada and Hopper name their fp8 path only that way
/// (`sm__ops_path_tensor_src_fp8_sparsity_off.sum`, `..._sparsity_on.sum`, as
/// `ncu --query-metrics` lists them and as the Nsight Compute
/// `SpeedOfLight_HierarchicalTensorRooflineChart` section collects them; Nsight Compute
/// Kernel Profiling Guide, "Metrics Reference" and "Roofline Charts":
/// <https://docs.nvidia.com/nsight-compute/ProfilingGuide/index.html>). The per-instruction
/// `sm__ops_path_tensor_op_<hmma|hgmma|imma|...>_src_*` breakdowns of the same work are
/// not matched here, so that nothing is counted twice.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TensorPath {
    /// May join several precisions with `_` (Turing's `fp16_bf16_tf32`, Blackwell's
    /// `fp4_fp6_fp8`).
    src: String,
    dst: Option<String>,
    /// `Some(true)` for `_sparsity_on`, `Some(false)` for `_sparsity_off`.
    sparsity: Option<bool>,
}

/// The prefix of every op-agnostic tensor op counter ([`TensorPath`]).
const TENSOR_SRC: &str = "sm__ops_path_tensor_src_";

fn tensor_path(name: &str) -> Option<TensorPath> {
    let rest = name.strip_prefix(TENSOR_SRC)?.strip_suffix(".sum")?;
    let (rest, sparsity) = if let Some(r) = rest.strip_suffix("_sparsity_off") {
        (r, Some(false))
    } else if let Some(r) = rest.strip_suffix("_sparsity_on") {
        (r, Some(true))
    } else {
        (rest, None)
    };
    let (src, dst) = match rest.split_once("_dst_") {
        Some((s, d)) => (s, Some(d)),
        None => (rest, None),
    };
    let known = |s: &str| s.split('_').all(|t| TENSOR_PRECISIONS.contains(&t));
    if src.is_empty() || !known(src) || dst.is_some_and(|d| d.is_empty() || !known(d)) {
        return None;
    }
    Some(TensorPath { src: src.to_string(), dst: dst.map(str::to_string), sparsity })
}

/// The op counters of one source precision, by how much of the path each covers.
#[derive(Debug, Default)]
struct TensorSource {
    /// `src_<p>.sum`: every destination, sparse or not.
    whole: Option<f64>,
    /// Per destination: `src_<p>_dst_<q>.sum`, and the sum of its sparsity halves.
    by_dst: BTreeMap<String, (Option<f64>, Option<f64>)>,
    /// `src_<p>_sparsity_{off,on}.sum` summed.
    by_sparsity: Option<f64>,
}

impl TensorSource {
    fn add(&mut self, p: &TensorPath, v: f64) {
        let add = |slot: &mut Option<f64>| *slot = Some(slot.unwrap_or(0.0) + v);
        match (&p.dst, p.sparsity) {
            (None, None) => add(&mut self.whole),
            (None, Some(_)) => add(&mut self.by_sparsity),
            (Some(d), None) => add(&mut self.by_dst.entry(d.clone()).or_default().0),
            (Some(d), Some(_)) => add(&mut self.by_dst.entry(d.clone()).or_default().1),
        }
    }

    /// The ops of this source: the whole path when collected, else the larger of the
    /// two partitions of it (by destination, by sparsity); a destination's own total
    /// wins over its sparsity halves, so nothing is added twice.
    fn total(&self) -> Option<f64> {
        if self.whole.is_some() {
            return self.whole;
        }
        let dst = (!self.by_dst.is_empty())
            .then(|| self.by_dst.values().map(|(w, halves)| w.or(*halves).unwrap_or(0.0)).sum());
        match (dst, self.by_sparsity) {
            (Some(a), Some(b)) => Some(f64::max(a, b)),
            (a, b) => a.or(b),
        }
    }
}

/// Instruction and op counts of the tensor pipe that this module does not turn into
/// FLOPs (`sm__inst_executed_pipe_tensor[_op_<hmma|gmma|...>].sum`, and the
/// per-instruction `sm__ops_path_tensor_op_<...>_src_*.sum`): a non-zero `.sum` says
/// tensor work ran.
const TENSOR_COUNTS: [&str; 3] =
    ["sm__inst_executed_pipe_tensor", "smsp__inst_executed_pipe_tensor", "sm__ops_path_tensor_op_"];

/// The tensor pipe's busy share (`sm__pipe_tensor*_cycles_active.avg.pct_of_peak_sustained_*`)
/// from which it counts as having run, percent. The activity counters are not zero on
/// kernels without tensor work: the H200 fixtures' fp32 softmax, layer norm and GEMM
/// (`sm__ops_path_tensor_src_*` all 0, `sm__inst_executed_pipe_tensor.sum` 0) read
/// 0.2–2.4% on average over the SMs (31% for the busiest SM), the tensor GEMM and
/// attention kernels 56–95%.
const TENSOR_BUSY_PCT: f64 = 10.0;

/// The first counter (in name order) saying the tensor pipe ran, with its value.
fn tensor_activity(d: &Dispatch) -> Option<(&str, f64)> {
    let ran = |v: f64| v.is_finite() && v > 0.0;
    // No prefix is another's: each is its own stretch of the names, and the first
    // counter of all is the least of each stretch's first.
    let counts = TENSOR_COUNTS.iter().filter_map(|p| {
        with_prefix(d, p).find(|(k, v)| ran(*v) && k.strip_suffix(".sum").is_some())
    });
    let busy = ["sm__pipe_tensor", "smsp__pipe_tensor"].into_iter().filter_map(|p| {
        with_prefix(d, p).find(|(k, v)| {
            ran(*v)
                && k.contains("cycles_active.avg.pct_of_peak_sustained_")
                && *v >= TENSOR_BUSY_PCT
        })
    });
    counts.chain(busy).min_by(|a, b| a.0.cmp(b.0))
}

fn tensor(d: &Dispatch, out: &mut Derived) {
    let mut sources: BTreeMap<String, TensorSource> = BTreeMap::new();
    for (name, v) in with_prefix(d, TENSOR_SRC) {
        if !v.is_finite() {
            continue;
        }
        if let Some(p) = tensor_path(name) {
            sources.entry(p.src.clone()).or_default().add(&p, v);
        }
    }
    let counted: BTreeMap<String, f64> =
        sources.iter().filter_map(|(src, s)| s.total().map(|v| (src.clone(), v))).collect();
    if counted.is_empty() {
        let hint = if with_prefix(d, "sm__inst_executed_pipe_tensor").next().is_some() {
            " (sm__inst_executed_pipe_tensor* counts instructions, whose FLOPs depend on the \
             MMA shape, so they are not converted)"
        } else {
            ""
        };
        out.miss(
            "flops.matrix",
            format!("sm__ops_path_tensor_src_<type>[_dst_<type>][_sparsity_{{off,on}}].sum{hint}"),
        );
        return;
    }
    for (src, v) in counted {
        out.flops.matrix.insert(src, v);
    }
    out.formula(
        "tensor FLOPs = Σ sm__ops_path_tensor_src_<type>[_dst_<type>][_sparsity_{off,on}].sum, \
         per source type (hardware ops, one multiply-add = 2) \
         [HierarchicalTensorRooflineChart section]",
    );
}

/// "Missing, never undercounted" for the FLOP total: when the counters show work that
/// no FLOP count covers, the partial counts are withdrawn (so intensity, bound and
/// attainment are not computed from them) and `flops` is listed as missing with the
/// reason and the counters that would complete it.
///
/// Known-incomplete: the tensor pipe ran ([`TENSOR_COUNTS`], [`TENSOR_BUSY_PCT`]) but no
/// `sm__ops_path_tensor_src_*` counter counted any work (none collected, or only
/// precisions the kernel did not use); or a vector precision has non-zero instruction
/// counts but not all three of its ops.
fn complete_or_withdraw(d: &Dispatch, ops: &VectorOps, out: &mut Derived) {
    if out.flops.is_empty() {
        return;
    }
    let mut why: Vec<String> = Vec::new();
    let tensor_ops: f64 = out.flops.matrix.values().sum();
    if let Some((id, v)) = tensor_activity(d).filter(|_| tensor_ops <= 0.0) {
        let counted = if out.flops.matrix.is_empty() {
            "no sm__ops_path_tensor_src_* counter was collected".to_string()
        } else {
            let types: Vec<&str> = out.flops.matrix.keys().map(String::as_str).collect();
            format!(
                "the sm__ops_path_tensor_src_* collected ({}) count 0: the type it ran is not \
                 among them",
                types.join(", ")
            )
        };
        why.push(format!(
            "the tensor pipe ran ({id} = {}) but {counted}; collect \
             sm__ops_path_tensor_src_<type>[_dst_<type>][_sparsity_{{off,on}}].sum for its \
             types (ncu --section SpeedOfLight_HierarchicalTensorRooflineChart)",
            crate::units::as_given(v)
        ));
    }
    for (p, ops) in VECTOR.iter().zip(ops) {
        let found: Vec<Option<f64>> = ops.iter().map(|x| x.map(|x| x.0)).collect();
        let partial = found.iter().any(Option::is_none) && found.iter().flatten().any(|v| *v > 0.0);
        if partial {
            why.push(format!(
                "{} instructions were executed but not all of {} were collected",
                p.key,
                p.ops.iter().map(|(op, _)| *op).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    if !why.is_empty() {
        out.flops = super::FlopCounts::default();
        out.miss(super::derive::FLOPS_INCOMPLETE, format!("a complete count: {}", why.join("; ")));
    }
}

fn rates(d: &Dispatch, out: &mut Derived) {
    // A hit rate outside 0–100% (beyond the counters' noise) is impossible: not shown,
    // and nothing is concluded from it.
    let hit_rate = |out: &mut Derived, quantity: &'static str, id: &str| {
        let v = get(d, id)?;
        if plausible_pct(v) {
            return Some(v);
        }
        out.miss(
            quantity,
            format!(
                "a value within 0–100% ({id} is {}%, which is impossible for a hit rate)",
                crate::units::as_given(v)
            ),
        );
        None
    };
    if get(d, "l1tex__t_sector_hit_rate.pct").is_none() {
        out.miss("l1_hit_rate_pct", "l1tex__t_sector_hit_rate.pct");
    } else if let Some(v) = hit_rate(out, "l1_hit_rate_pct", "l1tex__t_sector_hit_rate.pct") {
        out.l1_hit_rate_pct = Some(v);
        out.formula("L1 hit rate = l1tex__t_sector_hit_rate.pct (\"L1/TEX Hit Rate\")");
    }
    let l2 = ["lts__t_sector_hit_rate.pct", "lts__t_request_hit_rate.pct"]
        .into_iter()
        .find(|id| get(d, id).is_some());
    match l2 {
        None => out.miss("l2_hit_rate_pct", "lts__t_sector_hit_rate.pct"),
        Some(id) => {
            if let Some(v) = hit_rate(out, "l2_hit_rate_pct", id) {
                out.l2_hit_rate_pct = Some(v);
                out.formula(if id == "lts__t_sector_hit_rate.pct" {
                    "L2 hit rate = lts__t_sector_hit_rate.pct (\"L2 Hit Rate\")"
                } else {
                    "L2 hit rate = lts__t_request_hit_rate.pct (per request; the per-sector \
                     lts__t_sector_hit_rate.pct that ncu shows as \"L2 Hit Rate\" was not \
                     collected)"
                });
            }
        }
    }
    if let Some(v) = get(d, "sm__warps_active.avg.pct_of_peak_sustained_active") {
        out.achieved_occupancy_pct = Some(v);
        out.formula(
            "achieved occupancy = sm__warps_active.avg.pct_of_peak_sustained_active \
             (\"Achieved Occupancy\")",
        );
    } else {
        out.miss("achieved_occupancy_pct", "sm__warps_active.avg.pct_of_peak_sustained_active");
    }
    if let Some(v) = get(d, "sm__maximum_warps_per_active_cycle_pct") {
        out.theoretical_occupancy_pct = Some(v);
        out.formula(
            "theoretical occupancy = sm__maximum_warps_per_active_cycle_pct \
             (\"Theoretical Occupancy\")",
        );
    } else {
        out.miss("theoretical_occupancy_pct", "sm__maximum_warps_per_active_cycle_pct");
    }
}

/// How far past 0–100% an Nsight Compute percentage may lie and still be a measurement:
/// ncu computes its rates from sampled counters, and a real H200 export holds
/// `lts__t_sector_op_write_hit_rate.pct` = 100.007616%. Beyond it, the figure is
/// impossible.
pub const PCT_NOISE: f64 = 1.0;

/// Whether a percentage of a whole (a hit rate, a throughput as a share of its peak) is
/// possible: within 0–100%, give or take [`PCT_NOISE`].
pub fn plausible_pct(v: f64) -> bool {
    (-PCT_NOISE..=100.0 + PCT_NOISE).contains(&v)
}

/// The hit rates the formulas read ("L1/TEX Hit Rate", "L2 Hit Rate", and L2 per
/// request). Others (`lts__t_sector_op_write_hit_rate.pct`, which real H200 exports
/// hold at 109%) are not read.
pub const HIT_RATE_METRICS: &[&str] =
    &["l1tex__t_sector_hit_rate.pct", "lts__t_sector_hit_rate.pct", "lts__t_request_hit_rate.pct"];

/// The Speed-of-Light figures (metric id, the label Nsight Compute shows), each a
/// percentage of its unit's own peak: 0 to 100 by definition.
pub const SPEED_OF_LIGHT_METRICS: &[(&str, &str)] = &[
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "Compute (SM) Throughput"),
    ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "Memory Throughput"),
    ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "DRAM Throughput"),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "SOL DRAM"),
    ("l1tex__throughput.avg.pct_of_peak_sustained_active", "L1/TEX Cache Throughput"),
    ("lts__throughput.avg.pct_of_peak_sustained_elapsed", "L2 Cache Throughput"),
];

/// The `missing` quantity of a Speed of Light that holds an impossible figure.
pub const SPEED_OF_LIGHT: &str = "speed_of_light";

/// The first Speed-of-Light figure of `d` outside 0–100% of its peak (beyond
/// [`PCT_NOISE`]): (label, value).
/// A unit cannot run above its own peak, so such a file was edited or is corrupt.
pub fn impossible_speed_of_light(d: &Dispatch) -> Option<(&'static str, f64)> {
    SPEED_OF_LIGHT_METRICS
        .iter()
        .find_map(|(id, label)| get(d, id).filter(|v| !plausible_pct(*v)).map(|v| (*label, v)))
}

/// The Speed-of-Light throughputs (percent of each unit's peak). One impossible figure
/// (above 100% or below 0) withdraws them all: the busiest unit, and with it the bound,
/// cannot be told when one unit's figure is wrong. The counters keep the values as read.
fn speed_of_light(d: &Dispatch, out: &mut Derived) {
    if let Some((label, v)) = impossible_speed_of_light(d) {
        out.miss(
            SPEED_OF_LIGHT,
            format!(
                "figures within 0–100% of peak (\"{label}\" is {}%, which is impossible; \
                 no bound or busiest unit is drawn from it)",
                crate::units::as_given(v)
            ),
        );
        return;
    }
    let sol = &mut out.speed_of_light;
    sol.sm_pct = get(d, "sm__throughput.avg.pct_of_peak_sustained_elapsed");
    sol.memory_pct = get(d, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed");
    sol.dram_pct = get(d, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed")
        .or_else(|| get(d, "dram__throughput.avg.pct_of_peak_sustained_elapsed"));
    sol.l1_pct = get(d, "l1tex__throughput.avg.pct_of_peak_sustained_active");
    sol.l2_pct = get(d, "lts__throughput.avg.pct_of_peak_sustained_elapsed");
    if !sol.is_empty() {
        out.formula(
            "Speed of Light = sm__throughput, gpu__compute_memory_throughput, \
             gpu__dram_throughput (dram__throughput before 2021), l1tex__throughput, \
             lts__throughput, each .avg.pct_of_peak_sustained_elapsed (L1: _active) \
             [Nsight Compute SpeedOfLight section]",
        );
    }
}

/// The DRAM peak a dispatch's own figures imply, GB/s: its DRAM bytes per second over
/// its DRAM throughput as a share of the peak (`dram__bytes.sum.per_second` /
/// `gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed` × 100). Only from a
/// throughput of at least 10% (two printed decimals of a small percentage are too
/// coarse) and at most 100% (above, the figure is impossible).
pub fn implied_dram_peak_gbs(d: &Dispatch) -> Option<f64> {
    let rate = get(d, "dram__bytes.sum.per_second")?;
    let pct = get(d, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed")
        .or_else(|| get(d, "dram__throughput.avg.pct_of_peak_sustained_elapsed"))
        .filter(|p| *p >= 10.0 && plausible_pct(*p))?;
    Some(rate / (pct / 100.0) / 1e9)
}

/// Total blocks: the dispatch's grid, or `launch__grid_size`, or `sm__ctas_launched.sum`.
fn blocks(d: &Dispatch) -> Option<(f64, &'static str)> {
    if let Some(b) = d.blocks() {
        return Some((b as f64, "grid"));
    }
    first(d, &["launch__grid_size", "sm__ctas_launched.sum"])
}

fn threads_per_block(d: &Dispatch) -> Option<f64> {
    d.threads_per_block().map(|t| t as f64).or_else(|| get(d, "launch__block_size"))
}

fn launch(d: &Dispatch, device: &DeviceInfo, out: &mut Derived) {
    let warp = device.wave_size.map_or(WARP_SIZE, u64::from).max(1) as f64;
    if let Some((v, id)) = first(d, &["sm__warps_launched.sum", "smsp__warps_launched.sum"]) {
        out.waves_launched = Some(v);
        out.formula(format!("warps launched = {id}"));
    } else if let (Some((b, bid)), Some(t)) = (blocks(d), threads_per_block(d)) {
        out.waves_launched = Some(b * (t / warp).ceil());
        out.formula(format!("warps launched = blocks ({bid}) × ⌈threads per block / {warp}⌉"));
    } else {
        out.miss("waves_launched", "sm__warps_launched.sum, or the grid and block sizes");
    }

    if let Some(v) = get(d, "launch__waves_per_multiprocessor") {
        out.grid_waves = Some(v);
        out.formula("grid waves = launch__waves_per_multiprocessor (\"Waves Per SM\")");
        return;
    }
    // ncu's own definition: blocks / (SMs × blocks per SM), the blocks per SM being the
    // tightest of the occupancy limits (LaunchStatistics / Occupancy sections).
    let limits: Vec<f64> = [
        "launch__occupancy_limit_registers",
        "launch__occupancy_limit_shared_mem",
        "launch__occupancy_limit_warps",
        "launch__occupancy_limit_blocks",
    ]
    .iter()
    .filter_map(|k| get(d, k))
    .collect();
    let sms = get(d, "launch__sm_count")
        .or_else(|| get(d, "device__attribute_multiprocessor_count"))
        .or_else(|| device.compute_units.map(f64::from));
    let per_sm = (limits.len() == 4).then(|| limits.iter().copied().fold(f64::INFINITY, f64::min));
    match (blocks(d), sms, per_sm) {
        (Some((b, _)), Some(s), Some(p)) if s > 0.0 && p > 0.0 => {
            out.grid_waves = Some(b / (s * p));
            out.formula(
                "grid waves = blocks / (SMs × min(launch__occupancy_limit_{registers,shared_mem,\
                 warps,blocks}))",
            );
        }
        _ => out.miss(
            "grid_waves",
            "launch__waves_per_multiprocessor (or the grid, the SM count and \
             launch__occupancy_limit_{registers,shared_mem,warps,blocks})",
        ),
    }
}

fn access_patterns(d: &Dispatch, out: &mut Derived) {
    let sectors = get(d, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum");
    let requests = get(d, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum");
    match (sectors, requests) {
        (Some(s), Some(r)) => {
            // No global loads: nothing to judge, and nothing missing either.
            if r > 0.0 {
                out.coalescing = Some(Coalescing {
                    level: "l1".to_string(),
                    bytes_per_request: s / r * SECTOR_BYTES,
                    ideal_bytes_per_request: IDEAL_LOAD_BYTES_PER_REQUEST,
                });
                out.formula(
                    "global-load coalescing = l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum / \
                     l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum × 32 B, against 128 B \
                     (one warp of 32 threads × 4-byte loads = 4 sectors) [rooftop brief; \
                     sector = 32 B]",
                );
            }
        }
        _ => out.miss(
            "coalescing",
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum, \
             l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
        ),
    }

    let conflicts = get(d, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum");
    let wavefronts = get(d, "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum");
    match (conflicts, wavefronts) {
        (Some(c), Some(w)) => {
            if w > 0.0 {
                out.lds_bank_conflict_pct = Some(100.0 * c / w);
                out.formula(
                    "shared bank conflicts % = 100 × l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum \
                     / l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
                );
            }
        }
        _ => out.miss(
            "lds_bank_conflict_pct",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum, \
             l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dispatch(counters: &[(&str, f64)]) -> Dispatch {
        Dispatch {
            name: "k".into(),
            counters: counters.iter().map(|(k, v)| ((*k).into(), *v)).collect(),
            ..Dispatch::default()
        }
    }

    fn missing(d: &Derived, q: &str) -> bool {
        d.missing.iter().any(|m| m.quantity == q)
    }

    #[test]
    fn fp32_fp64_fp16_weights() {
        let d = dispatch(&[
            ("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 10.0),
            ("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", 20.0),
            ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 30.0),
            ("sm__sass_thread_inst_executed_op_dadd_pred_on.sum", 1.0),
            ("sm__sass_thread_inst_executed_op_dmul_pred_on.sum", 2.0),
            ("sm__sass_thread_inst_executed_op_dfma_pred_on.sum", 3.0),
            ("smsp__sass_thread_inst_executed_op_hadd_pred_on.sum", 5.0),
            ("smsp__sass_thread_inst_executed_op_hmul_pred_on.sum", 6.0),
            ("smsp__sass_thread_inst_executed_op_hfma_pred_on.sum", 7.0),
        ]);
        let r = derive(&d, &DeviceInfo::default());
        // 10 + 20 + 2·30 = 90; 1 + 2 + 2·3 = 9; 2·5 + 2·6 + 4·7 = 50.
        assert_eq!(r.flops.vector["fp32"], 90.0);
        assert_eq!(r.flops.vector["fp64"], 9.0);
        assert_eq!(r.flops.vector["fp16"], 50.0);
        assert!(!missing(&r, "flops.vector"));
        assert!(missing(&r, "flops.matrix"));
    }

    /// A `--set full` raw page (Nsight Compute 2025, H200) has the FP instruction rates
    /// of the roofline chart and not their `.sum`: the counts are rate × elapsed cycles.
    /// Values of `rt_triad_f32` (a[i] = b[i] + s·c[i] over n = 16 Mi floats) as that file
    /// printed them; the oracle is the kernel itself: one FFMA per element, so
    /// 2 × 16 777 216 = 33 554 432 FLOPs.
    #[test]
    fn fp_counts_from_rates_when_the_sum_was_not_collected() {
        let d = dispatch(&[
            ("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed", 0.0),
            ("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed", 0.0),
            ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed", 154.126_929),
            ("smsp__cycles_elapsed.avg", 108_853.242_424),
        ]);
        let r = derive(&d, &DeviceInfo::default());
        let fp32 = r.flops.vector["fp32"];
        assert!((fp32 / 33_554_432.0 - 1.0).abs() < 1e-4, "{fp32}");
        assert!(r.formulas.iter().any(|f| f.contains("per_cycle_elapsed")), "{:?}", r.formulas);
        // Without the elapsed cycles the rate cannot be turned into a count.
        let d = dispatch(&[
            ("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed", 0.0),
            ("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed", 0.0),
            ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed", 154.1),
        ]);
        let r = derive(&d, &DeviceInfo::default());
        assert!(r.flops.vector.is_empty());
        assert!(missing(&r, "flops.vector"));
    }

    #[test]
    fn partial_precision_is_missing_not_undercounted() {
        let d = dispatch(&[
            ("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 10.0),
            ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 30.0),
        ]);
        let r = derive(&d, &DeviceInfo::default());
        assert!(r.flops.vector.is_empty());
        let m = r.missing.iter().find(|m| m.quantity == "flops.vector.fp32").unwrap();
        assert!(m.needs.contains("op_fmul_pred_on"), "{}", m.needs);
    }

    #[test]
    fn no_flop_metrics_at_all() {
        let r = derive(&dispatch(&[]), &DeviceInfo::default());
        assert!(r.flops.is_empty());
        assert!(missing(&r, "flops.vector"));
        assert!(missing(&r, "duration_ns"));
    }

    #[test]
    fn dram_bytes_and_sectors() {
        let d = dispatch(&[("dram__bytes_read.sum", 4096.0), ("dram__sectors_write.sum", 10.0)]);
        let r = derive(&d, &DeviceInfo::default());
        assert_eq!(r.dram_bytes_read, Some(4096.0));
        assert_eq!(r.dram_bytes_written, Some(320.0)); // 10 sectors × 32 B
        assert_eq!(r.dram_bytes(), Some(4416.0));
    }

    #[test]
    fn dram_total_only_cannot_be_split() {
        let r = derive(&dispatch(&[("dram__bytes.sum", 1000.0)]), &DeviceInfo::default());
        assert_eq!(r.dram_bytes_read, None);
        assert_eq!(r.dram_bytes_written, None);
        let m = r.missing.iter().find(|m| m.quantity == "dram_bytes_read").unwrap();
        assert!(m.needs.contains("1.00 kB: dram__bytes.sum"), "{}", m.needs);
        assert!(missing(&r, "dram_bytes_written"));
        // The total still gives the traffic.
        assert_eq!(r.dram_bytes(), Some(1000.0));
    }

    #[test]
    fn dram_total_and_one_side() {
        let d = dispatch(&[("dram__bytes.sum", 1000.0), ("dram__bytes_read.sum", 600.0)]);
        let r = derive(&d, &DeviceInfo::default());
        assert_eq!(r.dram_bytes_written, Some(400.0));
        assert!(r.formulas.iter().any(|f| f.contains("dram__bytes.sum − dram__bytes_read.sum")));
    }

    #[test]
    fn cache_and_shared_bytes() {
        let d = dispatch(&[
            ("lts__t_sectors.sum", 100.0),
            ("l1tex__t_bytes.sum", 8192.0),
            ("sm__sass_data_bytes_mem_shared_op_ld.sum", 512.0),
            ("sm__sass_data_bytes_mem_shared_op_st.sum", 256.0),
        ]);
        let r = derive(&d, &DeviceInfo::default());
        assert_eq!(r.l2_bytes, Some(3200.0));
        assert_eq!(r.l1_bytes, Some(8192.0));
        assert_eq!(r.lds_bytes, Some(768.0));
    }

    #[test]
    fn tensor_ops_by_source_type() {
        let d = dispatch(&[
            ("sm__ops_path_tensor_src_fp16_dst_fp32.sum", 1000.0),
            ("sm__ops_path_tensor_src_fp16_dst_fp16.sum", 24.0),
            ("sm__ops_path_tensor_src_bf16_dst_fp32.sum", 7.0),
            ("sm__ops_path_tensor_src_int8.sum", 50.0),
            // Rates and percentages of the same path are not counts.
            ("sm__ops_path_tensor_src_int8.sum.per_second", 9e9),
            ("sm__ops_path_tensor_src_fp16_dst_fp32.sum.pct_of_peak_sustained_elapsed", 3.0),
        ]);
        let r = derive(&d, &DeviceInfo::default());
        assert_eq!(r.flops.matrix["fp16"], 1024.0);
        assert_eq!(r.flops.matrix["bf16"], 7.0);
        assert_eq!(r.flops.matrix["int8"], 50.0);
        assert_eq!(r.flops.matrix.len(), 3);
        assert!(!missing(&r, "flops.matrix"));
    }

    #[test]
    fn tensor_plain_total_wins_over_destinations() {
        let d = dispatch(&[
            ("sm__ops_path_tensor_src_fp16.sum", 100.0),
            ("sm__ops_path_tensor_src_fp16_dst_fp32.sum", 60.0),
            ("sm__ops_path_tensor_src_fp16_dst_fp16.sum", 40.0),
        ]);
        let r = derive(&d, &DeviceInfo::default());
        assert_eq!(r.flops.matrix["fp16"], 100.0);
    }

    #[test]
    fn tensor_instruction_counts_are_not_flops() {
        let d = dispatch(&[("sm__inst_executed_pipe_tensor_op_hmma.sum", 32768.0)]);
        let r = derive(&d, &DeviceInfo::default());
        assert!(r.flops.matrix.is_empty());
        let m = r.missing.iter().find(|m| m.quantity == "flops.matrix").unwrap();
        assert!(m.needs.contains("MMA shape"), "{}", m.needs);
    }

    /// The `compute` / `roofline` presets' counters on a tensor GEMM: vector op counts
    /// (all 0) and `sm__inst_executed_pipe_tensor.sum`, no tensor op counter. The vector
    /// sum (0 FLOPs) would call a tensor GEMM memory-bound; the total is missing instead.
    /// The counter that says the tensor pipe ran is the first in name order of all a
    /// dispatch holds, as a pass over every counter finds it (the oracle here), whichever
    /// of the prefix stretches it is in: every subset of counters from each stretch and
    /// around them, each at a value that counts, one that does not, and NaN.
    #[test]
    fn tensor_activity_is_the_first_counter_in_name_order() {
        let names = [
            "sm__inst_executed_pipe_tensor.sum",
            "sm__inst_executed_pipe_tensor_op_hmma.sum",
            "sm__inst_executed_pipe_tensor.avg",
            "sm__ops_path_tensor_op_hmma_src_fp16.sum",
            "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
            "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
            "smsp__inst_executed_pipe_tensor.sum",
            "smsp__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
            "sm__ops_path_tensor_src_fp16.sum",
            "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
        ];
        let oracle = |d: &Dispatch| {
            d.counters.iter().filter(|(_, v)| v.is_finite() && **v > 0.0).find_map(|(k, v)| {
                let count = k.ends_with(".sum") && TENSOR_COUNTS.iter().any(|p| k.starts_with(p));
                let busy = (k.starts_with("sm__pipe_tensor") || k.starts_with("smsp__pipe_tensor"))
                    && k.contains("cycles_active.avg.pct_of_peak_sustained_")
                    && *v >= TENSOR_BUSY_PCT;
                (count || busy).then(|| (k.to_string(), *v))
            })
        };
        let mut found = 0;
        for mask in 0u32..1 << names.len() {
            for value in [50.0, 5.0, f64::NAN] {
                let counters: Vec<(&str, f64)> = names
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| mask >> i & 1 == 1)
                    // Each name its own value, so that a wrong pick shows in the value too.
                    .map(|(i, n)| (*n, if i % 2 == 0 { value } else { value * 2.0 }))
                    .collect();
                let d = dispatch(&counters);
                let got = tensor_activity(&d).map(|(k, v)| (k.to_string(), v));
                assert_eq!(got, oracle(&d), "{counters:?}");
                found += usize::from(got.is_some());
            }
        }
        assert!(found > 1000, "{found}");
    }

    /// Values of the H200 nvjet GEMM (2 097 152 tensor instructions; its full export
    /// counts 2·4096³ = 137 438 953 472 bf16 ops, which nothing here can recover).
    #[test]
    fn tensor_pipe_ran_without_op_counters_makes_the_total_missing() {
        let names: Vec<String> =
            ["fadd", "fmul", "ffma", "dadd", "dmul", "dfma", "hadd", "hmul", "hfma"]
                .iter()
                .map(|op| format!("smsp__sass_thread_inst_executed_op_{op}_pred_on.sum"))
                .collect();
        let mut c = vec![("sm__inst_executed_pipe_tensor.sum", 2_097_152.0)];
        c.extend(names.iter().map(|n| (n.as_str(), 0.0)));
        let r = derive(&dispatch(&c), &DeviceInfo::default());
        assert!(r.flops.is_empty(), "{:?}", r.flops);
        assert_eq!(r.flops_total(), None);
        let why = r.flops_incomplete().expect("a reason");
        assert!(why.contains("sm__inst_executed_pipe_tensor.sum = 2097152"), "{why}");
        assert!(why.contains("sm__ops_path_tensor_src_"), "{why}");
        // Zero tensor instructions: the vector count is the whole count (0 + 0 + 2·0).
        c[0].1 = 0.0;
        let r = derive(&dispatch(&c), &DeviceInfo::default());
        assert_eq!(r.flops_total(), Some(0.0));
        assert!(r.flops_incomplete().is_none());
    }

    /// Op counters of precisions the kernel did not run (all 0) do not count its tensor
    /// work either; a little pipe activity (the fixtures' fp32 kernels read 0.2-2.4%)
    /// is not tensor work, a busy pipe is.
    #[test]
    fn zero_op_counters_and_pipe_activity() {
        let base = [
            ("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 10.0),
            ("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", 0.0),
            ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 5.0),
            ("sm__ops_path_tensor_src_fp16.sum", 0.0),
        ];
        let with = |extra: (&'static str, f64)| {
            let mut c = base.to_vec();
            c.push(extra);
            derive(&dispatch(&c), &DeviceInfo::default())
        };
        let r = with(("sm__inst_executed_pipe_tensor_op_gmma.sum", 64.0));
        assert!(r.flops_incomplete().unwrap().contains("count 0"), "{:?}", r.missing);
        let r = with(("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", 2.43));
        // 10 + 0 + 2·5 = 20 vector FLOPs, and the fp16 tensor path's 0.
        assert_eq!(r.flops_total(), Some(20.0));
        let r = with(("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", 95.0));
        assert_eq!(r.flops_total(), None);
        // A peak is not activity.
        let r = with(("sm__ops_path_tensor_op_bgmma_src_int1.avg.peak_sustained", 65536.0));
        assert_eq!(r.flops_total(), Some(20.0));
    }

    /// A vector precision with work but part of its counts absent makes the total
    /// missing, not the sum of the other precisions.
    #[test]
    fn partial_vector_precision_with_work_makes_the_total_missing() {
        let d = dispatch(&[
            ("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 10.0),
            ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 30.0),
            ("sm__ops_path_tensor_src_bf16_dst_fp32.sum", 4096.0),
        ]);
        let r = derive(&d, &DeviceInfo::default());
        assert_eq!(r.flops_total(), None);
        assert!(r.flops_incomplete().unwrap().contains("fp32"), "{:?}", r.missing);
    }

    /// Ada and Hopper split the fp8 path by sparsity
    /// (`sm__ops_path_tensor_src_fp8_sparsity_{off,on}.sum`): both halves are fp8 ops,
    /// 1000 + 24 = 1024; a destination's own total wins over its halves (60 + 40 = 100,
    /// not 100 + 60 + 40); the per-instruction `_op_hgmma_` breakdown of the same work
    /// is not added.
    #[test]
    fn tensor_sparsity_halves() {
        let d = dispatch(&[
            ("sm__ops_path_tensor_src_fp8_sparsity_off.sum", 1000.0),
            ("sm__ops_path_tensor_src_fp8_sparsity_on.sum", 24.0),
            ("sm__ops_path_tensor_src_bf16_dst_fp32.sum", 100.0),
            ("sm__ops_path_tensor_src_bf16_dst_fp32_sparsity_off.sum", 60.0),
            ("sm__ops_path_tensor_src_bf16_dst_fp32_sparsity_on.sum", 40.0),
            ("sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_off.sum", 7.0),
            ("sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum", 60.0),
            ("sm__ops_path_tensor_src_fp8_sparsity_off.sum.per_second", 9e12),
        ]);
        let r = derive(&d, &DeviceInfo::default());
        assert_eq!(r.flops.matrix["fp8"], 1024.0);
        assert_eq!(r.flops.matrix["bf16"], 100.0);
        assert_eq!(r.flops.matrix["fp16"], 7.0);
        assert_eq!(r.flops.matrix.len(), 3);
        assert_eq!(r.flops_total(), Some(1131.0));
        assert_eq!(
            tensor_path("sm__ops_path_tensor_src_fp8_sparsity_on.sum"),
            Some(TensorPath { src: "fp8".into(), dst: None, sparsity: Some(true) })
        );
        assert_eq!(tensor_path("sm__ops_path_tensor_src_fp8_sparsity_maybe.sum"), None);
    }

    #[test]
    fn coalescing_and_bank_conflicts() {
        let d = dispatch(&[
            ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 1600.0),
            ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 100.0),
            ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", 30.0),
            ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", 120.0),
        ]);
        let r = derive(&d, &DeviceInfo::default());
        let c = r.coalescing.unwrap();
        // 1600 / 100 = 16 sectors per request × 32 B = 512 B, against 128 B.
        assert_eq!(c.bytes_per_request, 512.0);
        assert_eq!(c.ideal_bytes_per_request, 128.0);
        assert_eq!(r.lds_bank_conflict_pct, Some(25.0)); // 100 × 30 / 120
    }

    #[test]
    fn zero_requests_is_neither_value_nor_missing() {
        let d = dispatch(&[
            ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 0.0),
            ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 0.0),
        ]);
        let r = derive(&d, &DeviceInfo::default());
        assert!(r.coalescing.is_none());
        assert!(!missing(&r, "coalescing"));
    }

    #[test]
    fn occupancy_hit_rates_waves() {
        let d = dispatch(&[
            ("sm__warps_active.avg.pct_of_peak_sustained_active", 61.5),
            ("sm__maximum_warps_per_active_cycle_pct", 75.0),
            ("l1tex__t_sector_hit_rate.pct", 12.5),
            ("lts__t_sector_hit_rate.pct", 80.25),
            ("launch__waves_per_multiprocessor", 3.7),
            ("gpu__time_duration.sum", 1234.0),
        ]);
        let r = derive(&d, &DeviceInfo::default());
        assert_eq!(r.achieved_occupancy_pct, Some(61.5));
        assert_eq!(r.theoretical_occupancy_pct, Some(75.0));
        assert_eq!(r.l1_hit_rate_pct, Some(12.5));
        assert_eq!(r.l2_hit_rate_pct, Some(80.25));
        assert_eq!(r.grid_waves, Some(3.7));
        assert_eq!(r.duration_ns, Some(1234.0));
    }

    #[test]
    fn waves_from_occupancy_limits_and_warps_from_launch() {
        let mut d = dispatch(&[
            ("launch__occupancy_limit_registers", 4.0),
            ("launch__occupancy_limit_shared_mem", 3.0),
            ("launch__occupancy_limit_warps", 8.0),
            ("launch__occupancy_limit_blocks", 32.0),
        ]);
        d.grid = Some([648, 1, 1]);
        d.block = Some([96, 1, 1]);
        let dev = DeviceInfo { compute_units: Some(108), ..DeviceInfo::default() };
        let r = derive(&d, &dev);
        // 648 blocks / (108 SMs × min(4, 3, 8, 32) = 3) = 2 waves.
        assert_eq!(r.grid_waves, Some(2.0));
        // 648 blocks × ⌈96 / 32⌉ = 1944 warps.
        assert_eq!(r.waves_launched, Some(1944.0));
    }

    #[test]
    fn dispatch_duration_wins_and_rollups_fall_back() {
        let mut d = dispatch(&[("gpu__time_duration.max", 500.0)]);
        assert_eq!(derive(&d, &DeviceInfo::default()).duration_ns, Some(500.0));
        d.duration_ns = Some(400.0);
        assert_eq!(derive(&d, &DeviceInfo::default()).duration_ns, Some(400.0));
    }

    #[test]
    fn non_finite_counters_are_ignored() {
        let d =
            dispatch(&[("lts__t_bytes.sum", f64::NAN), ("dram__bytes_read.sum", f64::INFINITY)]);
        let r = derive(&d, &DeviceInfo::default());
        assert_eq!(r.l2_bytes, None);
        assert_eq!(r.dram_bytes_read, None);
    }
}

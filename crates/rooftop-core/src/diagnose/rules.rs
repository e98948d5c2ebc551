//! The diagnosis rules. Each rule reads the analysis numbers and pushes at most one
//! finding with its time at stake (which grades it, see [`super::finding`]); thresholds
//! are named constants with their source.

use super::{Finding, Stake, WindowKind};
use crate::device::DeviceSpec;
use crate::gemm_tiles::TileEfficiency;
use crate::occupancy::{Limiter, Occupancy};
use crate::ops::quant::DequantFusion;
use crate::ops::{OpClass, Work};
use crate::roofline::{Bound, Roofline};
use crate::units::{pct, si, sig3, us, ExecUnit};

/// From 70% of peak bandwidth a memory-bound kernel is near its roof (rooftop's convention,
/// docs/reference/formulas.md#diagnosis-thresholds-rooftops-conventions).
const NEAR_PEAK_PCT: f64 = 70.0;
/// Below 30% of peak bandwidth something is badly wrong (rooftop's convention, same table).
const MAJOR_ISSUE_PCT: f64 = 30.0;
/// Theoretical occupancy below 50% leaves little latency hiding (rooftop's convention,
/// same table; the rules per architecture are docs/reference/occupancy.md).
const LOW_OCCUPANCY_PCT: f64 = 50.0;
/// Work whose floor is below this is dominated by launch cost: launches cost microseconds
/// on every GPU API (CUDA/HIP ~2-10 µs end to end, Metal more; same table).
const LAUNCH_OVERHEAD_US: f64 = 5.0;
/// Tile or wave efficiency below this is worth a finding (10% of the MMA work lost).
const QUANTIZATION_EFF: f64 = 0.9;

/// What the rules look at.
#[derive(Debug, Clone, Copy)]
pub struct DiagnoseInput<'a> {
    pub device: &'a DeviceSpec,
    pub work: &'a Work,
    pub roofline: &'a Roofline,
    pub tiles: Option<&'a TileEfficiency>,
    pub occupancy: Option<&'a Occupancy>,
    /// Fused vs unfused dequantization traffic, for quantized GEMMs.
    pub dequant_fusion: Option<&'a DequantFusion>,
}

/// The bandwidth efficiency an op class usually reaches
/// (docs/reference/formulas.md#diagnosis-thresholds-rooftops-conventions).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExpectedBand {
    pub low_pct: f64,
    pub high_pct: f64,
    /// The class's name as findings print it.
    pub label: &'static str,
}

/// The usual bandwidth efficiency of memory-bound op classes (rooftop's convention, the
/// "below its class's usual band" row of docs/reference/formulas.md).
pub fn expected_band(class: OpClass) -> Option<ExpectedBand> {
    let (low_pct, high_pct, label) = match class {
        OpClass::Elementwise | OpClass::Copy => (70.0, 90.0, "element-wise"),
        OpClass::RmsNorm | OpClass::LayerNorm => (50.0, 80.0, "row reduction (RMSNorm, LayerNorm)"),
        OpClass::Reduction => (50.0, 80.0, "row reduction"),
        OpClass::Softmax => (40.0, 70.0, "softmax (3-pass)"),
        OpClass::Attention => (30.0, 60.0, "tiled attention"),
        OpClass::QuantizedMatvec => (40.0, 70.0, "quantized matvec"),
        OpClass::Gemm | OpClass::QuantizedGemm | OpClass::Conv => return None,
    };
    Some(ExpectedBand { low_pct, high_pct, label })
}

/// Runs every rule and returns the findings in [`super::rank`] order.
pub fn diagnose(input: &DiagnoseInput<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    below_floor(input, &mut out);
    launch_overhead(input, &mut out);
    bandwidth_tree(input, &mut out);
    class_band(input, &mut out);
    compute_utilisation(input, &mut out);
    fp32_on_vector(input, &mut out);
    tiles(input, &mut out);
    occupancy(input, &mut out);
    fusion(input, &mut out);
    dequant_fusion(input, &mut out);
    super::rank(&mut out);
    out
}

/// A finding graded by `stake` with `expected_gain`.
fn graded(
    id: &'static str,
    title: impl Into<String>,
    evidence: impl Into<String>,
    recommendation: impl Into<String>,
    expected_gain: Option<String>,
    stake: Option<Stake>,
) -> Finding {
    Finding::new(id, title, evidence, recommendation, stake).with_gain(expected_gain)
}

/// The kernel's gap to its roofline floor (`time − floor` of the measured time) while it
/// reaches less than [`NEAR_PEAK_PCT`] of its roofline; from there it is near-optimal
/// and no time is claimed.
fn gap(r: &Roofline) -> Option<Stake> {
    let a = r.achieved.as_ref()?;
    if a.roofline_attainment_pct >= NEAR_PEAK_PCT {
        return None;
    }
    Stake::new(a.time_us - r.floor_time_us, a.time_us, WindowKind::Kernel)
}

/// The share `1 − efficiency` of the kernel's time: the measured time, or without one
/// the modelled time (the floor with the padded work, `floor / efficiency`).
fn padded(r: &Roofline, efficiency: f64) -> Option<Stake> {
    let waste = 1.0 - efficiency;
    if let Some(a) = &r.achieved {
        Stake::new(a.time_us * waste, a.time_us, WindowKind::Kernel)
    } else {
        let window = r.floor_time_us / efficiency;
        Stake::new(window * waste, window, WindowKind::Model)
    }
}

fn gbs(v: f64) -> String {
    si(v * 1e9, "B/s")
}

/// The class as a noun phrase with its article: "an element-wise kernel", "a GEMM".
pub(crate) fn class_noun(class: OpClass) -> &'static str {
    match class {
        OpClass::Gemm => "a GEMM",
        OpClass::QuantizedGemm => "a quantized GEMM",
        OpClass::QuantizedMatvec => "a quantized matrix-vector product",
        OpClass::Attention => "an attention kernel",
        OpClass::Conv => "a convolution",
        OpClass::RmsNorm => "an RMSNorm",
        OpClass::LayerNorm => "a LayerNorm",
        OpClass::Softmax => "a softmax",
        OpClass::Elementwise => "an element-wise kernel",
        OpClass::Reduction => "a reduction",
        OpClass::Copy => "a copy",
    }
}

/// The class without its article: "element-wise kernel", "GEMM".
fn class_name(class: OpClass) -> &'static str {
    let n = class_noun(class);
    n.split_once(' ').map_or(n, |(_, rest)| rest)
}

/// "up to 1.8× (42.0 µs → 23.6 µs)" for a time that could drop to `target_us`.
fn gain(time_us: f64, target_us: f64, what: &str) -> Option<String> {
    if !(target_us > 0.0 && time_us > target_us) {
        return None;
    }
    Some(format!(
        "up to {}× ({} → {} {what})",
        sig3(time_us / target_us),
        us(time_us),
        us(target_us)
    ))
}

fn below_floor(i: &DiagnoseInput<'_>, out: &mut Vec<Finding>) {
    let Some(a) = &i.roofline.achieved else { return };
    if a.roofline_attainment_pct <= 100.0 + 1e-9 {
        return;
    }
    // A measured (calibrated) roof is itself a benchmark result: a kernel can beat it by
    // run-to-run noise or a friendlier access pattern without anything being wrong.
    let roof_meta = match i.roofline.bound {
        crate::roofline::Bound::Compute => i.roofline.compute_roof.as_ref().map(|r| &r.meta),
        _ => Some(&i.roofline.bandwidth_meta),
    };
    if roof_meta.is_some_and(|m| {
        matches!(
            m.provenance,
            crate::units::Provenance::Calibrated | crate::units::Provenance::Measured
        )
    }) {
        if a.roofline_attainment_pct > 110.0 {
            // No time at stake: beating a measured roof by more than its noise says the
            // roof is low, not that time is lost.
            out.push(Finding::new(
                "roofline.above_measured_ceiling",
                "Above the measured ceiling",
                format!(
                    "it ran in {}, faster than the floor of {} on the measured roofs ({} \
                     attainment); the roof: {}",
                    us(a.time_us),
                    us(i.roofline.floor_time_us),
                    pct(a.roofline_attainment_pct),
                    roof_meta.map_or("", |m| m.source.as_str())
                ),
                "A measured roof is itself a benchmark: measure the ceilings again on a quiet \
                 machine (`rooftop ceilings`), and check whether this kernel's data fits in a \
                 cache, whose roof is higher.",
                None,
            ));
        }
        return;
    }
    let cache_note = match i.device.l2_bytes {
        Some(l2) if i.roofline.bytes <= l2 as f64 => format!(
            " The {} of traffic fit in the {} L2, so repeated runs may be served from cache \
             rather than {}.",
            si(i.roofline.bytes, "B"),
            si(l2 as f64, "B"),
            i.device.mem_type.as_deref().unwrap_or("device memory")
        ),
        _ => String::new(),
    };
    // Every number of the analysis rests on the model and the roofs this time refutes:
    // the whole measured time is at stake.
    out.push(Finding::new(
        "roofline.faster_than_floor",
        "Faster than the hardware allows",
        format!(
            "it ran in {}, below the floor of {} ({} attainment).{cache_note}",
            us(a.time_us),
            us(i.roofline.floor_time_us),
            pct(a.roofline_attainment_pct)
        ),
        "Check the inputs: the work model (shape, dtype, bits), the device (clock, SKU), and \
         that the time covers the whole kernel; flush caches between timed runs.",
        Stake::whole(a.time_us, WindowKind::Kernel),
    ));
}

/// Whether the measured time of a kernel whose work needs less than a launch costs is
/// itself within a few launch costs (and under half its roofline): the launch is then the
/// diagnosis, and the bandwidth findings, whose gains assume the time can fall to a
/// share of the floor, do not apply.
fn launch_bound(i: &DiagnoseInput<'_>) -> bool {
    i.roofline.floor_time_us < LAUNCH_OVERHEAD_US
        && i.roofline.achieved.as_ref().is_some_and(|a| {
            a.time_us < 4.0 * LAUNCH_OVERHEAD_US && a.roofline_attainment_pct < 50.0
        })
}

fn launch_overhead(i: &DiagnoseInput<'_>, out: &mut Vec<Finding>) {
    let floor = i.roofline.floor_time_us;
    if floor >= LAUNCH_OVERHEAD_US {
        return;
    }
    let (stake, evidence) = match &i.roofline.achieved {
        Some(a) if launch_bound(i) => (
            gap(i.roofline),
            format!(
                "the work alone needs {} but the kernel took {}: most of the time is the fixed \
                 cost of a launch (a few µs)",
                us(floor),
                us(a.time_us)
            ),
        ),
        Some(_) => return,
        None => (
            None,
            format!(
                "the work alone needs {}, less than the ~{} a kernel launch costs",
                us(floor),
                us(LAUNCH_OVERHEAD_US)
            ),
        ),
    };
    out.push(Finding::new(
        "launch.overhead",
        "Launch overhead dominates this size",
        evidence,
        "Batch more work per launch, fuse with neighbouring kernels, capture launches in a \
         CUDA/HIP graph, or send small tensors to a library op (a size check in front of a \
         custom kernel).",
        stake,
    ));
}

fn memory_limited(r: &Roofline) -> bool {
    matches!(r.bound, Bound::Memory | Bound::Balanced)
}

fn bandwidth_tree(i: &DiagnoseInput<'_>, out: &mut Vec<Finding>) {
    let r = i.roofline;
    let Some(a) = &r.achieved else { return };
    if !memory_limited(r) || a.roofline_attainment_pct > 100.0 + 1e-9 || launch_bound(i) {
        return;
    }
    let util = a.memory_utilization_pct;
    let evidence = format!(
        "it moves {} against a roof of {} ({}); at {} FLOP/B{}",
        gbs(a.achieved_gbs),
        gbs(r.bandwidth_gbs),
        pct(util),
        sig3(r.arithmetic_intensity),
        r.ridge_point
            .map(|p| format!(", below the ridge point of {} FLOP/B, memory is the limit", sig3(p)))
            .unwrap_or_default()
    );
    let at = |target_pct: f64| a.time_us * util / target_pct;
    let f = if util >= NEAR_PEAK_PCT {
        Finding::new(
            "bandwidth.near_peak",
            "Near the bandwidth roof",
            evidence,
            "The kernel is near-optimal for a memory-bound op. To go faster, move fewer bytes: \
             fuse with adjacent operations (e.g. RMSNorm + residual add), keep intermediates \
             in registers or shared memory, or use a narrower dtype.",
            gap(r),
        )
        .with_gain(gain(a.time_us, r.memory_floor_us, "at 100% of peak bandwidth"))
    } else if util >= MAJOR_ISSUE_PCT {
        Finding::new(
            "bandwidth.room",
            "Bandwidth below what the hardware allows",
            evidence,
            "Check that adjacent threads read adjacent addresses (coalescing, 16-byte vector \
             loads), autotune the block/threadgroup size from 32 to 1024, remove unnecessary \
             barriers, and cache re-read values in registers.",
            gap(r),
        )
        .with_gain(gain(a.time_us, at(NEAR_PEAK_PCT), "at 70% of peak bandwidth"))
    } else {
        Finding::new(
            "bandwidth.low",
            "Far below the bandwidth roof",
            evidence,
            "Look for a major issue: a grid too small to fill the GPU (too few blocks or \
             threads), launch overhead on a small tensor, a hidden copy of a non-contiguous \
             input, or register spilling to memory.",
            gap(r),
        )
        .with_gain(gain(a.time_us, at(NEAR_PEAK_PCT), "at 70% of peak bandwidth"))
    };
    out.push(f);
}

fn class_band(i: &DiagnoseInput<'_>, out: &mut Vec<Finding>) {
    let r = i.roofline;
    let (Some(a), Some(band)) = (&r.achieved, expected_band(i.work.class)) else { return };
    if !memory_limited(r) || a.roofline_attainment_pct > 100.0 + 1e-9 || launch_bound(i) {
        return;
    }
    let util = a.memory_utilization_pct;
    // Rooftop's "likely wrong" convention (docs/reference/formulas.md): RMSNorm under 40%
    // of peak bandwidth; element-wise should be within 2x of peak.
    let hard_floor = match i.work.class {
        OpClass::RmsNorm => {
            Some((40.0, "an RMSNorm under 40% of peak bandwidth usually has a bug"))
        }
        OpClass::Elementwise | OpClass::Copy => {
            Some((50.0, "an element-wise kernel should reach half the peak bandwidth or more"))
        }
        _ => None,
    };
    if let Some((limit, rule)) = hard_floor {
        if util < limit {
            out.push(
                Finding::new(
                    "class.likely_wrong",
                    format!("Too slow for {}", class_noun(i.work.class)),
                    format!("{} of peak bandwidth, and {rule}", pct(util)),
                    "Compare with the framework's built-in kernel on the same input and check \
                     the launch configuration and memory access pattern before tuning \
                     anything else.",
                    gap(r),
                )
                .with_gain(gain(
                    a.time_us,
                    a.time_us * util / band.low_pct,
                    "at the low end of the expected band",
                )),
            );
            return;
        }
    }
    if util < band.low_pct {
        out.push(
            Finding::new(
                "class.below_expected",
                format!("Below the usual band for {}", band.label),
                format!(
                    "{} of peak bandwidth, where {} kernels usually reach {}–{}",
                    pct(util),
                    band.label,
                    pct(band.low_pct),
                    pct(band.high_pct)
                ),
                "Well-written kernels of this class reach the band; profile the memory access \
                 pattern and the launch configuration.",
                gap(r),
            )
            .with_gain(gain(
                a.time_us,
                a.time_us * util / band.low_pct,
                "at the low end of the expected band",
            )),
        );
    }
}

fn compute_utilisation(i: &DiagnoseInput<'_>, out: &mut Vec<Finding>) {
    let r = i.roofline;
    let (Some(a), Some(roof)) = (&r.achieved, &r.compute_roof) else { return };
    if r.bound != Bound::Compute || a.roofline_attainment_pct > 100.0 + 1e-9 {
        return;
    }
    let util = a.compute_utilization_pct;
    let evidence = format!(
        "achieved {} of the {} {} {} peak ({}); intensity {} FLOP/B {}",
        si(a.achieved_tflops * 1e12, "FLOP/s"),
        si(roof.tflops * 1e12, "FLOP/s"),
        roof.precision,
        roof.unit,
        pct(util),
        sig3(r.arithmetic_intensity),
        r.ridge_point.map_or_else(
            || "(no memory roof: the bandwidth was not measured)".to_string(),
            |x| format!("is above the ridge point {}", sig3(x))
        )
    );
    let target = |p: f64| a.time_us * util / p;
    let f = if util >= NEAR_PEAK_PCT {
        Finding::new(
            "compute.near_peak",
            "Near the compute roof",
            evidence,
            "Little is left on this roof: a lower precision (FP8/INT8 where accuracy allows) \
             or less work (algorithmic changes) are the remaining levers.",
            gap(r),
        )
        .with_gain(gain(a.time_us, r.compute_floor_us, "at 100% of peak"))
    } else {
        Finding::new(
            "compute.low",
            "Compute-bound but below the compute roof",
            evidence,
            "Increase parallelism (more warps/simdgroups per block), use the matrix units \
             (tensor cores / MFMA / simdgroup_matrix) for dense products, cut register \
             pressure that limits occupancy, and fuse to save launches; accumulate in FP32 \
             with FP16/BF16 inputs.",
            gap(r),
        )
        .with_gain(gain(a.time_us, target(NEAR_PEAK_PCT), "at 70% of peak"))
    };
    out.push(f);
}

fn fp32_on_vector(i: &DiagnoseInput<'_>, out: &mut Vec<Finding>) {
    let r = i.roofline;
    let Some(roof) = &r.compute_roof else { return };
    if !matches!(i.work.class, OpClass::Gemm | OpClass::Conv | OpClass::Attention)
        || roof.unit != ExecUnit::Vector
        || r.bound == Bound::Memory
    {
        return;
    }
    let best = i
        .device
        .peaks
        .iter()
        .filter(|p| p.unit == ExecUnit::Matrix && !p.precision.is_integer())
        .filter(|p| {
            matches!(
                p.precision,
                crate::units::Precision::Tf32
                    | crate::units::Precision::Bf16
                    | crate::units::Precision::Fp16
            )
        })
        .max_by(|a, b| a.tflops.total_cmp(&b.tflops));
    let Some(best) = best else { return };
    if best.tflops <= roof.tflops * 1.5 {
        return;
    }
    // The step that changes the arithmetic least comes first: the same FP32 on the matrix
    // units (CDNA's MFMA), else TF32 (tensor cores, a 10-bit mantissa).
    let fp32 = roof.precision == crate::units::Precision::Fp32;
    let same = i.device.peak(crate::units::Precision::Fp32, ExecUnit::Matrix).filter(|_| fp32);
    let tf32 = i.device.peak(crate::units::Precision::Tf32, ExecUnit::Matrix).filter(|_| fp32);
    let first = match (same, tf32) {
        (Some(m), _) if m.tflops > roof.tflops => format!(
            "The fp32 matrix roof (MFMA) is {}, at the same precision: rocBLAS and \
             hipBLASLt run FP32 GEMMs there, so if this kernel does, analyse it on that roof \
             (`--matrix-units`). ",
            si(m.tflops * 1e12, "FLOP/s")
        ),
        (_, Some(t)) if t.tflops > roof.tflops => format!(
            "The TF32 matrix roof is {}: allow TF32 (PyTorch: \
             torch.backends.cuda.matmul.allow_tf32 = True or \
             torch.set_float32_matmul_precision(\"high\")) if a 10-bit mantissa is \
             enough. ",
            si(t.tflops * 1e12, "FLOP/s")
        ),
        _ => String::new(),
    };
    out.push(graded(
        "compute.matrix_units_unused",
        "Matrix units available",
        format!(
            "this {} runs on the {} vector roof ({}); the device's {} matrix roof is {}",
            class_name(i.work.class),
            roof.precision,
            si(roof.tflops * 1e12, "FLOP/s"),
            best.precision,
            si(best.tflops * 1e12, "FLOP/s")
        ),
        format!(
            "{first}If accuracy allows, run it as {} on the matrix units \
             (PyTorch: autocast; JAX: jax.default_matmul_precision or bfloat16 inputs).",
            best.precision
        ),
        Some(format!("compute roof {}× higher", sig3(best.tflops / roof.tflops))),
        None,
    ));
}

fn tiles(i: &DiagnoseInput<'_>, out: &mut Vec<Finding>) {
    let Some(t) = i.tiles else { return };
    if t.tile_eff < QUANTIZATION_EFF {
        out.push(graded(
            "tiles.tile_quantization",
            "Tile quantization wastes work",
            format!(
                "the {}x{} macro tile pads the problem to {} tiles ({} x {}), so {} of the \
                 computed outputs are padding (tile efficiency {})",
                t.mt_m,
                t.mt_n,
                t.num_tiles,
                t.tiles_m,
                t.tiles_n,
                pct((1.0 - t.tile_eff) * 100.0),
                sig3(t.tile_eff)
            ),
            "Pad the model dimension to a multiple of the tile, or tune the \
             GEMM (hipBLASLt/cuBLASLt heuristics, CUTLASS/CK configs) for a \
             tile that divides M and N.",
            Some(format!("up to {}× on the MMA work", sig3(1.0 / t.tile_eff))),
            padded(i.roofline, t.tile_eff),
        ));
    }
    if let (Some(wq), Some(waves)) = (t.wq_eff, t.waves) {
        if wq < QUANTIZATION_EFF {
            let num_cu = i.device.num_cu;
            out.push(graded(
                "tiles.wave_quantization",
                "Last wave leaves compute units idle",
                format!(
                    "{} tiles on {} {}s run in {} waves, the last one partly empty (wave \
                     efficiency {}, dimension efficiency {})",
                    t.num_tiles,
                    num_cu,
                    i.device.cu_kind,
                    waves,
                    sig3(wq),
                    sig3(t.dim_eff)
                ),
                "Choose a tile (or split-K / stream-K) so the tile count is \
                 close to a multiple of the compute-unit count, or batch \
                 independent GEMMs into one launch.",
                Some(format!("up to {}×", sig3(1.0 / wq))),
                padded(i.roofline, wq),
            ));
        }
    }
}

fn occupancy(i: &DiagnoseInput<'_>, out: &mut Vec<Finding>) {
    let Some(o) = i.occupancy else { return };
    if o.occupancy_pct >= LOW_OCCUPANCY_PCT {
        return;
    }
    let advice = match o.limiter {
        Limiter::Registers => {
            "Reduce registers per thread (__launch_bounds__, -maxrregcount, fewer live \
             accumulators; AMD: amdgpu-waves-per-eu), or accept it if the kernel is \
             compute-bound with enough ILP."
        }
        Limiter::SharedMemory => {
            "Use less shared memory per block: smaller tiles, reuse one buffer across stages \
             with barriers, or split large allocations."
        }
        Limiter::Warps => {
            "Use fewer threads per block so more blocks fit, or more work per thread."
        }
        Limiter::BlockSlots => {
            "Blocks are too small: the per-SM block-slot limit is reached before the warp \
             limit. Use larger blocks (>= 128 threads)."
        }
        Limiter::Barriers => "Use fewer, larger workgroups: the barrier-slot limit binds.",
    };
    let label = if o.estimate { " (estimate)" } else { "" };
    out.push(graded(
        "occupancy.low",
        "Low occupancy",
        format!(
            "{} occupancy{label}: {} blocks per {} and {} of {} warps resident, limited by {}",
            pct(o.occupancy_pct),
            o.blocks_per_cu,
            o.scope.as_str(),
            o.active_warps_per_cu,
            o.max_warps_per_cu,
            limiter_name(o.limiter)
        ),
        format!("{advice} Below 50% there may be too few warps to hide memory latency."),
        None,
        None,
    ));
}

fn limiter_name(l: Limiter) -> &'static str {
    match l {
        Limiter::Warps => "warps per block",
        Limiter::Registers => "registers",
        Limiter::SharedMemory => "shared memory",
        Limiter::BlockSlots => "block slots",
        Limiter::Barriers => "barriers",
    }
}

fn fusion(i: &DiagnoseInput<'_>, out: &mut Vec<Finding>) {
    let r = i.roofline;
    if r.bound != Bound::Memory {
        return;
    }
    let (partner, saved) = match i.work.class {
        // The output of a norm or element-wise op is usually read by the next op: fusing
        // the two removes one write and one read of it.
        OpClass::RmsNorm | OpClass::LayerNorm => {
            ("the residual add before it or the projection after it", 2.0 * i.work.bytes_written)
        }
        OpClass::Elementwise => ("its producer or consumer", 2.0 * i.work.bytes_written),
        OpClass::Softmax => ("the matmuls around it (flash attention)", 2.0 * i.work.bytes_written),
        _ => return,
    };
    if saved <= 0.0 {
        return;
    }
    let t_saved_us = saved / (r.bandwidth_gbs * 1e9) * 1e6;
    out.push(graded(
        "fusion.opportunity",
        "Fusion would save traffic",
        format!(
            "this {} writes {} that the next kernel reads back",
            class_name(i.work.class),
            si(i.work.bytes_written, "B")
        ),
        format!(
            "Fuse with {partner}: the intermediate then stays on chip instead of making a \
             round trip through DRAM."
        ),
        Some(format!(
            "{} less DRAM traffic ({} saved at peak bandwidth)",
            si(saved, "B"),
            us(t_saved_us)
        )),
        None,
    ));
}

fn dequant_fusion(i: &DiagnoseInput<'_>, out: &mut Vec<Finding>) {
    let Some(f) = i.dequant_fusion else { return };
    let m = &f.minimal;
    if m.saving <= 1.0 {
        return;
    }
    let bw = i.roofline.bandwidth_gbs * 1e9;
    let quicker = f
        .as_circulated
        .as_ref()
        .map(|s| {
            format!(
                " (a quicker count, with FP32 dequantized weights, Q4_0 at 2 bits per weight \
                 and the weights read twice, gives {} vs {}, {}×)",
                si(s.unfused_bytes, "B"),
                si(s.fused_bytes, "B"),
                sig3(s.saving)
            )
        })
        .unwrap_or_default();
    out.push(graded(
        "fusion.dequant",
        "Keep dequantization fused into the matmul",
        format!(
            "dequantize-then-matmul moves {} ({} at peak bandwidth); the fused kernel moves {} \
             ({}){quicker}",
            si(m.unfused_bytes, "B"),
            us(m.unfused_bytes / bw * 1e6),
            si(m.fused_bytes, "B"),
            us(m.fused_bytes / bw * 1e6),
        ),
        "Dequantize in registers inside the GEMM/GEMV (as Marlin, GGML and \
         ROCmForge's fused Q4_0 kernel do) rather than materialising the \
         dequantized weights.",
        Some(format!("{}× less DRAM traffic than unfused", sig3(m.saving))),
        None,
    ));
}

#[cfg(test)]
mod tests {
    use crate::analysis::{analyze, GemmShape, GemmView, KernelRequest};
    use crate::device::Catalog;
    use crate::diagnose::{Severity, WindowKind};
    use crate::occupancy::KernelResources;
    use crate::ops::elementwise::ElementwiseSpec;
    use crate::ops::gemm::GemmSpec;
    use crate::ops::norm::RmsNormSpec;
    use crate::ops::quant::{QuantGemmSpec, WeightFormat};
    use crate::ops::Work;
    use crate::units::{ExecUnit, Precision};

    fn ids(device: &str, req: &KernelRequest) -> Vec<(&'static str, Severity)> {
        let cat = Catalog::builtin();
        let d = cat.lookup(device).unwrap();
        analyze(d, req).unwrap().findings.iter().map(|f| (f.id, f.severity)).collect()
    }

    fn rmsnorm() -> Work {
        RmsNormSpec { rows: 4096, cols: 8192, dtype: Precision::Bf16, weight_dtype: None }
            .work()
            .unwrap()
    }

    fn timed(work: Work, us: u64) -> KernelRequest {
        let mut r = KernelRequest::new(work);
        r.time_ns = Some(us * 1000);
        r
    }

    #[test]
    fn rmsnorm_near_peak_suggests_fusion_only() {
        // 134,234,112 B in 55 µs = 2.44 TB/s = 72.9% of 3.35 TB/s.
        let f = ids("h100-sxm", &timed(rmsnorm(), 55));
        assert_eq!(f[0], ("bandwidth.near_peak", Severity::Info));
        assert!(f.contains(&("fusion.opportunity", Severity::Info)));
        assert!(f.iter().all(|(_, s)| *s == Severity::Info), "{f:?}");
    }

    #[test]
    fn slow_rmsnorm_is_likely_wrong() {
        // The RMSNorm example of docs/reference/formulas.md#roofline: 134,234,112 B in 150 µs
        // = 26.7% of peak: < 30% (major issue) and < 40% (an RMSNorm that slow is likely
        // wrong, docs/reference/formulas.md#diagnosis-thresholds-rooftops-conventions).
        let cat = Catalog::builtin();
        let a = analyze(cat.lookup("h100-sxm").unwrap(), &timed(rmsnorm(), 150)).unwrap();
        let f: Vec<_> = a.findings.iter().map(|f| f.id).collect();
        assert!(f.contains(&"bandwidth.low") && f.contains(&"class.likely_wrong"), "{f:?}");
        assert_eq!(a.findings[0].severity, Severity::Critical);
        // Gain to 70% of peak: 150 µs * 26.71% / 70% = 57.2 µs → 2.62×.
        let low = a.findings.iter().find(|f| f.id == "bandwidth.low").unwrap();
        let g = low.expected_gain.as_deref().unwrap();
        assert!(g.starts_with("up to 2.62×"), "{g}");
        assert!(g.contains("57.2 µs"), "{g}");
    }

    #[test]
    fn elementwise_in_the_middle_band() {
        // 2^28 bf16 in, 2^28 out: 1,073,741,824 B. At 534 µs: 2.011 TB/s = 60.0% of peak:
        // room for improvement, and below the element-wise band (70-90%).
        let w = ElementwiseSpec::unary(1 << 28, Precision::Bf16, 1.0).work().unwrap();
        assert_eq!(w.bytes(), 1_073_741_824.0);
        let f = ids("h100-sxm", &timed(w, 534));
        assert!(f.contains(&("bandwidth.room", Severity::Warning)), "{f:?}");
        assert!(f.contains(&("class.below_expected", Severity::Warning)), "{f:?}");
        assert!(!f.iter().any(|(id, _)| *id == "class.likely_wrong"), "{f:?}");
    }

    #[test]
    fn compute_bound_gemm_below_roof() {
        // 2*8192^3 = 1.0995e12 FLOP; at 2222 µs = 494.8 TFLOP/s = 50.0% of 989.4.
        let w = GemmSpec::new(8192, 8192, 8192, Precision::Bf16).work().unwrap();
        let f = ids("h100-sxm", &timed(w, 2222));
        assert!(f.contains(&("compute.low", Severity::Warning)), "{f:?}");
    }

    #[test]
    fn large_figures_show_three_significant_digits() {
        // A 4096³ bf16 GEMM: 2·4096³ = 137,438,953,472 FLOP over 3·4096²·2 = 100,663,296 B
        // = 1365.3 FLOP/B. At 1 s on an H100 (989.4 TFLOP/s): compute floor 138.91 µs,
        // 0.013891% of the roof; at 70% it would take 1 s × 0.013891 / 70 = 198.4 µs,
        // 1 s / 198.4 µs = 5039×.
        let w = GemmSpec::new(4096, 4096, 4096, Precision::Bf16).work().unwrap();
        let cat = Catalog::builtin();
        let a = analyze(cat.lookup("h100-sxm").unwrap(), &timed(w, 1_000_000)).unwrap();
        let f = a.findings.iter().find(|f| f.id == "compute.low").unwrap();
        assert!(f.evidence.contains("(0.0139%); intensity 1370 FLOP/B"), "{}", f.evidence);
        assert!(f.evidence.contains("ridge point 295"), "{}", f.evidence);
        let g = f.expected_gain.as_deref().unwrap();
        assert_eq!(g, "up to 5040× (1.00 s → 198 µs at 70% of peak)");
    }

    #[test]
    fn tracelens_example_1_wave_quantization_finding() {
        // TraceLens's first GEMM example
        // (docs/reference/formulas.md#tile-wave-and-dimension-efficiency):
        // M=10240 N=2048 K=2048, tile 256x64, 304 CUs -> 1280 tiles, 5 waves, wq_eff 0.842.
        let w = GemmSpec::new(10240, 2048, 2048, Precision::Bf16).work().unwrap();
        let mut req = KernelRequest::new(w);
        req.kernel_name = Some("Cijk_Alik_Bljk_BBS_BH_MT256x64x64_MI32x32x8x1_SN_WG32_8_1".into());
        req.gemm = Some(GemmShape { m: 10240, n: 2048, batch: 1, view: GemmView::Blas });
        let cat = Catalog::builtin();
        let a = analyze(cat.lookup("mi300x").unwrap(), &req).unwrap();
        let f = a.findings.iter().find(|f| f.id == "tiles.wave_quantization").unwrap();
        // 1 / 0.8421 = 1.1875
        assert_eq!(f.expected_gain.as_deref(), Some("up to 1.19×"));
        assert!(f.evidence.contains("1280 tiles on 304 CUs run in 5 waves"), "{}", f.evidence);
    }

    #[test]
    fn low_occupancy_names_the_limiter() {
        // docs/reference/occupancy.md example N8: A100, 128 threads x 255 registers ->
        // 2 blocks, 12.5%.
        let w = GemmSpec::new(4096, 4096, 4096, Precision::Bf16).work().unwrap();
        let mut req = KernelRequest::new(w);
        req.resources = Some(KernelResources {
            threads_per_block: 128,
            regs_per_thread: Some(255),
            ..KernelResources::default()
        });
        let cat = Catalog::builtin();
        let a = analyze(cat.lookup("a100-sxm-80gb").unwrap(), &req).unwrap();
        let f = a.findings.iter().find(|f| f.id == "occupancy.low").unwrap();
        assert!(f.evidence.contains("12.5%") && f.evidence.contains("registers"), "{}", f.evidence);
    }

    #[test]
    fn an_fp32_gemm_on_cdna_is_pointed_to_its_fp32_matrix_roof_first() {
        // MI100 datasheet: 23.1 TFLOP/s FP32 vector, 46.1 TFLOP/s FP32 matrix (MFMA).
        let cat = Catalog::builtin();
        let mi100 = cat.lookup("mi100").unwrap();
        let w = GemmSpec::new(4096, 4096, 4096, Precision::Fp32).work().unwrap();
        let a = analyze(mi100, &KernelRequest::new(w)).unwrap();
        assert_eq!(a.roofline.compute_roof.as_ref().map(|r| r.tflops), Some(23.1));
        let f = a.findings.iter().find(|f| f.id == "compute.matrix_units_unused").unwrap();
        assert!(
            f.recommendation.starts_with("The fp32 matrix roof (MFMA) is 46.1 TFLOP/s"),
            "{}",
            f.recommendation
        );
        let w = GemmSpec {
            unit: Some(ExecUnit::Matrix),
            ..GemmSpec::new(4096, 4096, 4096, Precision::Fp32)
        }
        .work()
        .unwrap();
        let a = analyze(mi100, &KernelRequest::new(w)).unwrap();
        assert_eq!(a.roofline.compute_roof.as_ref().map(|r| r.tflops), Some(46.1));
        // The H100 has no FP32 matrix roof: TF32 (494.7 TFLOP/s dense) comes first.
        let w = GemmSpec::new(4096, 4096, 4096, Precision::Fp32).work().unwrap();
        let a = analyze(cat.lookup("h100-sxm").unwrap(), &KernelRequest::new(w)).unwrap();
        let f = a.findings.iter().find(|f| f.id == "compute.matrix_units_unused").unwrap();
        assert!(f.recommendation.starts_with("The TF32 matrix roof is 49"), "{}", f.recommendation);
    }

    #[test]
    fn tiny_work_warns_about_launch_overhead() {
        let w = ElementwiseSpec::unary(1024, Precision::Fp32, 1.0).work().unwrap();
        // 8 KiB in, 8 KiB out: a 2.4 ns floor. Launch overhead comes first; the fusion
        // advice (an info) follows.
        let f = ids("h100-sxm", &KernelRequest::new(w.clone()));
        assert_eq!(f[0], ("launch.overhead", Severity::Info));
        assert!(f.iter().all(|(_, s)| *s == Severity::Info), "{f:?}");
        // Timed at 8 µs, all but 2.4 ns of the kernel's time is above its floor: the
        // whole time is at stake, critical.
        let f = ids("h100-sxm", &timed(w, 8));
        assert!(f.contains(&("launch.overhead", Severity::Critical)), "{f:?}");
        // The launch is the diagnosis: no bandwidth or class finding promises that the
        // 8 µs could fall to a share of the 2.4 ns floor (3,000× and more).
        assert!(
            !f.iter().any(|(id, _)| id.starts_with("bandwidth.") || id.starts_with("class.")),
            "{f:?}"
        );
    }

    #[test]
    fn severity_is_the_share_of_the_kernel_time_at_stake() {
        // Element-wise, 1,073,741,824 B at 3.35 TB/s: a 320.52 µs floor; at 534 µs the
        // gap is 213.48 µs, 39.98% of the kernel's time: a warning for every roofline
        // finding, each stating that stake.
        let w = ElementwiseSpec::unary(1 << 28, Precision::Bf16, 1.0).work().unwrap();
        let cat = Catalog::builtin();
        let a = analyze(cat.lookup("h100-sxm").unwrap(), &timed(w, 534)).unwrap();
        let floor = 1_073_741_824.0 / 3.35e12 * 1e6;
        for id in ["bandwidth.room", "class.below_expected"] {
            let f = a.findings.iter().find(|f| f.id == id).unwrap();
            let s = f.stake.unwrap();
            assert_eq!((s.window, s.window_us), (WindowKind::Kernel, 534.0));
            assert!((s.time_us - (534.0 - floor)).abs() < 1e-6, "{s:?}");
            assert!((s.share_pct() - 39.98).abs() < 0.01, "{s:?}");
            assert_eq!(f.severity, Severity::Warning);
        }
        // Structural findings state no time: info, listed after those with one.
        let fusion = a.findings.last().unwrap();
        assert_eq!(
            (fusion.id, fusion.severity, fusion.stake),
            ("fusion.opportunity", Severity::Info, None)
        );
        // The same kernel at 150 µs beats its floor: the whole time is at stake.
        let w = ElementwiseSpec::unary(1 << 28, Precision::Bf16, 1.0).work().unwrap();
        let a = analyze(cat.lookup("h100-sxm").unwrap(), &timed(w, 150)).unwrap();
        assert_eq!(a.findings[0].id, "roofline.faster_than_floor");
        assert_eq!(a.findings[0].share_pct(), Some(100.0));
        assert_eq!(a.findings[0].severity, Severity::Critical);
    }

    #[test]
    fn structural_findings_without_a_time_are_info_but_tiles_have_a_modelled_stake() {
        // Wave efficiency 0.8421 (1280 tiles on 304 CUs in 5 waves): 15.8% of the modelled
        // time is padding, a warning even with no measured time.
        let w = GemmSpec::new(10240, 2048, 2048, Precision::Bf16).work().unwrap();
        let mut req = KernelRequest::new(w);
        req.kernel_name = Some("Cijk_Alik_Bljk_BBS_BH_MT256x64x64_MI32x32x8x1_SN_WG32_8_1".into());
        req.gemm = Some(GemmShape { m: 10240, n: 2048, batch: 1, view: GemmView::Blas });
        let cat = Catalog::builtin();
        let a = analyze(cat.lookup("mi300x").unwrap(), &req).unwrap();
        let f = a.findings.iter().find(|f| f.id == "tiles.wave_quantization").unwrap();
        let s = f.stake.unwrap();
        assert_eq!(s.window, WindowKind::Model);
        assert!((s.share_pct() - (1.0 - 1280.0 / 1520.0) * 100.0).abs() < 1e-9, "{s:?}");
        assert_eq!(f.severity, Severity::Warning);
        // Occupancy 12.5% with no time: nothing measured says it costs time.
        let w = GemmSpec::new(4096, 4096, 4096, Precision::Bf16).work().unwrap();
        let mut req = KernelRequest::new(w);
        req.resources = Some(KernelResources {
            threads_per_block: 128,
            regs_per_thread: Some(255),
            ..KernelResources::default()
        });
        let a = analyze(cat.lookup("a100-sxm-80gb").unwrap(), &req).unwrap();
        let f = a.findings.iter().find(|f| f.id == "occupancy.low").unwrap();
        assert_eq!((f.severity, f.stake), (Severity::Info, None));
    }

    #[test]
    fn quantized_gemm_quantifies_dequant_fusion() {
        let spec = QuantGemmSpec {
            m: 1,
            n: 4096,
            k: 4096,
            act_dtype: Precision::Fp16,
            format: WeightFormat::Q4_0,
            out_dtype: None,
        };
        let mut req = KernelRequest::new(spec.work().unwrap());
        req.dequant_fusion = spec.dequant_fusion(Precision::Fp16).ok();
        let cat = Catalog::builtin();
        let a = analyze(cat.lookup("rx-7900-xt").unwrap(), &req).unwrap();
        let f = a.findings.iter().find(|f| f.id == "fusion.dequant").unwrap();
        assert!(f.expected_gain.as_deref().unwrap().ends_with("× less DRAM traffic than unfused"));
        assert!(f.evidence.contains("a quicker count"), "{}", f.evidence);
    }

    #[test]
    fn faster_than_floor_is_critical() {
        // Floor 40.07 µs at 3.35 TB/s; 20 µs is impossible from DRAM.
        let f = ids("h100-sxm", &timed(rmsnorm(), 20));
        assert_eq!(f[0], ("roofline.faster_than_floor", Severity::Critical));
        assert!(!f.iter().any(|(id, _)| id.starts_with("bandwidth.")), "{f:?}");
    }
}

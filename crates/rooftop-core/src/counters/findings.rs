//! What the counters reveal that a model cannot: rooftop's findings for one kernel or
//! dispatch record.
//!
//! Rules, in order:
//! - a communication kernel (NCCL, RCCL, MSCCL) is judged by the interconnect, not by SM
//!   or DRAM roofs: it gets communication advice and none of the launch-shape findings
//!   (a collective's grid is its channel count);
//! - the bound's own finding: DRAM attainment of memory-bound kernels (roofline basis,
//!   or Speed of Light with DRAM the busiest unit), the busiest cache level when L1/TEX
//!   or L2 binds, compute attainment with advice that fits the precision (tensor cores
//!   only for the precisions they run; TF32 and FP64 tensor cores named as such, and
//!   only where the device has them), and latency when no unit is busy;
//! - cache behaviour, coalescing, bank conflicts, occupancy, grid size and tail, launch
//!   overhead.
//!
//! Thresholds are rooftop's, documented in `docs/counters.md`.
//!
//! Severity follows the one rule of every command ([`crate::diagnose::Severity::of_share`]):
//! each finding that can say how much of the kernel's time it concerns carries that time
//! as its stake, a share of the kernel's measured time per dispatch — the gap to the roof
//! (`1 − attainment`), the idle share of a small grid or of the tail wave, the share no
//! unit is busy for a latency-bound kernel, the traffic an uncoalesced memory-bound kernel
//! could save. A finding that measures no time (cache hit rates, occupancy, bank
//! conflicts, a communication kernel, a kernel without a duration) is info.

use super::analysis::{BoundBasis, KernelRecord};
use super::roofs::RoofSet;
use crate::diagnose::{Finding, Stake, WindowKind};
use crate::roofline::Bound;
use crate::units::{si, sig3, ExecUnit, Precision};
use std::str::FromStr;

/// Thresholds of the counter findings.
pub(super) mod limits {
    /// DRAM or compute attainment below this share of the roof is a major gap.
    pub const MAJOR_PCT: f64 = 30.0;
    /// At or above this share the kernel is near its roof.
    pub const GOOD_PCT: f64 = 70.0;
    /// Speed of Light: below this share of peak on every unit, no unit limits the kernel:
    /// it waits (Nsight Compute's SOLBottleneck rule uses 60%).
    pub const BUSY_PCT: f64 = 60.0;
    /// Uncoalesced: more than twice the minimum bytes per request.
    pub const COALESCING_RATIO: f64 = 2.0;
    /// Shared-memory / LDS bank conflicts above this share of accesses are worth fixing.
    pub const BANK_CONFLICT_PCT: f64 = 10.0;
    /// Achieved occupancy below half the theoretical.
    pub const OCCUPANCY_RATIO: f64 = 0.5;
    /// A launch costs 5-20 µs of host and driver time: kernels shorter than this are
    /// dominated by it.
    pub const SHORT_KERNEL_NS: f64 = 5_000.0;
    /// An L2 hit rate below this with DRAM reads above half the L2 traffic.
    pub const L2_HIT_LOW_PCT: f64 = 50.0;
    /// A fractional last wave holding less than this share of a full wave.
    pub const TAIL_SHARE: f64 = 0.5;
}

fn finding(
    id: &'static str,
    stake: Option<Stake>,
    title: String,
    evidence: String,
    recommendation: &str,
    expected_gain: Option<String>,
) -> Finding {
    Finding::new(id, title, evidence, recommendation, stake).with_gain(expected_gain)
}

/// `waste` (a fraction, 0–1) of one dispatch's measured time `duration_ns`, as a stake
/// of that time; `None` without a positive duration.
fn share_of_kernel(duration_ns: Option<f64>, waste: f64) -> Option<Stake> {
    let t = duration_ns.filter(|t| *t > 0.0)? * 1e-3;
    Stake::new(t * waste.clamp(0.0, 1.0), t, WindowKind::Kernel)
}

/// The collective library a kernel name belongs to (`NCCL`, `RCCL`, `MSCCL`), if any.
pub fn communication_library(name: &str) -> Option<&'static str> {
    let n = name.to_ascii_lowercase();
    [("msccl", "MSCCL"), ("rccl", "RCCL"), ("nccl", "NCCL")]
        .into_iter()
        .find(|(k, _)| n.contains(k))
        .map(|(_, v)| v)
}

pub(super) fn short_kernel(duration_ns: Option<f64>) -> Option<Finding> {
    let t = duration_ns?;
    (t < limits::SHORT_KERNEL_NS).then(|| {
        finding(
            "counters.short_kernel",
            None,
            format!("{} per dispatch: launch overhead dominates", si(t * 1e-9, "s")),
            format!(
                "a launch costs about 5-20 µs of host and driver time; this kernel runs {}",
                si(t * 1e-9, "s")
            ),
            "fuse it with its neighbours, batch the work into fewer launches, or capture \
             the sequence in a CUDA/HIP graph",
            None,
        )
    })
}

/// rooftop's findings for `r`, most severe first.
pub(super) fn findings(r: &KernelRecord, roofs: &RoofSet) -> Vec<Finding> {
    if let Some(lib) = communication_library(&r.name) {
        let mut out = vec![communication(r, lib)];
        out.extend(short_kernel(r.duration_ns));
        return out;
    }
    let mut out = Vec::new();
    match (r.bound, r.bound_basis) {
        (Some(Bound::Memory), _) => memory(r, roofs, &mut out),
        (Some(Bound::Compute), Some(BoundBasis::Roofline)) => compute_roofline(r, roofs, &mut out),
        (Some(Bound::Compute), Some(BoundBasis::SpeedOfLight)) => compute_sol(r, &mut out),
        _ => {}
    }
    latency(r, &mut out);
    caches_and_access(r, &mut out);
    launch_shape(r, &mut out);
    out.extend(short_kernel(r.derived.duration_ns));
    crate::diagnose::rank(&mut out);
    out
}

fn communication(r: &KernelRecord, lib: &str) -> Finding {
    finding(
        "counters.communication",
        None,
        format!("{lib} communication kernel: its time is the interconnect's and the peers'"),
        format!(
            "a {lib} collective{}; its speed is set by the link bandwidth and by waiting for \
             the other ranks, not by this GPU's SM or DRAM roofs",
            r.duration_ns
                .map_or(String::new(), |t| format!(", {} per dispatch", si(t * 1e-9, "s")))
        ),
        "judge it by bus bandwidth against the link: `rooftop trace` on a PyTorch or JAX \
         trace of the same run gives each collective's bus bandwidth and how much of it \
         overlaps computation. Overlap it with compute, send fewer and larger messages \
         (bucket gradients), and check NCCL_ALGO / NCCL_PROTO and the channel count; launch \
         shape and occupancy do not apply to a collective",
        None,
    )
}

fn memory(r: &KernelRecord, roofs: &RoofSet, out: &mut Vec<Finding>) {
    let sol = &r.derived.speed_of_light;
    let pipe = sol.busiest_memory();
    let dram_binds =
        r.bound_basis == Some(BoundBasis::Roofline) || pipe.is_none_or(|(p, _)| p == "DRAM");
    if dram_binds {
        if let (Some(a), Some(roof)) =
            (r.achieved_gbs, roofs.bandwidth(crate::device::MemLevel::Dram))
        {
            dram(a, roof, roofs, r.derived.duration_ns, out);
        }
        return;
    }
    let (Some((pipe, mem)), Some(sm)) = (pipe, sol.sm_pct) else { return };
    if mem < limits::BUSY_PCT {
        return; // latency() speaks for it
    }
    out.push(finding(
        "counters.cache_bound",
        (mem < limits::GOOD_PCT)
            .then(|| share_of_kernel(r.derived.duration_ns, 1.0 - mem / 100.0))
            .flatten(),
        format!("bound by the {pipe} cache at {}% of its peak", sig3(mem)),
        format!(
            "Speed of Light: {pipe} {}%, SM {}%{}",
            sig3(mem),
            sig3(sm),
            sol.dram_pct.map_or(String::new(), |d| format!(", DRAM {}%", sig3(d)))
        ),
        "the kernel moves more data through this cache level than it needs: make \
         consecutive threads touch consecutive addresses (fewer sectors per request), keep \
         reused values in registers or shared memory instead of reloading them, and look \
         for register spills (local memory also goes through L1/TEX)",
        None,
    ));
}

fn dram(a: f64, roof: f64, roofs: &RoofSet, duration_ns: Option<f64>, out: &mut Vec<Finding>) {
    let pct = 100.0 * a / roof;
    let src = roofs.source.as_str();
    if pct > 110.0 {
        out.push(finding(
            "counters.above_dram_roof",
            None,
            format!("{}% of the {src} DRAM roof", sig3(pct)),
            format!("{} GB/s achieved against {} GB/s", sig3(a), sig3(roof)),
            "the roof is not a hard limit here (a measured or datasheet figure below what \
             this kernel reached); check the device and the counter set",
            None,
        ));
    } else if pct < limits::GOOD_PCT {
        let major = pct < limits::MAJOR_PCT;
        out.push(finding(
            if major { "counters.bandwidth_low" } else { "counters.bandwidth_room" },
            share_of_kernel(duration_ns, 1.0 - pct / 100.0),
            format!("memory-bound at {}% of the {src} DRAM roof", sig3(pct)),
            format!("{} GB/s of {} GB/s", sig3(a), sig3(roof)),
            if major {
                "below 30% of peak: look for a grid too small to fill the GPU, launch \
                 overhead, uncoalesced accesses or register spills"
            } else {
                "30-70% of peak: check coalescing, block size and redundant reads"
            },
            Some(format!("up to {}x at 70% of the roof", sig3(0.7 * roof / a))),
        ));
    }
}

/// Advice on the matrix units that fits the precision of the work (`unit`, `precision`
/// as counted) and the device's roofs.
pub fn matrix_advice(unit: ExecUnit, precision: &str, roofs: &RoofSet) -> String {
    if unit == ExecUnit::Matrix {
        return "the work already runs on the matrix units: keep them fed (pipeline the tile \
                loads, raise occupancy)"
            .to_string();
    }
    let peak =
        |p: Precision| roofs.compute(ExecUnit::Matrix, p).map(|c| si(c.tflops * 1e12, "FLOP/s"));
    match Precision::from_str(precision) {
        Ok(p @ (Precision::Fp16 | Precision::Bf16 | Precision::Fp8 | Precision::Int8)) => {
            match peak(p) {
                Some(m) => format!(
                    "run this {precision} work on the matrix units (tensor cores / MFMA, {m}) \
                     where it is a matrix product"
                ),
                None => String::new(),
            }
        }
        Ok(Precision::Fp32) => match peak(Precision::Tf32) {
            Some(m) => format!(
                "tensor cores do not run FP32; if this is a matrix product that tolerates \
                 TF32's 10-bit mantissa, the TF32 tensor cores ({m}) can (cuBLAS/cuDNN TF32 \
                 math mode, torch.backends.cuda.matmul.allow_tf32)"
            ),
            None => "tensor cores do not run FP32 work on this device".to_string(),
        },
        Ok(Precision::Fp64) => match peak(Precision::Fp64) {
            Some(m) => format!(
                "FP64 matrix products can use the FP64 tensor cores (DMMA, {m}) through \
                 cuBLAS DGEMM"
            ),
            None => String::new(),
        },
        _ => String::new(),
    }
}

fn compute_roofline(r: &KernelRecord, roofs: &RoofSet, out: &mut Vec<Finding>) {
    let (Some(p), Some(roof)) = (r.pct_of_roof, r.compute_roof.as_ref()) else { return };
    if p >= limits::GOOD_PCT {
        return;
    }
    let counted = r.derived.flops.dominant();
    let advice = counted.map_or(String::new(), |(u, prec)| {
        let unit = if u == "matrix" { ExecUnit::Matrix } else { ExecUnit::Vector };
        matrix_advice(unit, prec, roofs)
    });
    let mut rec = "raise instruction-level parallelism and occupancy".to_string();
    if !advice.is_empty() {
        rec.push_str("; ");
        rec.push_str(&advice);
    }
    out.push(finding(
        "counters.compute_low",
        share_of_kernel(r.derived.duration_ns, 1.0 - p / 100.0),
        format!(
            "compute-bound at {}% of the {} {} roof",
            sig3(p),
            roof.precision.as_str(),
            roof.unit.as_str()
        ),
        format!(
            "{} TFLOP/s achieved, arithmetic intensity {} FLOP/B",
            r.achieved_tflops.map_or("?".to_string(), sig3),
            r.arithmetic_intensity.map_or("?".to_string(), sig3)
        ),
        &rec,
        None,
    ));
}

fn compute_sol(r: &KernelRecord, out: &mut Vec<Finding>) {
    let sol = &r.derived.speed_of_light;
    let Some(sm) = sol.sm_pct.filter(|s| *s >= limits::BUSY_PCT) else { return };
    out.push(finding(
        "counters.compute_busy",
        None,
        format!("compute-bound: the SM at {}% of its peak", sig3(sm)),
        format!(
            "Speed of Light: SM {}%, busiest memory unit {}",
            sig3(sm),
            sol.busiest_memory()
                .map_or("not measured".to_string(), |(p, v)| format!("{p} {}%", sig3(v)))
        ),
        "the Compute Workload Analysis section names the busiest pipeline: cut its \
         instructions (fused multiply-adds, fewer conversions and index computations); the \
         FLOP counters (SpeedOfLight_RooflineChart section) would tell which precision runs",
        None,
    ));
}

fn latency(r: &KernelRecord, out: &mut Vec<Finding>) {
    let sol = &r.derived.speed_of_light;
    let (Some(sm), Some((pipe, mem))) = (sol.sm_pct, sol.busiest_memory()) else { return };
    if sm >= limits::BUSY_PCT || mem >= limits::BUSY_PCT {
        return;
    }
    out.push(finding(
        "counters.latency_bound",
        // The busiest unit is idle for the rest of the time: what latency costs.
        share_of_kernel(r.derived.duration_ns, 1.0 - sm.max(mem) / 100.0),
        format!(
            "no unit is busy: SM {}%, busiest memory unit {pipe} {}% of peak",
            sig3(sm),
            sig3(mem)
        ),
        format!(
            "every Speed-of-Light throughput is below {}%: the kernel waits (latency) more \
             than it computes or moves data",
            limits::BUSY_PCT
        ),
        "too few warps in flight or too little independent work per warp: raise occupancy \
         (fewer registers, smaller blocks), add instruction-level parallelism, or give each \
         launch more work; the warp stall reasons (WarpStateStats) say what the warps wait on",
        None,
    ));
}

fn caches_and_access(r: &KernelRecord, out: &mut Vec<Finding>) {
    let x = &r.derived;
    if let (Some(h), Some(read), Some(l2)) = (x.l2_hit_rate_pct, x.dram_bytes_read, x.l2_bytes) {
        if h < limits::L2_HIT_LOW_PCT && l2 > 0.0 && read > 0.5 * l2 {
            out.push(finding(
                "counters.l2_hit_low",
                None,
                format!("L2 hit rate {}%: most L2 traffic goes to DRAM", sig3(h)),
                format!("{} read from DRAM for {} of L2 traffic", si(read, "B"), si(l2, "B")),
                "expected for a streaming kernel that touches each byte once; if the kernel \
                 re-reads data, tile the loop so the reuse happens while the tile is in L2 or \
                 shared memory/LDS",
                None,
            ));
        }
    }
    if let Some(c) = &x.coalescing {
        let ratio = c.bytes_per_request / c.ideal_bytes_per_request;
        if ratio > limits::COALESCING_RATIO {
            out.push(finding(
                "counters.uncoalesced",
                // Time follows traffic only where memory binds the kernel.
                (r.bound == Some(Bound::Memory))
                    .then(|| share_of_kernel(x.duration_ns, 1.0 - 1.0 / ratio))
                    .flatten(),
                format!("uncoalesced accesses: {}x the minimum bytes per request", sig3(ratio)),
                format!(
                    "{} B per {} request against {} B for a fully coalesced access",
                    sig3(c.bytes_per_request),
                    c.level,
                    sig3(c.ideal_bytes_per_request)
                ),
                "make consecutive threads touch consecutive addresses (transpose through \
                 shared memory/LDS, change the data layout, or vectorise loads)",
                Some(format!("up to {}x less traffic at this level", sig3(ratio))),
            ));
        }
    }
    if let Some(p) = x.lds_bank_conflict_pct.filter(|p| *p > limits::BANK_CONFLICT_PCT) {
        out.push(finding(
            "counters.bank_conflicts",
            None,
            format!("{}% of shared-memory/LDS accesses hit bank conflicts", sig3(p)),
            format!("bank-conflict share {}%", sig3(p)),
            "pad shared arrays (e.g. [32][33]) or swizzle the index so a warp/wave touches \
             distinct banks",
            None,
        ));
    }
}

fn launch_shape(r: &KernelRecord, out: &mut Vec<Finding>) {
    let x = &r.derived;
    if let (Some(a), Some(t)) = (x.achieved_occupancy_pct, x.theoretical_occupancy_pct) {
        if t > 0.0 && a < limits::OCCUPANCY_RATIO * t {
            out.push(finding(
                "counters.occupancy_low",
                None,
                format!("achieved occupancy {}% of a theoretical {}%", sig3(a), sig3(t)),
                format!("{}% achieved vs {}% theoretical", sig3(a), sig3(t)),
                "warps/waves finish unevenly or the grid is small: balance the work per \
                 block, launch more blocks, or shorten the tail",
                None,
            ));
        }
    }
    let Some(w) = x.grid_waves.filter(|w| *w > 0.0) else { return };
    if w < 1.0 {
        out.push(finding(
            "counters.grid_small",
            share_of_kernel(x.duration_ns, 1.0 - w),
            format!("the grid fills {}% of one wave of the GPU", sig3(100.0 * w)),
            format!("{} waves of blocks", sig3(w)),
            "launch more blocks: split the work finer (smaller blocks, or more of the \
             problem per launch; for a GEMM, split-K)",
            Some(format!("up to {}x with a full wave", sig3(1.0 / w))),
        ));
        return;
    }
    let frac = w - w.floor();
    if frac > 0.0 && frac < limits::TAIL_SHARE && w < 8.0 {
        let full = w.ceil();
        let idle = 100.0 * (full - w) / full;
        out.push(finding(
            "counters.tail_effect",
            share_of_kernel(x.duration_ns, idle / 100.0),
            format!("tail effect: the last of {full} waves is {}% full", sig3(100.0 * frac)),
            format!("{} waves of blocks; {}% of SM/CU time idles in the tail", sig3(w), sig3(idle)),
            "change the block count to a multiple of the SM/CU count, or make blocks smaller \
             so the tail is shorter",
            None,
        ));
    }
}

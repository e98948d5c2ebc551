//! The roofline model: arithmetic intensity, ridge point, attainable rate, floor time,
//! bound, and — with a measured time — achieved rates, utilisations and attainment.
//!
//! Formulas (Williams, Waterman and Patterson, "Roofline: an insightful visual
//! performance model for multicore architectures", CACM 52(4), 2009):
//! - `AI = flops / bytes` (FLOP/byte of DRAM traffic);
//! - `ridge = peak_flops / peak_bw`;
//! - `attainable = min(peak_flops, AI * peak_bw)`;
//! - `floor_time = max(flops / peak_flops, bytes / peak_bw)` (= flops / attainable);
//! - `attainment = floor_time / time` — the achieved fraction of the attainable rate,
//!   which also covers work with no FLOPs (a copy), where it is bandwidth attainment;
//! - bound: `balanced` when `0.8 * ridge <= AI <= 1.2 * ridge`, else memory below and
//!   compute above; work with no FLOPs is memory-bound, and work with neither FLOPs nor
//!   bytes has no bound (an error, [`Unclassified`], never a guess).
//!
//! One engine: [`place`] computes these from bare numbers (FLOPs, bytes, time, roofs);
//! [`roofline`] resolves a [`Work`]'s roofs on a device and calls it, and every command
//! (`analyze`, `bench`, `trace`, `model`) goes through [`roofline`].
//!
//! Invariant: for any work and any `time >= floor_time`, attainment <= 100%.
//! A time below the floor is kept as measured (attainment > 100%) and the diagnosis
//! says the work model or the peak must be wrong.

use crate::device::{DeviceSpec, FigureMeta, MemLevel};
use crate::ops::Work;
use crate::units::{ExecUnit, Precision};
use serde::Serialize;
use std::fmt;

/// Half-width of the balanced band around the ridge point (±20%).
pub const BALANCED_BAND: f64 = 0.2;

/// Which roof limits the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    Memory,
    Compute,
    Balanced,
}

/// Why an intensity could not be classified: the caller shows the bound as unknown
/// ("—") with this reason, never a guessed bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unclassified {
    #[error(
        "the arithmetic intensity is not a number (no FLOPs and no bytes, or a value that \
         is not a number)"
    )]
    Intensity,
    #[error("the ridge point is not a positive number (a roof is zero, infinite or unknown)")]
    Ridge,
}

impl Bound {
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Memory => "memory",
            Bound::Compute => "compute",
            Bound::Balanced => "balanced",
        }
    }

    /// Classifies an arithmetic intensity against a ridge point: balanced within
    /// ±[`BALANCED_BAND`] of the ridge, memory below, compute above (an infinite
    /// intensity, FLOPs with no bytes, is compute). A NaN or negative intensity, or a
    /// ridge that is not a positive finite number, is an error the caller must show.
    pub fn classify(intensity: f64, ridge: f64) -> Result<Bound, Unclassified> {
        if intensity.is_nan() || intensity < 0.0 {
            return Err(Unclassified::Intensity);
        }
        if !(ridge.is_finite() && ridge > 0.0) {
            return Err(Unclassified::Ridge);
        }
        Ok(if intensity < ridge * (1.0 - BALANCED_BAND) {
            Bound::Memory
        } else if intensity > ridge * (1.0 + BALANCED_BAND) {
            Bound::Compute
        } else {
            Bound::Balanced
        })
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The two roofs one point is placed against, in base units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoofRates {
    /// Compute roof, FLOP/s; `None` where the device has none for the work's precision
    /// (allowed only for work with no FLOPs).
    pub flops_per_s: Option<f64>,
    /// Memory (DRAM) roof, B/s.
    pub bytes_per_s: f64,
}

/// Where one piece of work lies against [`RoofRates`]: the numbers every command's
/// roofline comes from ([`place`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placement {
    /// FLOP/byte; infinite for FLOPs with no bytes, 0 for bytes with no FLOPs.
    pub intensity: f64,
    /// Compute roof ÷ memory roof, FLOP/byte (`None` without a compute roof or without a
    /// memory roof).
    pub ridge: Option<f64>,
    /// `min(compute roof, intensity × memory roof)`; 0 for work with no FLOPs.
    pub attainable_flops_per_s: f64,
    pub compute_floor_s: f64,
    pub memory_floor_s: f64,
    /// `max(compute floor, memory floor)`: the best possible time.
    pub floor_s: f64,
    pub bound: Bound,
    /// `floor / time`, percent, when a time is given (above 100: faster than the model
    /// allows, kept as measured).
    pub attainment_pct: Option<f64>,
}

/// Places `flops` and `bytes` (and, when measured, `time_s`) against `roofs`: floor,
/// bound and attainment by the formulas of the module docs. `analyze`, `bench`,
/// `trace` (its per-op tables and XLA rows) and `model` all come here through
/// [`roofline`]; a caller with bare numbers (counters) calls it directly.
///
/// # Errors
/// [`RooflineError::BadWork`] for FLOPs or bytes that are negative or not finite,
/// [`RooflineError::ZeroTime`] for a time that is not a positive finite number,
/// [`RooflineError::BadRoof`] for a roof that is not (an infinite memory roof is no
/// memory roof: allowed for work with FLOPs, which is then compute-bound),
/// [`RooflineError::MissingComputeRoof`] for FLOPs with no compute roof, and [`RooflineError::Unclassified`] for work that can
/// have no bound (no FLOPs and no bytes).
pub fn place(
    flops: f64,
    bytes: f64,
    time_s: Option<f64>,
    roofs: RoofRates,
) -> Result<Placement, RooflineError> {
    if !(flops.is_finite() && bytes.is_finite() && flops >= 0.0 && bytes >= 0.0) {
        return Err(RooflineError::BadWork);
    }
    if time_s.is_some_and(|t| !(t.is_finite() && t > 0.0)) {
        return Err(RooflineError::ZeroTime);
    }
    let good = |r: f64| r.is_finite() && r > 0.0;
    // An infinite memory roof is none at all (a compute-only run on a CPU whose memory
    // bandwidth was not measured): the floor is the compute floor, and only work with
    // FLOPs can be placed.
    let no_memory_roof = roofs.bytes_per_s == f64::INFINITY;
    if !(good(roofs.bytes_per_s) || no_memory_roof && flops > 0.0)
        || roofs.flops_per_s.is_some_and(|r| !good(r))
    {
        return Err(RooflineError::BadRoof);
    }
    let peak = match roofs.flops_per_s {
        Some(p) => p,
        None if flops == 0.0 => f64::INFINITY,
        None => return Err(RooflineError::MissingComputeRoof),
    };
    let bw = roofs.bytes_per_s;
    let intensity = if bytes > 0.0 {
        flops / bytes
    } else if flops > 0.0 {
        f64::INFINITY
    } else {
        f64::NAN
    };
    let ridge = roofs.flops_per_s.map(|p| p / bw).filter(|_| !no_memory_roof);
    let bound = if flops == 0.0 && bytes > 0.0 {
        // No FLOPs: only the memory roof applies, whatever the ridge.
        Bound::Memory
    } else if no_memory_roof {
        // FLOPs and no memory roof: only the compute roof applies.
        Bound::Compute
    } else {
        Bound::classify(intensity, ridge.unwrap_or(f64::NAN))?
    };
    let compute_floor_s = if flops > 0.0 { flops / peak } else { 0.0 };
    let memory_floor_s = if bytes > 0.0 { bytes / bw } else { 0.0 };
    let floor_s = compute_floor_s.max(memory_floor_s);
    let attainable_flops_per_s = if flops == 0.0 { 0.0 } else { peak.min(intensity * bw) };
    Ok(Placement {
        intensity,
        ridge,
        attainable_flops_per_s,
        compute_floor_s,
        memory_floor_s,
        floor_s,
        bound,
        attainment_pct: time_s.map(|t| floor_s / t * 100.0),
    })
}

/// The compute roof used, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComputeRoof {
    pub precision: Precision,
    pub unit: ExecUnit,
    pub tflops: f64,
    pub meta: FigureMeta,
    /// Set when the roof is a fallback (e.g. FP32 vector roof for FP16 vector work).
    pub note: Option<String>,
}

/// A measured point on the roofline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Achieved {
    pub time_us: f64,
    pub achieved_tflops: f64,
    pub achieved_gbs: f64,
    /// achieved FLOP/s / compute peak.
    pub compute_utilization_pct: f64,
    /// achieved B/s / DRAM peak.
    pub memory_utilization_pct: f64,
    /// floor time / time.
    pub roofline_attainment_pct: f64,
}

/// One memory level's point when bytes at that level are known (counters).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelPoint {
    pub level: MemLevel,
    pub bytes: f64,
    pub arithmetic_intensity: f64,
    pub bandwidth_gbs: f64,
    pub floor_time_us: f64,
    pub achieved_gbs: Option<f64>,
    pub utilization_pct: Option<f64>,
}

/// Roofline result for one kernel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Roofline {
    pub flops: f64,
    pub bytes: f64,
    pub arithmetic_intensity: f64,
    /// None when the work has no FLOPs and the device no roof for its precision.
    pub compute_roof: Option<ComputeRoof>,
    pub bandwidth_gbs: f64,
    pub bandwidth_meta: FigureMeta,
    pub ridge_point: Option<f64>,
    pub attainable_tflops: f64,
    pub compute_floor_us: f64,
    pub memory_floor_us: f64,
    pub floor_time_us: f64,
    pub bound: Bound,
    pub achieved: Option<Achieved>,
    pub levels: Vec<LevelPoint>,
}

/// Why a roofline could not be drawn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RooflineError {
    #[error("device `{device}` has no {precision} {unit} peak (nor a fallback) for this work")]
    NoComputeRoof { device: String, precision: Precision, unit: ExecUnit },
    #[error("the work has FLOPs but no compute roof was given")]
    MissingComputeRoof,
    #[error("the measured time must be greater than zero")]
    ZeroTime,
    #[error("FLOPs and bytes must be finite and non-negative")]
    BadWork,
    #[error("the roofs must be finite and greater than zero")]
    BadRoof,
    #[error("no bound: {0}")]
    Unclassified(#[from] Unclassified),
}

/// The compute roof `device` gives work of `precision` on `unit` (with its fallback note),
/// as every command places it: `analyze`, `trace` and `counters` all take it from here.
pub fn compute_roof_of(
    device: &DeviceSpec,
    precision: Precision,
    unit: ExecUnit,
) -> Option<ComputeRoof> {
    device.compute_roof(precision, unit).map(|choice| ComputeRoof {
        precision: choice.peak.precision,
        unit: choice.peak.unit,
        tflops: choice.peak.tflops,
        meta: choice.peak.meta.clone(),
        note: choice.note.map(str::to_string),
    })
}

/// Roofline of `work` on `device`. `time_ns` is the measured duration, if any;
/// `level_bytes` the bytes at other memory levels (from counters), if known. The
/// floor, bound and attainment are [`place`]'s.
pub fn roofline(
    work: &Work,
    device: &DeviceSpec,
    time_ns: Option<u64>,
    level_bytes: &[(MemLevel, f64)],
) -> Result<Roofline, RooflineError> {
    let flops = work.flops;
    let bytes = work.bytes();
    if !(flops.is_finite() && bytes.is_finite() && flops >= 0.0 && bytes >= 0.0) {
        return Err(RooflineError::BadWork);
    }
    if time_ns == Some(0) {
        return Err(RooflineError::ZeroTime);
    }
    let compute_roof = match compute_roof_of(device, work.precision, work.unit) {
        Some(roof) => Some(roof),
        None if flops == 0.0 => None,
        None => {
            return Err(RooflineError::NoComputeRoof {
                device: device.id.clone(),
                precision: work.precision,
                unit: work.unit,
            })
        }
    };
    let rates = RoofRates {
        flops_per_s: compute_roof.as_ref().map(|r| r.tflops * 1e12),
        bytes_per_s: device.peak_bw_gbs * 1e9,
    };
    let p = place(flops, bytes, time_ns.map(|ns| ns as f64 * 1e-9), rates)?;
    let peak_flops = rates.flops_per_s.unwrap_or(f64::INFINITY);
    let bw = rates.bytes_per_s;

    let achieved = time_ns.zip(p.attainment_pct).map(|(ns, attainment)| {
        let t = ns as f64 * 1e-9;
        Achieved {
            time_us: ns as f64 / 1e3,
            achieved_tflops: flops / t / 1e12,
            achieved_gbs: bytes / t / 1e9,
            compute_utilization_pct: if peak_flops.is_finite() {
                flops / t / peak_flops * 100.0
            } else {
                0.0
            },
            memory_utilization_pct: bytes / t / bw * 100.0,
            roofline_attainment_pct: attainment,
        }
    });

    let levels = level_bytes
        .iter()
        .filter_map(|&(level, lb)| {
            let gbs = device.bandwidth(level)?;
            let floor_s = lb / (gbs * 1e9);
            let (achieved_gbs, utilization_pct) = match time_ns {
                Some(ns) => {
                    let a = lb / (ns as f64 * 1e-9) / 1e9;
                    (Some(a), Some(a / gbs * 100.0))
                }
                None => (None, None),
            };
            Some(LevelPoint {
                level,
                bytes: lb,
                arithmetic_intensity: if lb > 0.0 { flops / lb } else { f64::INFINITY },
                bandwidth_gbs: gbs,
                floor_time_us: floor_s * 1e6,
                achieved_gbs,
                utilization_pct,
            })
        })
        .collect();

    Ok(Roofline {
        flops,
        bytes,
        arithmetic_intensity: p.intensity,
        compute_roof,
        bandwidth_gbs: device.peak_bw_gbs,
        bandwidth_meta: device.figure("memory.bandwidth_gbs").clone(),
        ridge_point: p.ridge,
        attainable_tflops: p.attainable_flops_per_s / 1e12,
        compute_floor_us: p.compute_floor_s * 1e6,
        memory_floor_us: p.memory_floor_s * 1e6,
        floor_time_us: p.floor_s * 1e6,
        bound: p.bound,
        achieved,
        levels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Catalog;
    use crate::ops::OpClass;
    use proptest::prelude::*;

    fn work(flops: f64, bytes: f64, precision: Precision, unit: ExecUnit) -> Work {
        Work {
            class: OpClass::Gemm,
            shape: String::new(),
            flops,
            precision,
            unit,
            bytes_read: bytes,
            bytes_written: 0.0,
            flops_formula: String::new(),
            bytes_formula: String::new(),
            assumptions: Vec::new(),
        }
    }

    fn h100() -> DeviceSpec {
        Catalog::builtin().lookup("h100-sxm").expect("h100-sxm is in the catalog").clone()
    }

    #[test]
    fn compute_bound_gemm_on_h100() {
        // bf16 GEMM 4096^3: 2*4096^3 FLOP, (3 * 4096^2) * 2 B.
        let w = work(137_438_953_472.0, 100_663_296.0, Precision::Bf16, ExecUnit::Matrix);
        let r = roofline(&w, &h100(), None, &[]).unwrap();
        assert!((r.arithmetic_intensity - 137_438_953_472.0 / 100_663_296.0).abs() < 1e-9);
        // Ridge = 989.4e12 / 3350e9 = 295.343 FLOP/B.
        assert!((r.ridge_point.unwrap() - 989.4e12 / 3350e9).abs() < 1e-9);
        assert_eq!(r.bound, Bound::Compute);
        assert!((r.floor_time_us - 137_438_953_472.0 / 989.4e12 * 1e6).abs() < 1e-9);
        assert!((r.attainable_tflops - 989.4).abs() < 1e-9);
        assert!(r.achieved.is_none());
    }

    #[test]
    fn memory_bound_copy_with_time() {
        // 2 GB at 3350 GB/s = 597.0 µs floor; measured 700 µs → 85.3% attainment.
        let w = work(0.0, 2e9, Precision::Fp32, ExecUnit::Vector);
        let r = roofline(&w, &h100(), Some(700_000), &[]).unwrap();
        assert_eq!(r.bound, Bound::Memory);
        assert!((r.floor_time_us - 2e9 / 3350e9 * 1e6).abs() < 1e-9);
        let a = r.achieved.unwrap();
        assert!((a.achieved_gbs - 2e9 / 700e-6 / 1e9).abs() < 1e-6);
        assert!((a.memory_utilization_pct - 2e9 / 700e-6 / 3350e9 * 100.0).abs() < 1e-9);
        assert!((a.roofline_attainment_pct - (2e9 / 3350e9) / 700e-6 * 100.0).abs() < 1e-9);
        assert_eq!(a.achieved_tflops, 0.0);
        assert_eq!(r.attainable_tflops, 0.0);
    }

    #[test]
    fn balanced_band_is_twenty_percent() {
        assert_eq!(Bound::classify(100.0, 100.0), Ok(Bound::Balanced));
        assert_eq!(Bound::classify(80.0, 100.0), Ok(Bound::Balanced));
        assert_eq!(Bound::classify(120.0, 100.0), Ok(Bound::Balanced));
        assert_eq!(Bound::classify(79.9, 100.0), Ok(Bound::Memory));
        assert_eq!(Bound::classify(120.1, 100.0), Ok(Bound::Compute));
        assert_eq!(Bound::classify(f64::INFINITY, 100.0), Ok(Bound::Compute));
        assert_eq!(Bound::Balanced.to_string(), "balanced");
    }

    #[test]
    fn nan_is_unclassified_not_memory_bound() {
        // A NaN intensity or ridge used to fall back to "memory".
        assert_eq!(Bound::classify(f64::NAN, 100.0), Err(Unclassified::Intensity));
        assert_eq!(Bound::classify(50.0, f64::NAN), Err(Unclassified::Ridge));
        assert_eq!(Bound::classify(50.0, 0.0), Err(Unclassified::Ridge));
        assert_eq!(Bound::classify(-1.0, 100.0), Err(Unclassified::Intensity));
        // Work with neither FLOPs nor bytes has a NaN intensity: no bound, an error that
        // says why (the caller shows "—" with it).
        let roofs = RoofRates { flops_per_s: Some(1e12), bytes_per_s: 1e9 };
        let e = place(0.0, 0.0, None, roofs).unwrap_err();
        assert_eq!(e, RooflineError::Unclassified(Unclassified::Intensity));
        assert!(e.to_string().starts_with("no bound: the arithmetic intensity is not a number"));
        let empty = work(0.0, 0.0, Precision::Fp32, ExecUnit::Vector);
        assert!(matches!(
            roofline(&empty, &h100(), Some(1000), &[]),
            Err(RooflineError::Unclassified(_))
        ));
        // A roof that is not a number is refused before any classification.
        let nan_roof = RoofRates { flops_per_s: Some(f64::NAN), bytes_per_s: 1e9 };
        assert_eq!(place(1.0, 1.0, None, nan_roof), Err(RooflineError::BadRoof));
        // No memory roof (infinite): 2 GFLOP at 1 TFLOP/s is 2 ms of compute, bound by
        // compute whatever the bytes; work without FLOPs cannot be placed.
        let no_bw = RoofRates { flops_per_s: Some(1e12), bytes_per_s: f64::INFINITY };
        let p = place(2e9, 4e9, Some(4e-3), no_bw).unwrap();
        assert_eq!(
            (p.bound, p.ridge, p.floor_s, p.memory_floor_s),
            (Bound::Compute, None, 2e-3, 0.0)
        );
        assert_eq!(p.attainment_pct, Some(50.0));
        assert_eq!(place(0.0, 4e9, None, no_bw), Err(RooflineError::BadRoof));
        let neither = RoofRates { flops_per_s: None, bytes_per_s: f64::INFINITY };
        assert_eq!(place(2e9, 4e9, None, neither), Err(RooflineError::MissingComputeRoof));
        assert_eq!(place(f64::NAN, 1.0, None, roofs), Err(RooflineError::BadWork));
        assert_eq!(place(1.0, 1.0, Some(f64::NAN), roofs), Err(RooflineError::ZeroTime));
        assert_eq!(
            place(1.0, 1.0, None, RoofRates { flops_per_s: None, bytes_per_s: 1e9 }),
            Err(RooflineError::MissingComputeRoof)
        );
    }

    #[test]
    fn place_by_hand() {
        // 1 TFLOP/s and 100 GB/s: ridge 10 FLOP/B. 2e9 FLOP over 1e8 B is 20 FLOP/B,
        // compute-bound; floor max(2 ms, 1 ms) = 2 ms; in 4 ms, 50% attainment.
        let roofs = RoofRates { flops_per_s: Some(1e12), bytes_per_s: 1e11 };
        let p = place(2e9, 1e8, Some(4e-3), roofs).unwrap();
        assert_eq!(p.ridge, Some(10.0));
        assert_eq!(p.intensity, 20.0);
        assert_eq!(p.bound, Bound::Compute);
        assert!((p.floor_s - 2e-3).abs() < 1e-15);
        assert!((p.memory_floor_s - 1e-3).abs() < 1e-15);
        assert!((p.attainment_pct.unwrap() - 50.0).abs() < 1e-9);
        assert_eq!(p.attainable_flops_per_s, 1e12);
        // 1.1e9 FLOP over 1e8 B: 11 FLOP/B, within ±20% of the ridge: balanced.
        assert_eq!(place(1.1e9, 1e8, None, roofs).unwrap().bound, Bound::Balanced);
        // A copy with no compute roof: memory-bound, attainable 0.
        let copy = place(0.0, 1e8, Some(2e-3), RoofRates { flops_per_s: None, ..roofs }).unwrap();
        assert_eq!((copy.bound, copy.ridge), (Bound::Memory, None));
        assert!((copy.attainment_pct.unwrap() - 50.0).abs() < 1e-9);
    }

    #[test]
    fn faster_than_floor_is_kept_not_clamped() {
        let w = work(0.0, 3.35e9, Precision::Fp32, ExecUnit::Vector); // floor 1 ms
        let r = roofline(&w, &h100(), Some(500_000), &[]).unwrap();
        assert!((r.achieved.unwrap().roofline_attainment_pct - 200.0).abs() < 1e-9);
    }

    #[test]
    fn zero_time_and_bad_work_are_errors() {
        let w = work(1.0, 1.0, Precision::Fp32, ExecUnit::Vector);
        assert_eq!(roofline(&w, &h100(), Some(0), &[]), Err(RooflineError::ZeroTime));
        let bad = work(f64::NAN, 1.0, Precision::Fp32, ExecUnit::Vector);
        assert_eq!(roofline(&bad, &h100(), None, &[]), Err(RooflineError::BadWork));
    }

    #[test]
    fn fallback_roofs_are_stated() {
        // H100 PCIe publishes no FP16 vector peak: the FP32 vector roof is used, and said.
        let pcie = Catalog::builtin().lookup("h100-pcie").unwrap().clone();
        let w = work(1e9, 1e6, Precision::Fp16, ExecUnit::Vector);
        let r = roofline(&w, &pcie, None, &[]).unwrap();
        let roof = r.compute_roof.unwrap();
        assert_eq!((roof.precision, roof.unit), (Precision::Fp32, ExecUnit::Vector));
        assert!(roof.note.is_some());
        // Apple M1 has no FP64 at all: FP64 work cannot be placed on a roof.
        let m1 = Catalog::builtin().lookup("m1").unwrap().clone();
        let w = work(1e9, 1e6, Precision::Fp64, ExecUnit::Vector);
        assert!(matches!(roofline(&w, &m1, None, &[]), Err(RooflineError::NoComputeRoof { .. })));
    }

    proptest! {
        /// Attainment never exceeds 100% when the time is at least the floor, and the
        /// attainable rate never exceeds the compute roof.
        #[test]
        fn attainment_never_exceeds_the_roof(
            flops in 0.0f64..1e18,
            bytes in 0.0f64..1e15,
            slack in 1.0f64..1e6,
            matrix in any::<bool>(),
        ) {
            let unit = if matrix { ExecUnit::Matrix } else { ExecUnit::Vector };
            let w = work(flops, bytes, Precision::Bf16, unit);
            let dev = h100();
            let r = roofline(&w, &dev, None, &[]).unwrap();
            let peak = r.compute_roof.as_ref().unwrap().tflops;
            prop_assert!(r.attainable_tflops <= peak * (1.0 + 1e-12));
            let t_ns = (r.floor_time_us * 1e3 * slack).ceil().max(1.0);
            if t_ns < 1.8e19 {
                let r = roofline(&w, &dev, Some(t_ns as u64), &[]).unwrap();
                let a = r.achieved.unwrap();
                prop_assert!(a.roofline_attainment_pct <= 100.0 + 1e-9);
                prop_assert!(a.roofline_attainment_pct >= 0.0);
                prop_assert!(a.compute_utilization_pct <= 100.0 + 1e-9);
                prop_assert!(a.memory_utilization_pct <= 100.0 + 1e-9);
            }
        }
    }
}

//! The roofline model: arithmetic intensity, ridge point, attainable rate, floor time,
//! bound, and — with a measured time — achieved rates, utilisations and attainment.
//!
//! Formulas (seed 000 §2-3, Williams et al. 2009):
//! - `AI = flops / bytes` (FLOP/byte of DRAM traffic);
//! - `ridge = peak_flops / peak_bw`;
//! - `attainable = min(peak_flops, AI * peak_bw)`;
//! - `floor_time = max(flops / peak_flops, bytes / peak_bw)` (= flops / attainable);
//! - `attainment = floor_time / time` — the achieved fraction of the attainable rate,
//!   which also covers work with no FLOPs (a copy), where it is bandwidth attainment;
//! - bound: `balanced` when `0.8 * ridge <= AI <= 1.2 * ridge`, else memory below and
//!   compute above.
//!
//! Invariant: for any work and any `time >= floor_time`, attainment <= 100%.
//! A time below the floor is kept as measured (attainment > 100%) and the diagnosis
//! says the work model or the peak must be wrong.

use crate::device::{DeviceSpec, FigureMeta, MemLevel};
use crate::ops::Work;
use crate::units::{ExecUnit, Precision};
use serde::Serialize;

/// Half-width of the balanced band around the ridge point (±20%).
pub const BALANCED_BAND: f64 = 0.2;

/// Which roof limits the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    Memory,
    Compute,
    Balanced,
}

impl Bound {
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Memory => "memory",
            Bound::Compute => "compute",
            Bound::Balanced => "balanced",
        }
    }

    /// Classifies an arithmetic intensity against a ridge point.
    pub fn classify(intensity: f64, ridge: f64) -> Bound {
        if intensity.is_nan() || ridge.is_nan() {
            return Bound::Memory;
        }
        if intensity < ridge * (1.0 - BALANCED_BAND) {
            Bound::Memory
        } else if intensity > ridge * (1.0 + BALANCED_BAND) {
            Bound::Compute
        } else {
            Bound::Balanced
        }
    }
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
    #[error("the measured time must be greater than zero")]
    ZeroTime,
    #[error("FLOPs and bytes must be finite and non-negative")]
    BadWork,
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

/// Which roof limits work of `flops` FLOPs and `bytes` bytes, given the ridge point of its
/// compute roof (`None`: no compute roof): no FLOPs is memory-bound, no bytes
/// compute-bound, otherwise [`Bound::classify`] with its ±20% balanced band.
pub fn bound_of(flops: f64, bytes: f64, ridge: Option<f64>) -> Bound {
    match ridge {
        _ if flops == 0.0 => Bound::Memory,
        _ if bytes == 0.0 => Bound::Compute,
        Some(r) => Bound::classify(flops / bytes, r),
        None => Bound::Memory,
    }
}

/// Roofline attainment in percent: the floor time `max(flops / peak, bytes / bandwidth)`
/// over the measured `time_s` (rates in FLOP/s and B/s; `peak_flops` `None` when the work
/// has no compute roof, which only FLOP-free work may lack).
pub fn attainment_pct(
    flops: f64,
    bytes: f64,
    peak_flops: Option<f64>,
    bw: f64,
    time_s: f64,
) -> f64 {
    let compute = match peak_flops {
        Some(p) if flops > 0.0 => flops / p,
        _ => 0.0,
    };
    let memory = if bytes > 0.0 { bytes / bw } else { 0.0 };
    compute.max(memory) / time_s * 100.0
}

/// Roofline of `work` on `device`. `time_ns` is the measured duration, if any;
/// `level_bytes` the bytes at other memory levels (from counters), if known.
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
    let peak_flops = compute_roof.as_ref().map_or(f64::INFINITY, |r| r.tflops * 1e12);
    let bw = device.peak_bw_gbs * 1e9;
    let compute_floor_s = if flops > 0.0 { flops / peak_flops } else { 0.0 };
    let memory_floor_s = if bytes > 0.0 { bytes / bw } else { 0.0 };
    let floor_s = compute_floor_s.max(memory_floor_s);
    let intensity = work.arithmetic_intensity();
    let ridge = compute_roof.as_ref().map(|r| r.tflops * 1e12 / bw);
    let attainable_flops = if flops == 0.0 {
        0.0
    } else if intensity.is_infinite() {
        peak_flops
    } else {
        peak_flops.min(intensity * bw)
    };
    let bound = bound_of(flops, bytes, ridge);

    let achieved = time_ns.map(|ns| {
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
            roofline_attainment_pct: attainment_pct(
                flops,
                bytes,
                compute_roof.as_ref().map(|r| r.tflops * 1e12),
                bw,
                t,
            ),
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
        arithmetic_intensity: intensity,
        compute_roof,
        bandwidth_gbs: device.peak_bw_gbs,
        bandwidth_meta: device.figure("memory.bandwidth_gbs").clone(),
        ridge_point: ridge,
        attainable_tflops: attainable_flops / 1e12,
        compute_floor_us: compute_floor_s * 1e6,
        memory_floor_us: memory_floor_s * 1e6,
        floor_time_us: floor_s * 1e6,
        bound,
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
        assert_eq!(Bound::classify(100.0, 100.0), Bound::Balanced);
        assert_eq!(Bound::classify(80.0, 100.0), Bound::Balanced);
        assert_eq!(Bound::classify(120.0, 100.0), Bound::Balanced);
        assert_eq!(Bound::classify(79.9, 100.0), Bound::Memory);
        assert_eq!(Bound::classify(120.1, 100.0), Bound::Compute);
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

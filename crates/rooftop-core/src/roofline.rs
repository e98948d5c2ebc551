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
    let compute_roof = match device.compute_roof(work.precision, work.unit) {
        Some(choice) => Some(ComputeRoof {
            precision: choice.peak.precision,
            unit: choice.peak.unit,
            tflops: choice.peak.tflops,
            meta: choice.peak.meta.clone(),
            note: choice.note.map(str::to_string),
        }),
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
    let bound = match ridge {
        _ if flops == 0.0 => Bound::Memory,
        _ if bytes == 0.0 => Bound::Compute,
        Some(r) => Bound::classify(intensity, r),
        None => Bound::Memory,
    };

    let achieved = time_ns.map(|ns| {
        let t = ns as f64 * 1e-9;
        Achieved {
            time_us: t * 1e6,
            achieved_tflops: flops / t / 1e12,
            achieved_gbs: bytes / t / 1e9,
            compute_utilization_pct: if peak_flops.is_finite() {
                flops / t / peak_flops * 100.0
            } else {
                0.0
            },
            memory_utilization_pct: bytes / t / bw * 100.0,
            roofline_attainment_pct: floor_s / t * 100.0,
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

//! A machine's measured roofs: bandwidth per memory level and access pattern (from a
//! working-set sweep) and peak FLOP/s per precision (from FMA kernels), beside the
//! theoretical figures. Measured with the suite's own kernels through the harness, so
//! every backend gets ceilings for free; written as a device file (`-o FILE`) that every
//! command accepts with `--device-file`.
//!
//! One module per probe: `bandwidth` (quick mode's DRAM and last-level-cache roofs, the
//! full working-set sweep and its levels), `compute` (FMA peaks), `matrix` (tensor-core
//! GEMM peaks); `measure` runs them, `options` says what to run, `device_file` writes the
//! result, and [`adjust`] keeps "% of measured ceiling" honest after a bench.

pub mod adjust;
mod bandwidth;
mod compute;
mod device_file;
mod matrix;
mod measure;
mod options;

pub use adjust::{Adjustment, AdjustmentKind, Residency, RoofKind};
pub use device_file::{checked_device_file, device_file_toml, today_utc};
pub use matrix::{matrix_tolerance, normwise_error};
pub use measure::{measure, measure_in};
pub use options::{CeilingOptions, MatrixProbe};

use rooftop_core::device::MemLevel;
use rooftop_core::units::Precision;
use serde::Serialize;

/// Memory access pattern of a bandwidth kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Read-only (a sum).
    Read,
    /// Write-only (a fill).
    Write,
    /// `b = a`.
    Copy,
    /// `a = b + s * c` (STREAM triad).
    Triad,
}

impl Pattern {
    pub fn as_str(self) -> &'static str {
        match self {
            Pattern::Read => "read",
            Pattern::Write => "write",
            Pattern::Copy => "copy",
            Pattern::Triad => "triad",
        }
    }
}

/// One point of the working-set sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepPoint {
    pub pattern: Pattern,
    pub working_set_bytes: u64,
    /// Median achieved GB/s (decimal).
    pub gbs: f64,
}

/// The bandwidth of one memory level with one pattern.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BandwidthCeiling {
    pub level: MemLevel,
    pub pattern: Pattern,
    /// Decimal GB/s.
    pub gbs: f64,
    /// The working set it was measured at.
    pub working_set_bytes: u64,
}

/// Peak FLOP/s of one precision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComputeCeiling {
    pub precision: Precision,
    /// `vector` (widest SIMD) or `scalar` (one lane) on CPUs; `vector`/`matrix` on GPUs.
    pub variant: String,
    /// Measured GFLOP/s (median).
    pub gflops: f64,
    /// Theoretical GFLOP/s of the same units, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theoretical_gflops: Option<f64>,
    /// How the theoretical figure is computed
    /// (`2 cores x 3.7 GHz x 16 lanes x 2 FLOP x 2 FMA pipes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theoretical_formula: Option<String>,
}

/// The capacity of a cache level as the kernels see it (all their threads together).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CacheCapacity {
    pub level: MemLevel,
    pub bytes: u64,
}

/// Measured ceilings of one device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ceilings {
    pub backend: String,
    pub device_name: String,
    /// `quick` (DRAM bandwidth and FMA peaks only, as `bench` measures them) or `full`.
    pub method: String,
    /// Threads / workers used.
    pub parallelism: u32,
    pub bandwidth: Vec<BandwidthCeiling>,
    pub sweep: Vec<SweepPoint>,
    pub compute: Vec<ComputeCeiling>,
    pub notes: Vec<String>,
    /// The cache capacities levels were assigned from (empty when unknown).
    pub caches: Vec<CacheCapacity>,
    /// Ceilings re-measured or raised after a result beat them (`rooftop bench`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub adjustments: Vec<Adjustment>,
}

impl Ceilings {
    /// The best bandwidth measured at `level` over all patterns, GB/s.
    pub fn best_gbs(&self, level: MemLevel) -> Option<f64> {
        self.bandwidth.iter().filter(|b| b.level == level).map(|b| b.gbs).reduce(f64::max)
    }

    /// The measured vector peak of `precision`, GFLOP/s (fp16/bf16 fall back to nothing:
    /// the CPU suite has no half-precision FMA kernel; matrix-unit peaks never count).
    pub fn vector_gflops(&self, precision: Precision) -> Option<f64> {
        self.compute
            .iter()
            .filter(|c| c.precision == precision && c.variant != "scalar" && c.variant != "matrix")
            .map(|c| c.gflops)
            .reduce(f64::max)
    }
}

/// `base` with the measured ceilings substituted for its roofs (DRAM and other levels'
/// bandwidth, vector FMA peaks), each marked `calibrated` with its source. What
/// `rooftop bench` analyses against when it has measured the ceilings.
pub fn calibrated_spec(
    base: &rooftop_core::device::DeviceSpec,
    c: &Ceilings,
) -> rooftop_core::device::DeviceSpec {
    use rooftop_core::device::{BandwidthRoof, FigureMeta, PeakRate};
    use rooftop_core::units::{Confidence, ExecUnit, Provenance};
    let meta = |what: String| FigureMeta {
        source: format!("measured by rooftop ceilings ({}): {what}", c.method),
        confidence: Confidence::Medium,
        provenance: Provenance::Calibrated,
    };
    let mut d = base.clone();
    for level in [MemLevel::Dram, MemLevel::Llc, MemLevel::L2, MemLevel::L1] {
        let Some(best) =
            c.bandwidth.iter().filter(|b| b.level == level).max_by(|a, b| a.gbs.total_cmp(&b.gbs))
        else {
            continue;
        };
        let m = meta(format!("{} at {} bytes", best.pattern.as_str(), best.working_set_bytes));
        if level == MemLevel::Dram {
            d.peak_bw_gbs = best.gbs;
            d.figure_meta.insert("memory.bandwidth_gbs".to_string(), m);
        } else {
            d.bandwidths.retain(|b| b.level != level);
            d.bandwidths.push(BandwidthRoof { level, gbs: best.gbs, meta: m });
        }
    }
    for p in [Precision::Fp32, Precision::Fp64] {
        if let Some(g) = c.vector_gflops(p) {
            d.peaks.retain(|r| !(r.precision == p && r.unit == ExecUnit::Vector));
            d.peaks.push(PeakRate {
                precision: p,
                unit: ExecUnit::Vector,
                tflops: g / 1e3,
                meta: meta(format!("{} vector FMA kernel", p.as_str())),
            });
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibrated_spec_overrides_roofs_and_marks_them() {
        let base = crate::mock::device_spec();
        let c = Ceilings {
            backend: "mock".into(),
            device_name: "mock".into(),
            method: "quick".into(),
            parallelism: 1,
            bandwidth: vec![
                BandwidthCeiling {
                    level: MemLevel::Dram,
                    pattern: Pattern::Triad,
                    gbs: 80.0,
                    working_set_bytes: 1 << 30,
                },
                BandwidthCeiling {
                    level: MemLevel::Dram,
                    pattern: Pattern::Copy,
                    gbs: 85.0,
                    working_set_bytes: 1 << 30,
                },
            ],
            sweep: Vec::new(),
            compute: vec![ComputeCeiling {
                precision: Precision::Fp32,
                variant: "vector".into(),
                gflops: 900.0,
                theoretical_gflops: None,
                theoretical_formula: None,
            }],
            notes: Vec::new(),
            caches: Vec::new(),
            adjustments: Vec::new(),
        };
        let d = calibrated_spec(&base, &c);
        assert_eq!(d.peak_bw_gbs, 85.0);
        assert_eq!(
            d.figure("memory.bandwidth_gbs").provenance,
            rooftop_core::units::Provenance::Calibrated
        );
        let p = d.peak(Precision::Fp32, rooftop_core::units::ExecUnit::Vector).unwrap();
        assert!((p.tflops - 0.9).abs() < 1e-12);
        // fp64 was not measured: the base figure stays.
        let p = d.peak(Precision::Fp64, rooftop_core::units::ExecUnit::Vector).unwrap();
        assert_eq!(p.tflops, 0.5);
    }
}

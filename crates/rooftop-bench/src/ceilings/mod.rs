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
pub(crate) mod device_file;
mod matrix;
mod measure;
mod options;

pub use adjust::{Adjustment, AdjustmentKind, Residency, RoofKind};
pub use device_file::{checked_device_file, device_file_toml, today_utc};
pub use matrix::{matrix_tolerance, normwise_error};
pub use measure::{measure, measure_in};
pub use options::{CeilingOptions, MatrixProbe};
/// The records of measured ceilings (`rooftop_core::schema::ceilings`).
pub use rooftop_core::schema::ceilings::{
    BandwidthCeiling, CacheCapacity, Ceilings, ComputeCeiling, Pattern, SweepPoint,
};

use rooftop_core::device::MemLevel;
use rooftop_core::units::Precision;

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

/// The calibrated roofs a device file carries (`provenance = "calibrated"`, as
/// `rooftop ceilings -o` writes them) as [`Ceilings`], so that a bench run judges its
/// results against the file rather than measuring again: DRAM and cache bandwidths, the
/// vector FMA peaks, and the cache sizes that decide where a working set lives. `None`
/// when the device has no calibrated roof. `method` reads "calibrated (file)".
pub fn ceilings_from_spec(d: &rooftop_core::device::DeviceSpec) -> Option<Ceilings> {
    use rooftop_core::units::{ExecUnit, Provenance};
    let calibrated = |m: &rooftop_core::device::FigureMeta| m.provenance == Provenance::Calibrated;
    // A file does not say at which working set or with which pattern it measured: the
    // best pattern is the roof; the working set is unknown (0).
    let roof = |level: MemLevel, gbs: f64| BandwidthCeiling {
        level,
        pattern: Pattern::Copy,
        gbs,
        working_set_bytes: 0,
    };
    let mut bandwidth = Vec::new();
    if calibrated(d.figure("memory.bandwidth_gbs")) {
        bandwidth.push(roof(MemLevel::Dram, d.peak_bw_gbs));
    }
    bandwidth
        .extend(d.bandwidths.iter().filter(|b| calibrated(&b.meta)).map(|b| roof(b.level, b.gbs)));
    let compute: Vec<ComputeCeiling> = d
        .peaks
        .iter()
        .filter(|p| p.unit == ExecUnit::Vector && calibrated(&p.meta))
        .map(|p| ComputeCeiling {
            precision: p.precision,
            variant: "vector".to_string(),
            gflops: p.tflops * 1e3,
            theoretical_gflops: None,
            theoretical_formula: None,
        })
        .collect();
    if bandwidth.is_empty() && compute.is_empty() {
        return None;
    }
    let caches = [(MemLevel::L2, d.l2_bytes), (MemLevel::Llc, d.llc_bytes)]
        .into_iter()
        .filter_map(|(level, b)| b.map(|bytes| CacheCapacity { level, bytes }))
        .collect();
    Some(Ceilings {
        backend: "device file".to_string(),
        device_name: d.name.clone(),
        method: "calibrated (file)".to_string(),
        parallelism: d.num_cu,
        bandwidth,
        sweep: Vec::new(),
        compute,
        notes: vec![format!(
            "roofs read from the device file of `{}` (provenance calibrated), not measured in \
             this run",
            d.id
        )],
        caches,
        adjustments: Vec::new(),
    })
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

//! Keeping "% of measured ceiling" honest.
//!
//! Two rules decide which measured roof a result is compared with, and what happens when a
//! result beats it:
//!
//! 1. **The right roof for the working set.** A memory-bound result whose buffers fit in
//!    half the last-level cache is compared with that cache's measured roof (quick
//!    ceilings measure it with `read` at half the cache), not with DRAM's; one whose
//!    buffers are between half the cache and 4x the cache (STREAM's rule for "DRAM
//!    resident") is *partly cache-resident*: it is compared with DRAM's roof, and the
//!    row says that it may exceed it. Compute-bound results are compared with the vector
//!    FMA peak of their precision.
//! 2. **A roof that is beaten was not measured well.** After the suite, every roof that a
//!    result beats by more than [`NOISE`] (partly cache-resident results excepted) is
//!    re-measured with the same ceiling kernels; the ceiling becomes the better of the two
//!    measurements ([`AdjustmentKind::Remeasured`]). If the result still beats it, the
//!    ceiling is raised to the result's rate ([`AdjustmentKind::Raised`]), naming the
//!    kernel: the machine demonstrably does that much. Both are recorded in
//!    [`Ceilings::adjustments`](super::Ceilings) and printed with the ceilings.
//!
//! So after a run every row is at most 100% + [`NOISE`] of its roof, or says why.

use super::bandwidth::{quick_case, quick_llc, QUICK_PATTERNS};
use super::measure::Runner;
use super::options::CeilingOptions;
use super::Ceilings;
use crate::backend::Backend;
use crate::error::BenchError;
use crate::harness::{Progress, Workspace};
use crate::suite;
use rooftop_core::device::MemLevel;
/// The roofs, residencies and adjustments of measured ceilings
/// (`rooftop_core::schema::ceilings`).
pub use rooftop_core::schema::ceilings::{Adjustment, AdjustmentKind, Residency, RoofKind};
use std::sync::atomic::AtomicBool;

/// How far above its roof a result may be before the roof counts as beaten (the spread
/// of a median against a best sample on a quiet machine).
pub const NOISE: f64 = 0.02;

/// A roof beaten by a result: the highest rate above it and who ran it.
#[derive(Debug, Clone, PartialEq)]
pub struct Beaten {
    pub roof: RoofKind,
    pub achieved: f64,
    pub by: String,
}

/// The roofs beaten by more than [`NOISE`], each with its best beater, from `(roof,
/// residency, achieved rate, label)` of every result.
pub fn beaten(c: &Ceilings, results: &[(RoofKind, Residency, f64, String)]) -> Vec<Beaten> {
    let mut out: Vec<Beaten> = Vec::new();
    for (roof, residency, achieved, by) in results {
        if *residency == Residency::PartlyCached {
            continue;
        }
        let Some(v) = c.value(*roof) else { continue };
        if *achieved <= v * (1.0 + NOISE) {
            continue;
        }
        match out.iter_mut().find(|b| b.roof == *roof) {
            Some(b) if b.achieved >= *achieved => {}
            Some(b) => {
                b.achieved = *achieved;
                b.by.clone_from(by);
            }
            None => out.push(Beaten { roof: *roof, achieved: *achieved, by: by.clone() }),
        }
    }
    out
}

/// Re-measures each beaten roof with the quick ceilings' kernels, keeps the better
/// value, and raises the roof to the beater's rate if it still beats it. Returns whether
/// anything changed.
pub fn remeasure_beaten(
    ws: &mut Workspace,
    backend: &mut dyn Backend,
    opts: &CeilingOptions,
    c: &mut Ceilings,
    beaten: &[Beaten],
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<bool, BenchError> {
    let simulated = backend.info().simulated;
    // Measured again, not answered from the results kept earlier.
    ws.forget_results();
    let mut run = Runner { ws, backend, opts: &opts.timing, stop, progress };
    let mut changed = false;
    for b in beaten {
        let Some(before) = c.value(b.roof) else { continue };
        let mut notes = Vec::new();
        let again = match b.roof {
            RoofKind::Bandwidth { level: MemLevel::Llc } => {
                quick_llc(&mut run, opts, simulated, &mut notes)?.map(|p| p.gbs)
            }
            RoofKind::Bandwidth { .. } => {
                let ws = opts.quick_ws(simulated);
                let mut best: Option<f64> = None;
                for pattern in QUICK_PATTERNS {
                    let case = quick_case(pattern, ws, opts, simulated);
                    if let Some(p) = run.point_at(pattern, &case, &mut notes)? {
                        best = Some(best.map_or(p.gbs, |v| v.max(p.gbs)));
                    }
                }
                best
            }
            RoofKind::Fma { precision } => {
                let case = opts.fma_case(precision, false);
                match run.best(&case, &mut notes)? {
                    Some(s) => Some(suite::KernelId::Fma.def().work(&case)?.flops / s / 1e9),
                    None => None,
                }
            }
        };
        if let Some(v) = again.filter(|v| *v > before) {
            c.adjust(b.roof, v, AdjustmentKind::Remeasured, &b.by);
            changed = true;
        }
        let now = c.value(b.roof).unwrap_or(before);
        if b.achieved > now * (1.0 + NOISE) {
            c.adjust(b.roof, b.achieved, AdjustmentKind::Raised, &b.by);
            changed = true;
        }
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ceilings::{BandwidthCeiling, CacheCapacity, ComputeCeiling, Pattern};
    use rooftop_core::units::Precision;

    fn ceilings() -> Ceilings {
        Ceilings {
            backend: "cpu".into(),
            device_name: "t".into(),
            method: "quick".into(),
            parallelism: 2,
            bandwidth: vec![
                BandwidthCeiling {
                    level: MemLevel::Dram,
                    pattern: Pattern::Triad,
                    gbs: 20.0,
                    working_set_bytes: 1 << 29,
                },
                BandwidthCeiling {
                    level: MemLevel::Llc,
                    pattern: Pattern::Read,
                    gbs: 200.0,
                    working_set_bytes: 16 << 20,
                },
            ],
            sweep: Vec::new(),
            compute: vec![ComputeCeiling {
                precision: Precision::Fp32,
                variant: "vector".into(),
                gflops: 100.0,
                theoretical_gflops: None,
                theoretical_formula: None,
            }],
            notes: Vec::new(),
            caches: vec![CacheCapacity { level: MemLevel::Llc, bytes: 32 << 20 }],
            adjustments: Vec::new(),
        }
    }

    #[test]
    fn residency_by_the_last_cache() {
        let c = ceilings();
        // 32 MiB cache: <= 16 MiB fits, < 128 MiB is partly cached, the rest is DRAM.
        assert_eq!(c.residency(16 << 20), Residency::Cached);
        assert_eq!(c.residency((16 << 20) + 1), Residency::PartlyCached);
        assert_eq!(c.residency(64 << 20), Residency::PartlyCached);
        assert_eq!(c.residency(128 << 20), Residency::Dram);
        assert_eq!(c.memory_roof(8 << 20).0, RoofKind::Bandwidth { level: MemLevel::Llc });
        assert_eq!(c.memory_roof(1 << 30).0, RoofKind::Bandwidth { level: MemLevel::Dram });
    }

    #[test]
    fn only_beaters_beyond_noise_count_and_partly_cached_ones_never() {
        let c = ceilings();
        let dram = RoofKind::Bandwidth { level: MemLevel::Dram };
        let fp32 = RoofKind::Fma { precision: Precision::Fp32 };
        let b = beaten(
            &c,
            &[
                (dram, Residency::Dram, 20.3, "within noise".into()),
                (dram, Residency::PartlyCached, 30.0, "rowsum".into()),
                (dram, Residency::Dram, 22.0, "scale".into()),
                (dram, Residency::Dram, 21.0, "copy".into()),
                (fp32, Residency::Dram, 136.0, "qgemm".into()),
            ],
        );
        assert_eq!(b.len(), 2);
        assert_eq!((b[0].achieved, b[0].by.as_str()), (22.0, "scale"));
        assert_eq!((b[1].achieved, b[1].by.as_str()), (136.0, "qgemm"));
    }

    #[test]
    fn an_adjustment_moves_the_best_entry_and_is_recorded() {
        let mut c = ceilings();
        let dram = RoofKind::Bandwidth { level: MemLevel::Dram };
        c.adjust(dram, 22.0, AdjustmentKind::Raised, "scale");
        assert_eq!(c.value(dram), Some(22.0));
        assert_eq!(c.adjustments.len(), 1);
        assert!(c.adjustments[0].describe().contains("20.0 -> 22.0 GB/s (scale ran above it)"));
    }

    #[test]
    fn beaten_roofs_are_remeasured_then_raised_on_the_mock() {
        use crate::harness::TimingOptions;
        use crate::mock::{MockBackend, MockConfig};
        let mut be = MockBackend::new(MockConfig::default());
        let timing = TimingOptions {
            warmup_runs: 1,
            warmup_time_s: 0.0,
            min_runs: 5,
            min_time_s: 0.0,
            ..TimingOptions::default()
        };
        let mut opts = CeilingOptions::new(true, timing);
        opts.max_working_set = Some(4 << 20);
        let mut c = ceilings();
        c.caches.clear();
        c.bandwidth.truncate(1); // DRAM 20 GB/s: the mock does ~100
        let dram = RoofKind::Bandwidth { level: MemLevel::Dram };
        let fp32 = RoofKind::Fma { precision: Precision::Fp32 };
        let beaten = [
            Beaten { roof: dram, achieved: 90.0, by: "triad".into() },
            Beaten { roof: fp32, achieved: 5000.0, by: "qgemm".into() },
        ];
        let mut ws = Workspace::new();
        let changed = remeasure_beaten(
            &mut ws,
            &mut be,
            &opts,
            &mut c,
            &beaten,
            &AtomicBool::new(false),
            &mut |_| {},
        )
        .unwrap();
        ws.release(&mut be);
        assert!(changed);
        // DRAM: re-measured at the mock's ~95 GB/s (4 MiB + 2 us launch), which the 90
        // GB/s result no longer beats: not raised.
        let kinds: Vec<(RoofKind, AdjustmentKind)> =
            c.adjustments.iter().map(|a| (a.roof, a.kind)).collect();
        assert_eq!(
            kinds,
            vec![
                (dram, AdjustmentKind::Remeasured),
                (fp32, AdjustmentKind::Remeasured),
                (fp32, AdjustmentKind::Raised)
            ]
        );
        assert!(c.value(dram).unwrap() > 90.0 * (1.0 - NOISE));
        // fp32: the mock's 1 TFLOP/s is below the 5000 GFLOP/s result: raised to it.
        assert_eq!(c.value(fp32), Some(5000.0));
        assert_eq!(c.adjustments[2].by, "qgemm");
    }
}

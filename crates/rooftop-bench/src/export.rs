//! Bench results in the documented schema (`docs/bench-schema.md`): each timed case
//! with its check, raw samples, statistics, work, achieved rates, % of the measured
//! ceiling and of the theoretical peak, floor, bound, attainment and findings.
//!
//! The records are `rooftop_core::schema::bench`'s (re-exported here); this module
//! fills them from the harness's results ([`evaluate`], [`device_record`],
//! [`timing_record`]).

use crate::ceilings::{Adjustment, Ceilings, Residency, RoofKind};
use crate::harness::{CaseResult, TimingOptions};
use crate::suite::Kernel;
use rooftop_core::analysis::{analyze, KernelRequest};
use rooftop_core::device::DeviceSpec;
use rooftop_core::device::MemLevel;
use rooftop_core::roofline::Bound;
use rooftop_core::schema::finding::FindingRecord;
use rooftop_core::units::{ExecUnit, Provenance};
use std::collections::BTreeMap;

pub use rooftop_core::schema::bench::{
    result_label, BenchReport, CacheState, Config, DeviceRecord, ResultRecord, RoofRef, RunTime,
    TimingRecord, SCHEMA_VERSION,
};

/// How cases are timed, as the export records it.
pub fn timing_record(o: &TimingOptions, timer: &str) -> TimingRecord {
    TimingRecord {
        warmup_runs: o.warmup_runs,
        warmup_time_s: o.warmup_time_s,
        min_runs: o.min_runs,
        max_runs: o.max_runs,
        min_time_s: o.min_time_s,
        min_sample_s: o.min_sample_s,
        cache: if o.flush_cache { CacheState::Flushed } else { CacheState::Warm },
        timer: timer.to_string(),
    }
}

/// Roofs a result is judged against.
#[derive(Debug, Clone, Copy)]
pub struct Roofs<'a> {
    /// Theoretical figures (catalog, datasheet, or the CPU's own reports).
    pub theoretical: &'a DeviceSpec,
    /// The spec the roofline analysis uses: `theoretical` with measured ceilings
    /// substituted (calibrated), or `theoretical` itself.
    pub analysis: &'a DeviceSpec,
    pub ceilings: Option<&'a Ceilings>,
}

/// Turns a harness result into an export row.
pub fn evaluate(
    kernel: &dyn Kernel,
    r: &CaseResult,
    roofs: Roofs<'_>,
) -> Result<ResultRecord, crate::error::BenchError> {
    let work = kernel.work(&r.case)?;
    let stats = r.timing.as_ref().map(|t| &t.stats);
    let median = stats.map(|s| s.median_s);
    let time_ns = median.map(|m| ((m * 1e9).round() as u64).max(1));
    let mut req = KernelRequest::new(work.clone());
    req.time_ns = time_ns;
    let model_err = |e| crate::error::BenchError::Model(format!("{}: {e}", r.case.kernel));
    let mut analysis = analyze(roofs.analysis, &req).map_err(model_err)?;
    // A memory-bound result whose buffers live in a cache is judged (floor, bound,
    // attainment, findings) against that level's measured roof, as its "% ceil" is:
    // not against DRAM's.
    if let Some(level_spec) = cache_level_spec(roofs, &analysis, &work, r.buffer_bytes) {
        analysis = analyze(&level_spec, &req).map_err(model_err)?;
    }
    // A latency probe (pointer chase) is judged by its time per dependent access
    // (`ns_per_access`), not as a copy that should reach the bandwidth roof.
    if let (Some(n), Some(m)) = (kernel.latency_accesses(&r.case).filter(|n| *n > 0), median) {
        analysis
            .findings
            .retain(|f| !f.id.starts_with("bandwidth.") && !f.id.starts_with("class."));
        let level =
            roofs.ceilings.map_or("unknown: no ceilings", |c| match c.residency(r.buffer_bytes) {
                Residency::Cached => "the last-level cache",
                Residency::PartlyCached => "partly the last-level cache",
                Residency::Dram => "DRAM",
            });
        analysis.findings.push(rooftop_core::diagnose::Finding::new(
            "latency.probe",
            "A latency probe: judged per dependent access",
            format!(
                "{} per dependent load over {} of buffers (residency: {level}); each load \
                 waits for the previous one, so bandwidth roofs do not apply",
                rooftop_core::units::si(m / n as f64, "s"),
                rooftop_core::units::si(r.buffer_bytes as f64, "B"),
            ),
            "Compare with the load-to-use latency of the level the chain lives in (vendor \
             optimization guides give L1/L2/L3/DRAM latencies in cycles).",
            None,
        ));
    }
    let bound = analysis.roofline.bound;
    let achieved_gbs = median.map(|m| work.bytes() / m / 1e9);
    let achieved_gflops = median.map(|m| work.flops / m / 1e9);
    let memory_side = matches!(bound, Bound::Memory) || work.flops == 0.0;

    let mut residency = None;
    let mut ceiling_note = None;
    let mut roof_kind = None;
    let measured_ceiling = roofs.ceilings.and_then(|c| {
        let roof = if memory_side {
            let (roof, res) = c.memory_roof(r.buffer_bytes);
            residency = Some(res);
            ceiling_note = residency_note(c, res, r.buffer_bytes);
            roof
        } else {
            RoofKind::Fma { precision: work.precision }
        };
        let value = c.value(roof)?;
        roof_kind = Some(roof);
        let what = match roof {
            RoofKind::Bandwidth { level } => format!("{} bandwidth (best pattern)", level.as_str()),
            RoofKind::Fma { precision } => format!("{} FMA", precision.as_str()),
        };
        let adjusted: Vec<String> =
            c.adjustments.iter().filter(|a| a.roof == roof).map(Adjustment::describe).collect();
        Some(RoofRef {
            what,
            value,
            unit: roof.unit().to_string(),
            provenance: Provenance::Calibrated,
            source: if adjusted.is_empty() {
                format!("rooftop ceilings ({}) on {}", c.method, c.device_name)
            } else {
                format!(
                    "rooftop ceilings ({}) on {}; {}",
                    c.method,
                    c.device_name,
                    adjusted.join("; ")
                )
            },
        })
    });
    let theoretical_peak = theoretical_roof(roofs.theoretical, memory_side, &work);
    let pct = |achieved: Option<f64>, roof: &Option<RoofRef>| match (achieved, roof) {
        (Some(a), Some(r)) if r.value > 0.0 => Some(a / r.value * 100.0),
        _ => None,
    };
    let achieved_for_roof = if memory_side { achieved_gbs } else { achieved_gflops };

    let timing = r.timing.as_ref();
    let sizes: BTreeMap<String, u64> =
        r.case.sizes.iter().map(|(k, v)| ((*k).to_string(), *v)).collect();
    Ok(ResultRecord {
        kernel: r.case.kernel.to_string(),
        implementation: r.implementation.clone(),
        config: Config {
            sizes,
            dtype: r.case.dtype.as_str().to_string(),
            weights: r.case.weights.map(rooftop_core::ops::quant::WeightFormat::label),
            variant: r.case.variant.map(str::to_string),
            launch: r.launch,
            launch_label: r.launch.label(),
            label: r.case.label(),
        },
        check: r.check.clone(),
        times_s: timing.map(|t| t.times_s.clone()).unwrap_or_default(),
        iters_per_sample: timing.map_or(0, |t| t.iters_per_sample),
        warmup_runs: timing.map_or(0, |t| t.warmup_runs),
        cache: timing.map(|t| t.cache),
        median_s: median,
        mean_s: stats.map(|s| s.mean_s),
        stddev_s: stats.map(|s| s.stddev_s),
        min_s: stats.map(|s| s.min_s),
        max_s: stats.map(|s| s.max_s),
        flops: work.flops,
        bytes: work.bytes(),
        flops_formula: work.flops_formula.clone(),
        bytes_formula: work.bytes_formula.clone(),
        arithmetic_intensity: Some(work.arithmetic_intensity()).filter(|v| v.is_finite()),
        achieved_gbs,
        achieved_gflops,
        pct_of_measured_ceiling: pct(achieved_for_roof, &measured_ceiling),
        measured_ceiling,
        residency,
        ceiling_note,
        roof: roof_kind,
        pct_of_theoretical_peak: pct(achieved_for_roof, &theoretical_peak),
        theoretical_peak,
        floor_s: analysis.roofline.floor_time_us * 1e-6,
        bound,
        attainment_pct: analysis.roofline.achieved.as_ref().map(|a| a.roofline_attainment_pct),
        speedup_vs_builtin: None,
        ns_per_access: match (kernel.latency_accesses(&r.case), median) {
            (Some(n), Some(m)) if n > 0 => Some(m * 1e9 / n as f64),
            _ => None,
        },
        findings: if median.is_some() {
            analysis.findings.into_iter().map(FindingRecord::from).collect()
        } else {
            Vec::new()
        },
        warnings: r.warnings.clone(),
        interrupted: r.interrupted,
        launches: r.launches.clone(),
        time_spent: r.time,
    })
}

/// `roofs.analysis` with the DRAM roof replaced by the measured roof of the cache level
/// the buffers live in, for a memory-side result; `None` when they live in DRAM (or no
/// cache roof was measured).
fn cache_level_spec(
    roofs: Roofs<'_>,
    first: &rooftop_core::analysis::Analysis,
    work: &rooftop_core::ops::Work,
    buffer_bytes: u64,
) -> Option<DeviceSpec> {
    let c = roofs.ceilings?;
    if !(matches!(first.roofline.bound, Bound::Memory) || work.flops == 0.0) {
        return None;
    }
    let (roof, _) = c.memory_roof(buffer_bytes);
    let RoofKind::Bandwidth { level } = roof else { return None };
    if level == MemLevel::Dram {
        return None;
    }
    let gbs = c.value(roof)?;
    let mut d = roofs.analysis.clone();
    d.peak_bw_gbs = gbs;
    d.figure_meta.insert(
        "memory.bandwidth_gbs".to_string(),
        rooftop_core::device::FigureMeta {
            source: format!(
                "rooftop ceilings ({}): {} bandwidth, where this working set lives",
                c.method,
                level.as_str()
            ),
            confidence: rooftop_core::units::Confidence::Medium,
            provenance: Provenance::Calibrated,
        },
    );
    Some(d)
}

/// The note of a memory-bound result whose buffers are (partly) cache-resident.
fn residency_note(c: &Ceilings, res: Residency, bytes: u64) -> Option<String> {
    let last = c.caches.iter().map(|x| x.bytes).max()?;
    let mib = |b: u64| format!("{:.3} MiB", b as f64 / f64::from(1u32 << 20));
    match res {
        Residency::Dram => None,
        Residency::Cached if c.value(RoofKind::Bandwidth { level: MemLevel::Llc }).is_some() => {
            Some(format!(
                "its buffers ({}) fit in half the {} last-level cache: % of the measured \
                 last-level cache bandwidth",
                mib(bytes),
                mib(last)
            ))
        }
        Residency::Cached | Residency::PartlyCached => Some(format!(
            "its buffers ({}) are within 4x the {} last-level cache, partly cache-resident: it \
             may run above the DRAM roof",
            mib(bytes),
            mib(last)
        )),
    }
}

fn theoretical_roof(
    d: &DeviceSpec,
    memory_side: bool,
    work: &rooftop_core::ops::Work,
) -> Option<RoofRef> {
    if memory_side {
        let meta = d.figure("memory.bandwidth_gbs");
        // An infinite bandwidth is none known (a compute-only run): no memory roof.
        if !d.peak_bw_gbs.is_finite() {
            return None;
        }
        // A DRAM figure that is itself a measurement is not a theoretical peak.
        if meta.provenance == Provenance::Calibrated || meta.provenance == Provenance::Measured {
            return None;
        }
        return Some(RoofRef {
            what: "dram bandwidth".to_string(),
            value: d.peak_bw_gbs,
            unit: "GB/s".to_string(),
            provenance: meta.provenance,
            source: meta.source.clone(),
        });
    }
    let choice = d.compute_roof(work.precision, work.unit)?;
    if matches!(choice.peak.meta.provenance, Provenance::Calibrated | Provenance::Measured) {
        return None;
    }
    Some(RoofRef {
        what: format!(
            "{} {}",
            choice.peak.precision.as_str(),
            if choice.peak.unit == ExecUnit::Matrix { "matrix" } else { "vector" }
        ),
        value: choice.peak.tflops * 1e3,
        unit: "GFLOP/s".to_string(),
        provenance: choice.peak.meta.provenance,
        source: choice.peak.meta.source.clone(),
    })
}

/// Fills `speedup_vs_builtin` of our results from the built-in results of the same case
/// (same kernel, sizes, dtype, weights and variant).
pub fn link_builtins(results: &mut [ResultRecord]) {
    let key = |r: &ResultRecord| {
        (
            r.kernel.clone(),
            format!("{:?}", r.config.sizes),
            r.config.dtype.clone(),
            r.config.weights.clone(),
            r.config.variant.clone(),
        )
    };
    let builtins: Vec<_> = results
        .iter()
        .filter(|r| r.implementation.builtin)
        .filter_map(|r| r.median_s.map(|m| (key(r), m)))
        .collect();
    for r in results.iter_mut().filter(|r| !r.implementation.builtin) {
        let k = key(r);
        let best = builtins.iter().filter(|(bk, _)| *bk == k).map(|(_, m)| *m).reduce(f64::min);
        if let (Some(b), Some(m)) = (best, r.median_s) {
            r.speedup_vs_builtin = Some(b / m);
        }
    }
}

/// The device record of the roofs an analysis used.
pub fn device_record(d: &DeviceSpec) -> DeviceRecord {
    // An infinite bandwidth is none known (a compute-only run): no DRAM roof listed.
    let mut roofs: Vec<RoofRef> = std::iter::once(d.peak_bw_gbs)
        .filter(|b| b.is_finite())
        .map(|value| RoofRef {
            what: "dram bandwidth".to_string(),
            value,
            unit: "GB/s".to_string(),
            provenance: d.figure("memory.bandwidth_gbs").provenance,
            source: d.figure("memory.bandwidth_gbs").source.clone(),
        })
        .collect();
    for p in &d.peaks {
        roofs.push(RoofRef {
            what: format!("{} {}", p.precision.as_str(), p.unit.as_str()),
            value: p.tflops * 1e3,
            unit: "GFLOP/s".to_string(),
            provenance: p.meta.provenance,
            source: p.meta.source.clone(),
        });
    }
    DeviceRecord { id: d.id.clone(), name: d.name.clone(), roofs }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ceilings::{BandwidthCeiling, CacheCapacity, Pattern};
    use crate::harness::{run_case, TimingOptions};
    use crate::mock::{MockBackend, MockConfig};
    use crate::suite::find;
    use rooftop_core::units::Precision;
    use std::sync::atomic::AtomicBool;

    /// DRAM 50 GB/s, LLC 400 GB/s, a 32 MiB last-level cache.
    fn ceilings() -> Ceilings {
        let bw = |level, gbs| BandwidthCeiling {
            level,
            pattern: Pattern::Read,
            gbs,
            working_set_bytes: 16 << 20,
        };
        Ceilings {
            backend: "mock".into(),
            device_name: "mock".into(),
            method: "test".into(),
            parallelism: 1,
            bandwidth: vec![bw(MemLevel::Dram, 50.0), bw(MemLevel::Llc, 400.0)],
            sweep: Vec::new(),
            compute: Vec::new(),
            notes: Vec::new(),
            caches: vec![CacheCapacity { level: MemLevel::Llc, bytes: 32 << 20 }],
            adjustments: Vec::new(),
        }
    }

    fn run(kernel: &str, case: &Case) -> (&'static dyn Kernel, CaseResult) {
        let k = find(kernel).unwrap();
        let mut mock = MockBackend::new(MockConfig::default());
        let imp = crate::backend::Backend::implementations(&mock, k.id()).remove(0);
        let opts = TimingOptions { min_time_s: 0.001, min_runs: 3, ..TimingOptions::default() };
        let r =
            run_case(&mut mock, k, case, &imp, None, &opts, &AtomicBool::new(false), &mut |_| {})
                .unwrap();
        (k, r)
    }

    use crate::Case;

    /// A triad of 64 Ki fp32 elements: 3 x 4 x 65,536 = 786,432 B of buffers, within half
    /// the 32 MiB cache, so its roof is the LLC's 400 GB/s: "% ceil" and the bandwidth
    /// finding both say 400 GB/s, never DRAM's 50.
    #[test]
    fn cache_resident_results_are_judged_against_the_cache_roof() {
        let case = Case {
            kernel: crate::KernelId::Triad.into(),
            sizes: vec![("n", 65_536)],
            dtype: Precision::Fp32,
            weights: None,
            variant: None,
        };
        let (k, r) = run("triad", &case);
        let c = ceilings();
        let spec = crate::ceilings::calibrated_spec(&crate::mock::device_spec(), &c);
        let roofs =
            Roofs { theoretical: &crate::mock::device_spec(), analysis: &spec, ceilings: Some(&c) };
        let rec = evaluate(k, &r, roofs).unwrap();
        assert_eq!(rec.residency, Some(Residency::Cached));
        assert_eq!(rec.measured_ceiling.as_ref().unwrap().value, 400.0);
        for f in &rec.findings {
            assert!(!f.evidence.contains("50.0 GB/s"), "judged against DRAM: {}", f.evidence);
        }
        // The floor is the bytes over the LLC roof: 786,432 B / 400 GB/s.
        assert!((rec.floor_s - 786_432.0 / 400e9).abs() < 1e-15, "{}", rec.floor_s);
    }

    /// The pointer chase is a latency probe: no "too slow for a copy", one latency finding
    /// with its time per access (mock: time / 2,500 steps).
    #[test]
    fn latency_probes_are_judged_as_latency() {
        let case = Case {
            kernel: crate::KernelId::Chase.into(),
            sizes: vec![("n", 1000), ("steps", 2500)],
            dtype: Precision::Fp32,
            weights: None,
            variant: None,
        };
        let (k, r) = run("chase", &case);
        let d = crate::mock::device_spec();
        let roofs = Roofs { theoretical: &d, analysis: &d, ceilings: None };
        let rec = evaluate(k, &r, roofs).unwrap();
        assert!(rec.findings.iter().all(|f| !f.title.contains("Too slow")), "{:?}", rec.findings);
        assert!(rec.findings.iter().all(|f| !f.id.starts_with("bandwidth.")));
        let f = rec.findings.iter().find(|f| f.id == "latency.probe").unwrap();
        let per = rec.median_s.unwrap() / 2500.0;
        assert!(f.evidence.contains(&rooftop_core::units::si(per, "s")), "{}", f.evidence);
    }
}

//! Bench results in the documented schema (`docs/bench-schema.md`): each timed case
//! with its check, raw samples, statistics, work, achieved rates, % of the measured
//! ceiling and of the theoretical peak, floor, bound, attainment and findings.

use crate::backend::{BackendInfo, Implementation, Launch};
use crate::ceilings::{Adjustment, Ceilings, Residency, RoofKind};
use crate::harness::{CacheState, CaseResult, CaseTime, TimingOptions};
use crate::suite::{CheckResult, Kernel};
use rooftop_core::analysis::{analyze, KernelRequest};
use rooftop_core::device::DeviceSpec;
use rooftop_core::device::MemLevel;
use rooftop_core::diagnose::Finding;
use rooftop_core::roofline::Bound;
use rooftop_core::units::{ExecUnit, Provenance};
use serde::Serialize;

/// Version of the bench JSON schema.
pub const SCHEMA_VERSION: u32 = 1;

/// A roof a result is compared with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoofRef {
    /// `dram bandwidth`, `fp32 vector FMA`.
    pub what: String,
    pub value: f64,
    /// `GB/s` or `GFLOP/s`.
    pub unit: String,
    pub provenance: Provenance,
    pub source: String,
}

/// The configuration of a result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// Size parameters by name.
    pub sizes: serde_json::Map<String, serde_json::Value>,
    pub dtype: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weights: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    pub launch: Launch,
    /// `Launch::label()`.
    pub launch_label: String,
    /// The case as a user types it, sizes in the kernel's order (`m=128 n=4096 k=4096
    /// fp32 int4-g128`).
    pub label: String,
}

/// One result row of the export.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResultRecord {
    pub kernel: String,
    pub implementation: Implementation,
    pub config: Config,
    pub check: CheckResult,
    /// Raw per-run seconds, one per sample.
    pub times_s: Vec<f64>,
    pub iters_per_sample: u32,
    pub warmup_runs: u32,
    pub cache: Option<CacheState>,
    pub median_s: Option<f64>,
    pub mean_s: Option<f64>,
    pub stddev_s: Option<f64>,
    pub min_s: Option<f64>,
    pub max_s: Option<f64>,
    /// FLOPs of one run (work model).
    pub flops: f64,
    /// Bytes of one run at device memory (work model).
    pub bytes: f64,
    pub flops_formula: String,
    pub bytes_formula: String,
    pub arithmetic_intensity: f64,
    pub achieved_gbs: Option<f64>,
    pub achieved_gflops: Option<f64>,
    /// The roof of the kernel's bound measured on this machine (`ceilings`): for
    /// memory-bound results the roof of where its buffers live (DRAM, or the last-level
    /// cache when they fit in half of it).
    pub measured_ceiling: Option<RoofRef>,
    pub pct_of_measured_ceiling: Option<f64>,
    /// Memory-bound results: where the buffers live relative to the caches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub residency: Option<crate::ceilings::Residency>,
    /// Why `pct_of_measured_ceiling` may exceed 100% or what it is relative to, when that
    /// is not plain DRAM or FMA peak.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ceiling_note: Option<String>,
    /// Which measured roof `measured_ceiling` is (for the adjustments after a run).
    #[serde(skip)]
    pub roof: Option<RoofKind>,
    /// The theoretical (catalog / datasheet / CPU-report) roof of the kernel's bound.
    pub theoretical_peak: Option<RoofRef>,
    pub pct_of_theoretical_peak: Option<f64>,
    /// Roofline floor time on the roofs the analysis used, seconds.
    pub floor_s: f64,
    /// `memory`, `compute` or `balanced`.
    pub bound: String,
    /// floor / median × 100.
    pub attainment_pct: Option<f64>,
    /// Median of the built-in implementation / our median (> 1: we are faster), on the
    /// results of the same case.
    pub speedup_vs_builtin: Option<f64>,
    /// Nanoseconds per dependent access (latency kernels such as `chase`).
    pub ns_per_access: Option<f64>,
    pub findings: Vec<Finding>,
    pub warnings: Vec<String>,
    pub interrupted: bool,
    /// Resources and theoretical occupancy of each launch (CUDA), next to the time.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub launches: Vec<crate::backend::LaunchInfo>,
    /// Where the case's wall time went (setup, check, warm-up, sampling).
    pub time_spent: CaseTime,
}

/// The device part of the export.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceRecord {
    pub id: String,
    pub name: String,
    /// Roofs the analysis used (after calibration, when ceilings were measured).
    pub roofs: Vec<RoofRef>,
}

/// How cases were timed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingRecord {
    pub warmup_runs: u32,
    pub warmup_time_s: f64,
    pub min_runs: u32,
    pub max_runs: u32,
    pub min_time_s: f64,
    pub min_sample_s: f64,
    pub cache: CacheState,
    pub timer: String,
}

impl TimingRecord {
    pub fn of(o: &TimingOptions, timer: &str) -> TimingRecord {
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
}

/// Where a run's wall time went: what the harness accounts for itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct RunTime {
    /// Seconds from the start of the command to the end of the last case.
    pub wall_s: f64,
    /// The cases' times summed, the quick ceilings' cases included.
    pub cases: CaseTime,
    /// The quick ceilings' part of `cases.total_s`.
    pub ceilings_s: f64,
    /// Timed runs and warm-up (`cases.warmup_s + cases.sampling_s`) as a percentage of
    /// `wall_s`.
    pub in_runs_pct: f64,
}

impl RunTime {
    /// The account of a run that has taken `wall_s` so far.
    pub fn of(wall_s: f64, cases: CaseTime, ceilings_s: f64) -> RunTime {
        let in_runs_pct = if wall_s > 0.0 { cases.runs_s() / wall_s * 100.0 } else { 0.0 };
        RunTime { wall_s, cases, ceilings_s, in_runs_pct }
    }
}

/// The whole export (`--export-json`, `--format json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchReport {
    pub schema_version: u32,
    pub tool: String,
    pub backend: BackendInfo,
    pub device: DeviceRecord,
    pub ceilings: Option<Ceilings>,
    pub timing: TimingRecord,
    pub results: Vec<ResultRecord>,
    pub warnings: Vec<String>,
    /// Ctrl-C stopped the run; `results` holds what finished.
    pub interrupted: bool,
    /// Where the wall time went, so far.
    pub time_spent: RunTime,
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
    let analysis = analyze(roofs.analysis, &req)
        .map_err(|e| crate::error::BenchError::Model(format!("{}: {e}", r.case.kernel)))?;
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
    let mut sizes = serde_json::Map::new();
    for (k, v) in &r.case.sizes {
        sizes.insert((*k).to_string(), serde_json::Value::from(*v));
    }
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
        arithmetic_intensity: work.arithmetic_intensity(),
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
        bound: bound.as_str().to_string(),
        attainment_pct: analysis.roofline.achieved.as_ref().map(|a| a.roofline_attainment_pct),
        speedup_vs_builtin: None,
        ns_per_access: match (kernel.latency_accesses(&r.case), median) {
            (Some(n), Some(m)) if n > 0 => Some(m * 1e9 / n as f64),
            _ => None,
        },
        findings: if median.is_some() { analysis.findings } else { Vec::new() },
        warnings: r.warnings.clone(),
        interrupted: r.interrupted,
        launches: r.launches.clone(),
        time_spent: r.time,
    })
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

/// `kernel config [implementation]`: how a result is named in notes and adjustments.
pub fn result_label(kernel: &str, config: &str, implementation: &str) -> String {
    format!("{kernel} {config} [{implementation}]")
}

fn theoretical_roof(
    d: &DeviceSpec,
    memory_side: bool,
    work: &rooftop_core::ops::Work,
) -> Option<RoofRef> {
    if memory_side {
        let meta = d.figure("memory.bandwidth_gbs");
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
    let mut roofs = vec![RoofRef {
        what: "dram bandwidth".to_string(),
        value: d.peak_bw_gbs,
        unit: "GB/s".to_string(),
        provenance: d.figure("memory.bandwidth_gbs").provenance,
        source: d.figure("memory.bandwidth_gbs").source.clone(),
    }];
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

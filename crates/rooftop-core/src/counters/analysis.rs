//! Per-dispatch and per-kernel records with achieved rates, a hierarchical roofline and
//! findings.
//!
//! Roofs: a profiler's own measured roofs win (rocprof-compute `roofline.csv`: "use
//! them as the roofs and say so"); otherwise the device the CLI resolved (catalog
//! datasheet, or a calibrated device file); otherwise none, and every attainment is
//! `null`.
//!
//! Aggregation by kernel name: extensive quantities (duration, bytes, FLOPs) are means
//! per dispatch over the dispatches that counted them (several ncu runs or rocprof passes
//! of one kernel often collect different metrics); percentages (hit rates, occupancy,
//! conflicts) are duration-weighted means over the dispatches that have them.

use super::derive::Coalescing;
use super::{CounterSet, Derived, Dim3, Dispatch, FlopCounts, Missing, ToolAggregate, ToolFinding};
use crate::device::{Catalog, DeviceSpec, LookupError, MemLevel};
use crate::diagnose::{Finding, Severity};
use crate::units::{si, sig3, ExecUnit, Provenance};
use serde::Serialize;
use std::collections::BTreeMap;

/// Where the roofs came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RoofSource {
    /// The profiler's own micro-benchmark on the profiled machine (rocprof-compute
    /// `roofline.csv`).
    Measured,
    /// The device catalog (datasheet peaks).
    Catalog,
    /// A calibrated device file (`rooftop ceilings -o`).
    Calibrated,
    /// No device known: no roofs.
    None,
}

impl RoofSource {
    pub fn as_str(self) -> &'static str {
        match self {
            RoofSource::Measured => "measured",
            RoofSource::Catalog => "catalog",
            RoofSource::Calibrated => "calibrated",
            RoofSource::None => "none",
        }
    }
}

/// One bandwidth roof.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BandwidthRoof {
    /// `dram`, `llc`, `l2`, `l1`, `lds`.
    pub level: String,
    pub gbs: f64,
}

/// One compute roof.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComputeRoof {
    /// `vector` or `matrix`.
    pub unit: String,
    pub precision: String,
    pub tflops: f64,
}

/// The roofs kernels are judged against.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Roofs {
    pub source: RoofSource,
    /// Catalog id or the tool's device name.
    pub device: Option<String>,
    pub bandwidth: Vec<BandwidthRoof>,
    pub compute: Vec<ComputeRoof>,
    pub notes: Vec<String>,
}

impl Roofs {
    /// The bandwidth roof of `level`, GB/s.
    pub fn bandwidth(&self, level: &str) -> Option<f64> {
        self.bandwidth.iter().find(|b| b.level == level).map(|b| b.gbs)
    }

    /// The compute roof for (unit, precision), TFLOP/s; a vector roof falls back to
    /// nothing, a matrix roof of an unknown precision to nothing (never another
    /// precision's figure).
    pub fn compute(&self, unit: &str, precision: &str) -> Option<f64> {
        self.compute.iter().find(|c| c.unit == unit && c.precision == precision).map(|c| c.tflops)
    }
}

/// One point of the hierarchical roofline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RooflinePoint {
    /// `dram`, `l2`, `l1`, `lds`.
    pub level: String,
    /// Bytes per dispatch at this level.
    pub bytes: f64,
    /// FLOP per byte at this level (`null` without FLOPs).
    pub arithmetic_intensity: Option<f64>,
    pub achieved_gbs: Option<f64>,
    pub roof_gbs: Option<f64>,
    /// Achieved over this level's roof, percent.
    pub pct_of_roof: Option<f64>,
}

/// A dispatch or a kernel (all dispatches of one name).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelRecord {
    pub name: String,
    /// Dispatch id (dispatch records); `null` for kernel aggregates.
    pub id: Option<u64>,
    pub count: u64,
    /// Mean duration per dispatch, ns.
    pub duration_ns: Option<f64>,
    pub total_duration_ns: Option<f64>,
    /// Per dispatch (mean for kernel aggregates).
    pub dram_bytes_read: Option<f64>,
    pub dram_bytes_written: Option<f64>,
    /// FLOPs per dispatch by precision, both units; `null` when not counted.
    pub flops: Option<BTreeMap<String, f64>>,
    pub l1_hit_rate_pct: Option<f64>,
    pub l2_hit_rate_pct: Option<f64>,
    /// DRAM bytes / duration, GB/s.
    pub achieved_gbs: Option<f64>,
    /// FLOPs / duration, TFLOP/s.
    pub achieved_tflops: Option<f64>,
    /// FLOP per DRAM byte.
    pub arithmetic_intensity: Option<f64>,
    /// `memory`, `compute`, or `unknown` (with the reason in `missing`).
    pub bound: String,
    /// Achieved over the roof that bounds the kernel (the lower of the DRAM line at this
    /// intensity and the compute peak), percent.
    pub pct_of_roof: Option<f64>,
    /// The compute roof used: (`vector`|`matrix`, precision).
    pub compute_roof: Option<(String, String)>,
    pub roofline: Vec<RooflinePoint>,
    pub grid: Option<[u64; 3]>,
    pub block: Option<[u64; 3]>,
    pub vgprs: Option<u32>,
    pub agprs: Option<u32>,
    pub sgprs: Option<u32>,
    pub shared_bytes: Option<u64>,
    pub derived: Derived,
    pub findings: Vec<Finding>,
    /// The profiler's own findings (Nsight Compute rules), labelled as the tool's.
    pub tool_findings: Vec<ToolFinding>,
    pub missing: Vec<Missing>,
}

/// The whole analysis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterReport {
    pub set: CounterSet,
    pub roofs: Roofs,
    /// Every formula used, with its source, once.
    pub formulas: Vec<String>,
    pub dispatches: Vec<KernelRecord>,
    /// Aggregated by name, by total time descending.
    pub kernels: Vec<KernelRecord>,
}

/// Analyses `set` on a catalog device: the one `device` names (id, alias or
/// tool-printed name; an error when the catalog has none such), else the one the files
/// name ([`crate::device::resolve_named`]: a name the catalog lacks gives no roofs and a
/// note in [`Roofs::notes`] saying so, never a sibling entry).
pub fn analyze_in(
    set: CounterSet,
    catalog: &Catalog,
    device: Option<&str>,
) -> Result<CounterReport, LookupError> {
    let (device, note) = if let Some(name) = device {
        (Some(catalog.lookup(name)?), None)
    } else {
        let r = crate::device::resolve_named(
            catalog,
            set.device.name.as_deref(),
            set.device.arch.as_deref(),
        );
        (r.device, r.note)
    };
    let mut report = analyze(set, device);
    if let Some(note) = note {
        report.roofs.notes = vec![note];
    }
    Ok(report)
}

/// Analyses a counter set against `device` (a resolved catalog entry, if any), or the
/// set's own measured roofs.
pub fn analyze(set: CounterSet, device: Option<&DeviceSpec>) -> CounterReport {
    let roofs = roofs(&set, device);
    let vendor = set.vendor();
    let derived: Vec<Derived> = set
        .dispatches
        .iter()
        .map(|d| {
            let mut x = super::derive(vendor, d, &set.device);
            if let Some(dev) = device {
                super::launch::fill(d, &mut x, dev);
            }
            x
        })
        .collect();
    let mut formulas: Vec<String> = Vec::new();
    for f in derived.iter().flat_map(|d| &d.formulas) {
        if !formulas.contains(f) {
            formulas.push(f.clone());
        }
    }
    // Group by name, in first-seen order, then sort by total time.
    let mut order: Vec<&str> = Vec::new();
    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, d) in set.dispatches.iter().enumerate() {
        let g = groups.entry(d.name.as_str()).or_default();
        if g.is_empty() {
            order.push(d.name.as_str());
        }
        g.push(i);
    }
    let mut kernels: Vec<KernelRecord> = order
        .iter()
        .map(|name| {
            let idx = &groups[name];
            let parts: Vec<&Derived> = idx.iter().map(|&i| &derived[i]).collect();
            let first = idx.first().map(|&i| &set.dispatches[i]);
            let uniform = |f: fn(&Dispatch) -> Option<Dim3>| {
                idx.iter().all(|&i| f(&set.dispatches[i]) == first.and_then(f))
            };
            let agg = aggregate(&parts);
            let mut r = record(name, None, idx.len() as u64, agg, first, &roofs, device);
            // Launch shapes only when every dispatch agrees.
            if !uniform(|d| d.grid) {
                r.grid = None;
            }
            if !uniform(|d| d.block) {
                r.block = None;
            }
            r.tool_findings =
                super::rules::collect(idx.iter().flat_map(|&i| &set.dispatches[i].tool_rules));
            r
        })
        .collect();
    for a in &set.aggregates {
        kernels.push(tool_aggregate(a));
    }
    // The dispatch records take the derived values (the kernels above only borrowed them).
    let dispatches: Vec<KernelRecord> = set
        .dispatches
        .iter()
        .zip(derived)
        .map(|(d, x)| {
            let mut r = record(&d.name, Some(d.id), 1, x, Some(d), &roofs, device);
            r.tool_findings = super::rules::collect(&d.tool_rules);
            r
        })
        .collect();
    kernels.sort_by(|a, b| {
        b.total_duration_ns.unwrap_or(0.0).total_cmp(&a.total_duration_ns.unwrap_or(0.0))
    });
    CounterReport { set, roofs, formulas, dispatches, kernels }
}

/// Roofs from the set's measured roofline, else the device.
fn roofs(set: &CounterSet, device: Option<&DeviceSpec>) -> Roofs {
    if !set.measured_roofs.is_empty() {
        let mut r = Roofs {
            source: RoofSource::Measured,
            device: set.device.name.clone(),
            bandwidth: Vec::new(),
            compute: Vec::new(),
            notes: vec![format!(
                "roofs measured by {}'s own micro-benchmark on the profiled machine \
                 (roofline.csv), used instead of datasheet peaks",
                set.source.format.as_str()
            )],
        };
        for m in &set.measured_roofs {
            let level = match m.kind.as_str() {
                "hbm" => Some("dram"),
                "mall" => Some("llc"),
                "l2" => Some("l2"),
                "l1" => Some("l1"),
                "lds" => Some("lds"),
                _ => None,
            };
            if let Some(level) = level {
                r.bandwidth.push(BandwidthRoof { level: level.to_string(), gbs: m.value });
            } else if let Some(p) = &m.precision {
                let unit = if m.kind == "mfma" { "matrix" } else { "vector" };
                r.compute.push(ComputeRoof {
                    unit: unit.to_string(),
                    precision: p.clone(),
                    tflops: m.value / 1e3,
                });
            }
        }
        if let Some(d) = device {
            r.notes.push(format!(
                "device {} ({}) is used for its unit counts only; its datasheet peaks are \
                 not the roofs here",
                d.id, d.name
            ));
        }
        return r;
    }
    let Some(d) = device else {
        return Roofs {
            source: RoofSource::None,
            device: set.device.name.clone(),
            bandwidth: Vec::new(),
            compute: Vec::new(),
            notes: vec!["no device known (the files do not name one rooftop's catalog has): \
                 achieved rates are shown without attainment; pass --device"
                .to_string()],
        };
    };
    let calibrated = d.peaks.iter().any(|p| p.meta.provenance == Provenance::Calibrated)
        || d.bandwidths.iter().any(|b| b.meta.provenance == Provenance::Calibrated);
    let mut r = Roofs {
        source: if calibrated { RoofSource::Calibrated } else { RoofSource::Catalog },
        device: Some(d.id.clone()),
        bandwidth: vec![BandwidthRoof { level: "dram".to_string(), gbs: d.peak_bw_gbs }],
        compute: Vec::new(),
        notes: vec![format!("roofs from {} ({}): dense datasheet peaks", d.id, d.name)],
    };
    for b in &d.bandwidths {
        let level = match b.level {
            MemLevel::Dram => continue,
            MemLevel::Llc => "llc",
            MemLevel::L2 => "l2",
            MemLevel::L1 => "l1",
        };
        r.bandwidth.push(BandwidthRoof { level: level.to_string(), gbs: b.gbs });
    }
    for p in &d.peaks {
        r.compute.push(ComputeRoof {
            unit: match p.unit {
                ExecUnit::Vector => "vector",
                ExecUnit::Matrix => "matrix",
            }
            .to_string(),
            precision: p.precision.as_str().to_string(),
            tflops: p.tflops,
        });
    }
    r
}

/// Means of extensive quantities and duration-weighted percentages over dispatches.
fn aggregate(parts: &[&Derived]) -> Derived {
    // Mean over the dispatches that have the quantity: several ncu runs or rocprof passes
    // of one kernel often collect different metrics, and a kernel's bytes per dispatch do
    // not depend on which run counted them.
    let sum = |f: &dyn Fn(&Derived) -> Option<f64>| -> Option<f64> {
        let vals: Vec<f64> = parts.iter().filter_map(|d| f(d)).collect();
        (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64)
    };
    let weighted = |f: &dyn Fn(&Derived) -> Option<f64>| -> Option<f64> {
        let mut num = 0.0;
        let mut den = 0.0;
        let mut any = false;
        for d in parts {
            if let Some(v) = f(d) {
                let w = d.duration_ns.unwrap_or(1.0).max(1e-9);
                num += v * w;
                den += w;
                any = true;
            }
        }
        (any && den > 0.0).then(|| num / den)
    };
    let mut flops = FlopCounts::default();
    let counted: Vec<&&Derived> = parts.iter().filter(|d| !d.flops.is_empty()).collect();
    if !counted.is_empty() {
        for d in &counted {
            flops.add(&d.flops);
        }
        flops = flops.scaled(1.0 / counted.len() as f64);
    }
    let coalescing = {
        let cs: Vec<&Coalescing> = parts.iter().filter_map(|d| d.coalescing.as_ref()).collect();
        cs.first().map(|c0| Coalescing {
            level: c0.level.clone(),
            bytes_per_request: cs.iter().map(|c| c.bytes_per_request).sum::<f64>()
                / cs.len() as f64,
            ideal_bytes_per_request: c0.ideal_bytes_per_request,
        })
    };
    // Missing for the kernel: what no dispatch gave (a quantity some dispatch gave has
    // a mean above). The first dispatch's wording says what it needs. Dispatches with no
    // counters at all (traced, not counted) gave nothing and do not narrow the list.
    let counted: Vec<&&Derived> = parts
        .iter()
        .filter(|d| !d.missing.iter().any(|m| m.quantity == super::derive::NO_COUNTERS))
        .collect();
    let basis: Vec<&&Derived> = if counted.is_empty() { parts.iter().collect() } else { counted };
    let missing: Vec<Missing> = basis
        .first()
        .map(|first| {
            first
                .missing
                .iter()
                .filter(|m| {
                    basis.iter().all(|d| d.missing.iter().any(|x| x.quantity == m.quantity))
                })
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let mut formulas: Vec<String> = Vec::new();
    for d in parts {
        for f in &d.formulas {
            if !formulas.contains(f) {
                formulas.push(f.clone());
            }
        }
    }
    Derived {
        duration_ns: sum(&|d| d.duration_ns),
        dram_bytes_read: sum(&|d| d.dram_bytes_read),
        dram_bytes_written: sum(&|d| d.dram_bytes_written),
        dram_bytes_total: sum(&|d| d.dram_bytes_total),
        l2_bytes: sum(&|d| d.l2_bytes),
        l1_bytes: sum(&|d| d.l1_bytes),
        lds_bytes: sum(&|d| d.lds_bytes),
        flops,
        l1_hit_rate_pct: weighted(&|d| d.l1_hit_rate_pct),
        l2_hit_rate_pct: weighted(&|d| d.l2_hit_rate_pct),
        lds_bank_conflict_pct: weighted(&|d| d.lds_bank_conflict_pct),
        achieved_occupancy_pct: weighted(&|d| d.achieved_occupancy_pct),
        theoretical_occupancy_pct: weighted(&|d| d.theoretical_occupancy_pct),
        waves_launched: sum(&|d| d.waves_launched),
        grid_waves: sum(&|d| d.grid_waves),
        coalescing,
        missing,
        formulas,
    }
}

/// A record from derived (per-dispatch) values.
fn record(
    name: &str,
    id: Option<u64>,
    count: u64,
    x: Derived,
    launch: Option<&Dispatch>,
    roofs: &Roofs,
    device: Option<&DeviceSpec>,
) -> KernelRecord {
    let secs = x.duration_ns.filter(|t| *t > 0.0).map(|t| t * 1e-9);
    let flops_total = (!x.flops.is_empty()).then(|| x.flops.total());
    // One direction alone is a lower bound of the traffic, not the traffic: no rate.
    let dram = x.dram_bytes();
    let achieved_gbs = dram.zip(secs).map(|(b, s)| b / s / 1e9);
    let achieved_tflops = flops_total.zip(secs).map(|(f, s)| f / s / 1e12);
    let ai = flops_total.zip(dram).filter(|(_, b)| *b > 0.0).map(|(f, b)| f / b);

    let mut missing = x.missing.clone();
    if secs.is_none() {
        push_missing(
            &mut missing,
            "duration_ns",
            "kernel start/end timestamps or gpu__time_duration.sum",
        );
    }

    // Compute roof: the dominant unit and precision; fp32 vector when nothing counted.
    let compute_roof = x
        .flops
        .dominant()
        .map(|(u, p)| (u.to_string(), p.to_string()))
        .or_else(|| Some(("vector".to_string(), "fp32".to_string())));
    let peak_tflops = compute_roof.as_ref().and_then(|(u, p)| roofs.compute(u, p));
    let dram_roof = roofs.bandwidth("dram");

    let (bound, pct_of_roof) = match (ai, flops_total, dram_roof, peak_tflops) {
        (_, Some(f), _, _) if f == 0.0 && dram.is_some() => {
            ("memory", achieved_gbs.zip(dram_roof).map(|(a, r)| 100.0 * a / r))
        }
        (Some(ai), _, Some(bw), Some(peak)) => {
            let ridge = peak * 1e12 / (bw * 1e9);
            let attainable_tflops = (ai * bw * 1e9 / 1e12).min(peak);
            let pct = achieved_tflops.map(|a| 100.0 * a / attainable_tflops);
            (if ai < ridge { "memory" } else { "compute" }, pct)
        }
        _ => ("unknown", None),
    };

    let mut roofline = Vec::new();
    for (level, bytes) in
        [("dram", dram), ("l2", x.l2_bytes), ("l1", x.l1_bytes), ("lds", x.lds_bytes)]
    {
        let Some(bytes) = bytes else { continue };
        let achieved = secs.map(|s| bytes / s / 1e9);
        let roof = roofs.bandwidth(level);
        roofline.push(RooflinePoint {
            level: level.to_string(),
            bytes,
            arithmetic_intensity: flops_total.filter(|_| bytes > 0.0).map(|f| f / bytes),
            achieved_gbs: achieved,
            roof_gbs: roof,
            pct_of_roof: achieved.zip(roof).map(|(a, r)| 100.0 * a / r),
        });
    }

    let mut r = KernelRecord {
        name: name.to_string(),
        id,
        count,
        duration_ns: x.duration_ns,
        total_duration_ns: x.duration_ns.map(|t| t * count as f64),
        dram_bytes_read: x.dram_bytes_read,
        dram_bytes_written: x.dram_bytes_written,
        flops: (!x.flops.is_empty()).then(|| x.flops.by_precision()),
        l1_hit_rate_pct: x.l1_hit_rate_pct,
        l2_hit_rate_pct: x.l2_hit_rate_pct,
        achieved_gbs,
        achieved_tflops,
        arithmetic_intensity: ai,
        bound: bound.to_string(),
        pct_of_roof,
        compute_roof: if bound == "unknown" { None } else { compute_roof },
        roofline,
        grid: launch.and_then(|d| d.grid),
        block: launch.and_then(|d| d.block),
        vgprs: launch.and_then(|d| d.vgprs),
        agprs: launch.and_then(|d| d.agprs),
        sgprs: launch.and_then(|d| d.sgprs),
        shared_bytes: launch.and_then(|d| d.shared_bytes),
        derived: x,
        findings: Vec::new(),
        tool_findings: Vec::new(),
        missing,
    };
    r.findings = findings(&r, roofs, device);
    r
}

fn push_missing(m: &mut Vec<Missing>, quantity: &str, needs: &str) {
    if !m.iter().any(|x| x.quantity == quantity) {
        m.push(Missing { quantity: quantity.to_string(), needs: needs.to_string() });
    }
}

/// A kernel from a tool-written aggregate (durations only).
fn tool_aggregate(a: &ToolAggregate) -> KernelRecord {
    let mean = a.mean_ns.or_else(|| (a.count > 0).then(|| a.total_ns / a.count as f64));
    let mut missing = Vec::new();
    push_missing(
        &mut missing,
        "dram_bytes_read, dram_bytes_written, flops, hit rates",
        "hardware counters: this file has durations only (profile with counters: rocprof \
         -i input.txt / rocprofv3 --pmc / ncu)",
    );
    KernelRecord {
        name: a.name.clone(),
        id: None,
        count: a.count,
        duration_ns: mean,
        total_duration_ns: Some(a.total_ns),
        dram_bytes_read: None,
        dram_bytes_written: None,
        flops: None,
        l1_hit_rate_pct: None,
        l2_hit_rate_pct: None,
        achieved_gbs: None,
        achieved_tflops: None,
        arithmetic_intensity: None,
        bound: "unknown".to_string(),
        pct_of_roof: None,
        compute_roof: None,
        roofline: Vec::new(),
        grid: None,
        block: None,
        vgprs: None,
        agprs: None,
        sgprs: None,
        shared_bytes: None,
        derived: Derived { duration_ns: mean, ..Derived::default() },
        findings: short_kernel(mean).into_iter().collect(),
        tool_findings: Vec::new(),
        missing,
    }
}

/// Thresholds of the counter findings, with their sources.
mod limits {
    /// seed 002 decision tree: < 30% of peak bandwidth is a major issue, 30–70% has
    /// room, >= 70% is near-optimal.
    pub const BW_MAJOR_PCT: f64 = 30.0;
    pub const BW_GOOD_PCT: f64 = 70.0;
    /// Uncoalesced: more than twice the minimum bytes per request (Nsight Compute's
    /// "uncoalesced global accesses" rule fires on excess sectors; 2x is our line).
    pub const COALESCING_RATIO: f64 = 2.0;
    /// LDS / shared-memory bank conflicts above this share of accesses are worth fixing.
    pub const BANK_CONFLICT_PCT: f64 = 10.0;
    /// seed 000 §4.3: occupancy below 50% (here: achieved below half the theoretical).
    pub const OCCUPANCY_RATIO: f64 = 0.5;
    /// seed 002 "Kernel Launch Overhead": 5–20 µs launch cost dominates small kernels.
    pub const SHORT_KERNEL_NS: f64 = 5_000.0;
    /// Cache behaviour (seed 003 §3.2): an L2 hit rate below this with DRAM traffic
    /// above the output size suggests re-reads that tiling would serve from cache.
    pub const L2_HIT_LOW_PCT: f64 = 50.0;
    /// A fractional last wave holding less than this share of a full wave.
    pub const TAIL_SHARE: f64 = 0.5;
}

fn finding(
    id: &'static str,
    severity: Severity,
    title: String,
    evidence: String,
    recommendation: &str,
    expected_gain: Option<String>,
) -> Finding {
    Finding {
        id,
        severity,
        title,
        evidence,
        recommendation: recommendation.to_string(),
        expected_gain,
        stake: None,
    }
}

fn short_kernel(duration_ns: Option<f64>) -> Option<Finding> {
    let t = duration_ns?;
    (t < limits::SHORT_KERNEL_NS).then(|| {
        finding(
            "counters.short_kernel",
            Severity::Info,
            format!("{} per dispatch: launch overhead dominates", si(t * 1e-9, "s")),
            format!(
                "a launch costs microseconds of host and driver time (rooftop's 5 µs \
                 threshold, docs/reference/formulas.md); this kernel \
                 runs {}",
                si(t * 1e-9, "s")
            ),
            "fuse it with its neighbours, batch the work into fewer launches, or capture \
             the sequence in a CUDA/HIP graph",
            None,
        )
    })
}

/// What the counters reveal that a model cannot.
fn findings(r: &KernelRecord, roofs: &Roofs, device: Option<&DeviceSpec>) -> Vec<Finding> {
    let mut out = Vec::new();
    let x = &r.derived;
    // Bandwidth attainment of memory-bound kernels.
    if r.bound == "memory" {
        if let (Some(a), Some(roof)) = (r.achieved_gbs, roofs.bandwidth("dram")) {
            let pct = 100.0 * a / roof;
            let src = roofs.source.as_str();
            if pct > 110.0 {
                out.push(finding(
                    "counters.above_dram_roof",
                    Severity::Info,
                    format!("{}% of the {src} DRAM roof", sig3(pct)),
                    format!("{} GB/s achieved against {} GB/s", sig3(a), sig3(roof)),
                    "the roof is not a hard limit here (a measured or datasheet figure below \
                     what this kernel reached); check the device and the counter set",
                    None,
                ));
            } else if pct < limits::BW_MAJOR_PCT {
                out.push(finding(
                    "counters.bandwidth_low",
                    Severity::Critical,
                    format!("memory-bound at {}% of the {src} DRAM roof", sig3(pct)),
                    format!("{} GB/s of {} GB/s", sig3(a), sig3(roof)),
                    "below 30% of peak (docs/reference/formulas.md): look for a grid too small \
                     to fill the GPU, \
                     launch overhead, uncoalesced accesses or register spills",
                    Some(format!("up to {}x at 70% of the roof", sig3(0.7 * roof / a))),
                ));
            } else if pct < limits::BW_GOOD_PCT {
                out.push(finding(
                    "counters.bandwidth_room",
                    Severity::Warning,
                    format!("memory-bound at {}% of the {src} DRAM roof", sig3(pct)),
                    format!("{} GB/s of {} GB/s", sig3(a), sig3(roof)),
                    "30-70% of peak (docs/reference/formulas.md): check coalescing, block size \
                     and redundant \
                     reads",
                    Some(format!("up to {}x at 70% of the roof", sig3(0.7 * roof / a))),
                ));
            }
        }
    } else if r.bound == "compute" {
        if let Some(p) = r.pct_of_roof.filter(|p| *p < limits::BW_GOOD_PCT) {
            let (u, prec) = r.compute_roof.clone().unwrap_or_default();
            out.push(finding(
                "counters.compute_low",
                if p < limits::BW_MAJOR_PCT { Severity::Critical } else { Severity::Warning },
                format!("compute-bound at {}% of the {prec} {u} roof", sig3(p)),
                format!(
                    "{} TFLOP/s achieved, arithmetic intensity {} FLOP/B",
                    r.achieved_tflops.map_or("?".to_string(), sig3),
                    r.arithmetic_intensity.map_or("?".to_string(), sig3)
                ),
                "raise instruction-level parallelism and occupancy; use the matrix units \
                 (tensor cores / MFMA) where the precision allows",
                None,
            ));
        }
    }
    // Cache behaviour.
    if let (Some(h), Some(read), Some(l2)) = (x.l2_hit_rate_pct, x.dram_bytes_read, x.l2_bytes) {
        if h < limits::L2_HIT_LOW_PCT && l2 > 0.0 && read > 0.5 * l2 {
            out.push(finding(
                "counters.l2_hit_low",
                Severity::Info,
                format!("L2 hit rate {}%: most L2 traffic goes to DRAM", sig3(h)),
                format!("{} read from DRAM for {} of L2 traffic", si(read, "B"), si(l2, "B")),
                "expected for a streaming kernel that touches each byte once; if the kernel \
                 re-reads data, tile the loop so the reuse happens while the tile is in L2 or \
                 shared memory/LDS (strided K/V and weight access are the usual causes)",
                None,
            ));
        }
    }
    if let Some(c) = &x.coalescing {
        let ratio = c.bytes_per_request / c.ideal_bytes_per_request;
        if ratio > limits::COALESCING_RATIO {
            out.push(finding(
                "counters.uncoalesced",
                Severity::Warning,
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
            Severity::Warning,
            format!("{}% of shared-memory/LDS accesses hit bank conflicts", sig3(p)),
            format!("bank-conflict share {}%", sig3(p)),
            "pad shared arrays (e.g. [32][33]) or swizzle the index so a warp/wave touches \
             distinct banks",
            None,
        ));
    }
    if let (Some(a), Some(t)) = (x.achieved_occupancy_pct, x.theoretical_occupancy_pct) {
        if t > 0.0 && a < limits::OCCUPANCY_RATIO * t {
            out.push(finding(
                "counters.occupancy_low",
                Severity::Warning,
                format!("achieved occupancy {}% of a theoretical {}%", sig3(a), sig3(t)),
                format!("{}% achieved vs {}% theoretical", sig3(a), sig3(t)),
                "warps/waves finish unevenly or the grid is small: balance the work per block, \
                 launch more blocks, or shorten the tail",
                None,
            ));
        }
    }
    if let Some(w) = x.grid_waves.filter(|w| *w > 0.0) {
        if w < 1.0 {
            out.push(finding(
                "counters.grid_small",
                Severity::Warning,
                format!("the grid fills {}% of one wave of the GPU", sig3(100.0 * w)),
                format!("{} waves of blocks", sig3(w)),
                "launch more blocks (split the work finer, or split-K for GEMMs)",
                Some(format!("up to {}x with a full wave", sig3(1.0 / w))),
            ));
        } else {
            let frac = w - w.floor();
            if frac > 0.0 && frac < limits::TAIL_SHARE && w < 8.0 {
                let full = w.ceil();
                let idle = 100.0 * (full - w) / full;
                out.push(finding(
                    "counters.tail_effect",
                    Severity::Info,
                    format!(
                        "tail effect: the last of {full} waves is {}% full",
                        sig3(100.0 * frac)
                    ),
                    format!(
                        "{} waves of blocks; {}% of SM/CU time idles in the tail",
                        sig3(w),
                        sig3(idle)
                    ),
                    "change the block count to a multiple of the SM/CU count, or make blocks \
                     smaller so the tail is shorter",
                    None,
                ));
            }
        }
    }
    if let Some(f) = short_kernel(x.duration_ns) {
        out.push(f);
    }
    let _ = device;
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::{CounterFormat, CounterSource, DeviceInfo, MeasuredRoof};

    fn set(dispatches: Vec<Dispatch>) -> CounterSet {
        CounterSet {
            source: CounterSource {
                format: CounterFormat::NcuRaw,
                files: vec!["x.csv".to_string()],
                tool_version: None,
                notes: Vec::new(),
            },
            device: DeviceInfo::default(),
            measured_roofs: Vec::new(),
            dispatches,
            aggregates: Vec::new(),
            activity: None,
        }
    }

    fn copy_kernel(id: u64, dur_ns: f64, bytes: f64) -> Dispatch {
        let mut d = Dispatch {
            id,
            name: "copy".to_string(),
            duration_ns: Some(dur_ns),
            ..Dispatch::default()
        };
        d.counters.insert("dram__bytes_read.sum".into(), bytes);
        d.counters.insert("dram__bytes_write.sum".into(), bytes);
        d
    }

    #[test]
    fn measured_roofs_win_and_units_convert() {
        let mut s = set(Vec::new());
        s.measured_roofs.push(MeasuredRoof {
            name: "HBMBw".to_string(),
            kind: "hbm".to_string(),
            precision: None,
            value: 1_000.0,
            low: None,
            high: None,
        });
        s.measured_roofs.push(MeasuredRoof {
            name: "MFMAF16Flops".to_string(),
            kind: "mfma".to_string(),
            precision: Some("fp16".to_string()),
            value: 500_000.0,
            low: None,
            high: None,
        });
        let r = roofs(&s, None);
        assert_eq!(r.source, RoofSource::Measured);
        assert_eq!(r.bandwidth("dram"), Some(1_000.0));
        // 500,000 GFLOP/s = 500 TFLOP/s.
        assert_eq!(r.compute("matrix", "fp16"), Some(500.0));
    }

    #[test]
    fn no_device_no_attainment() {
        let s = set(Vec::new());
        let r = roofs(&s, None);
        assert_eq!(r.source, RoofSource::None);
        assert!(r.bandwidth.is_empty());
    }

    #[test]
    fn aggregate_means_and_weights() {
        // Two dispatches: 1 ms with 60% hit, 3 ms with 20% hit → weighted 30%.
        let a = Derived {
            duration_ns: Some(1e6),
            dram_bytes_read: Some(100.0),
            dram_bytes_written: Some(50.0),
            l2_hit_rate_pct: Some(60.0),
            ..Derived::default()
        };
        let b = Derived {
            duration_ns: Some(3e6),
            dram_bytes_read: Some(300.0),
            dram_bytes_written: Some(150.0),
            l2_hit_rate_pct: Some(20.0),
            ..Derived::default()
        };
        let g = aggregate(&[&a, &b]);
        assert_eq!(g.duration_ns, Some(2e6));
        assert_eq!(g.dram_bytes_read, Some(200.0));
        assert_eq!(g.dram_bytes_written, Some(100.0));
        assert!((g.l2_hit_rate_pct.unwrap_or(0.0) - 30.0).abs() < 1e-12);
        // A quantity only one dispatch has is the mean of the dispatches that have it.
        let c = Derived { duration_ns: Some(1e6), ..Derived::default() };
        assert_eq!(aggregate(&[&a, &c]).dram_bytes_read, Some(100.0));
    }

    #[test]
    fn grouping_and_rates_without_roofs() {
        // 2 MB read + 2 MB written in 4 µs → 1000 GB/s... per dispatch.
        let s = set(vec![copy_kernel(0, 4_000.0, 2e6), copy_kernel(1, 4_000.0, 2e6)]);
        let rep = analyze(s, None);
        assert_eq!(rep.dispatches.len(), 2);
        assert_eq!(rep.kernels.len(), 1);
        let k = &rep.kernels[0];
        assert_eq!(k.count, 2);
        assert_eq!(k.total_duration_ns, Some(8_000.0));
        assert_eq!(k.dram_bytes_read, Some(2e6));
        assert!((k.achieved_gbs.unwrap_or(0.0) - 1_000.0).abs() < 1e-9);
    }

    #[test]
    fn tail_and_small_grid_findings() {
        let mk = |w: f64| {
            let x = Derived { duration_ns: Some(1e6), grid_waves: Some(w), ..Derived::default() };
            let roofs = roofs(&set(Vec::new()), None);
            record("k", None, 1, x, None, &roofs, None).findings
        };
        assert!(mk(0.25).iter().any(|f| f.id == "counters.grid_small"));
        assert!(mk(2.1).iter().any(|f| f.id == "counters.tail_effect"));
        assert!(mk(2.9).iter().all(|f| f.id != "counters.tail_effect"));
        assert!(mk(4.0).is_empty());
    }
}

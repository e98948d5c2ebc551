//! Per-dispatch and per-kernel records with achieved rates, a hierarchical roofline, the
//! bound and findings.
//!
//! Roofs: see [`super::roofs`] (measured, one device, the figures several candidate
//! devices share, or none).
//!
//! The bound is decided from what the files hold, in this order:
//! 1. FLOP and byte counters with roofs: the roofline module's classification
//!    and attainment ([`crate::roofline::place`], the ±20% balanced band around the
//!    ridge) — the same numbers `analyze` and `trace` give for the same work;
//! 2. else the profiler's Speed of Light: the SM's throughput against the busiest memory
//!    unit's (DRAM, L1/TEX, L2), each a percentage of its own peak, with the same band;
//! 3. never compute-bound when a memory unit is busier than the SM: a kernel whose DRAM
//!    intensity is above the ridge but whose L1/TEX or L2 is the busiest unit is bound by
//!    the memory pipeline, as the Speed of Light says;
//! 4. else unknown, with the reason.
//!
//! Aggregation by kernel name: extensive quantities (duration, bytes, FLOPs) are means
//! per dispatch over the dispatches that counted them (several ncu runs or rocprof passes
//! of one kernel often collect different metrics); percentages (hit rates, occupancy,
//! conflicts, Speed of Light) are duration-weighted means over the dispatches that have
//! both the value and a duration, and plain means (said in the formulas) when none has a
//! duration. A missing value is never given a weight or a value.

use super::derive::{ByteSource, Coalescing, SpeedOfLight};
use super::findings::{findings, short_kernel};
use super::roofs::{roofs, Judged, RoofSet};
use super::{CounterSet, Derived, Dim3, Dispatch, FlopCounts, Missing, ToolAggregate, ToolFinding};
use crate::device::{Catalog, DeviceSpec, LookupError, MemLevel, ProfileFacts};
use crate::diagnose::Finding;
use crate::roofline::{place, Bound, ComputeRoof, RoofRates};
use crate::units::{sig3, ExecUnit};
use serde::Serialize;
use std::collections::BTreeMap;
use std::str::FromStr;

/// What the bound was decided from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BoundBasis {
    /// Counted FLOPs and DRAM bytes against the roofs.
    Roofline,
    /// The profiler's Speed-of-Light throughputs.
    SpeedOfLight,
}

impl BoundBasis {
    pub fn as_str(self) -> &'static str {
        match self {
            BoundBasis::Roofline => "roofline",
            BoundBasis::SpeedOfLight => "speed of light",
        }
    }
}

/// One point of the hierarchical roofline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RooflinePoint {
    pub level: MemLevel,
    /// Bytes per dispatch at this level.
    pub bytes: f64,
    /// Counted, or derived from the profiler's throughput × duration.
    pub source: Option<ByteSource>,
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
    /// `null` when neither counters with roofs nor a Speed of Light decide it (the
    /// reason is in `bound_reason`).
    pub bound: Option<Bound>,
    pub bound_basis: Option<BoundBasis>,
    /// The evidence for the bound, or why there is none.
    pub bound_reason: String,
    /// Roofline basis: floor time over the measured time (the roofline attainment),
    /// percent. Speed-of-Light basis: the busiest unit's throughput, percent of its peak.
    pub pct_of_roof: Option<f64>,
    /// The compute roof of the counted work, when FLOPs are counted and a roof exists.
    pub compute_roof: Option<ComputeRoof>,
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

impl KernelRecord {
    /// Whether the record holds any counter-derived quantity (a traced-only kernel
    /// has a duration and nothing else).
    pub fn has_counters(&self) -> bool {
        let x = &self.derived;
        x.dram_bytes().is_some()
            || x.dram_bytes_read.is_some()
            || x.dram_bytes_written.is_some()
            || x.l2_bytes.is_some()
            || !x.flops.is_empty()
            || !x.speed_of_light.is_empty()
            || x.l1_hit_rate_pct.is_some()
            || x.l2_hit_rate_pct.is_some()
            || x.achieved_occupancy_pct.is_some()
    }
}

/// The whole analysis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterReport {
    pub set: CounterSet,
    pub roofs: RoofSet,
    /// Every formula used, with its source, once.
    pub formulas: Vec<String>,
    pub dispatches: Vec<KernelRecord>,
    /// Aggregated by name, by total time descending.
    pub kernels: Vec<KernelRecord>,
}

/// The facts a counter set states about its device (see [`crate::device::identify`]).
pub fn facts(set: &CounterSet) -> ProfileFacts {
    let d = &set.device;
    let mut facts = ProfileFacts {
        arch: d.arch.clone(),
        units: d.compute_units,
        clock_mhz: d.max_sclk_mhz,
        dram_peak_gbs: None,
    };
    if set.vendor() == super::GpuVendor::Nvidia {
        // Every dispatch's implied peak must agree (within 3%) for the figure to count.
        let implied: Vec<f64> =
            set.dispatches.iter().filter_map(super::nvidia::implied_dram_peak_gbs).collect();
        if let (Some(lo), Some(hi)) =
            (implied.iter().copied().reduce(f64::min), implied.iter().copied().reduce(f64::max))
        {
            if hi <= lo * 1.03 {
                let mut sorted = implied.clone();
                sorted.sort_by(f64::total_cmp);
                facts.dram_peak_gbs = Some((
                    sorted[sorted.len() / 2],
                    format!(
                        "\"Memory Throughput\" (GB/s) over \"DRAM Throughput\" (% of peak) \
                         of {} launch{}",
                        implied.len(),
                        if implied.len() == 1 { "" } else { "es" }
                    ),
                ));
            }
        }
    }
    facts
}

/// Analyses `set` on a catalog device: the one `device` names (id, alias or
/// tool-printed name; an error when the catalog has none such), else the one the files
/// name or their facts identify ([`crate::device::identify`]: a name the catalog lacks
/// gives no roofs and a note, never a sibling entry; facts that leave several devices
/// give the figures they share).
pub fn analyze_in(
    set: CounterSet,
    catalog: &Catalog,
    device: Option<&str>,
) -> Result<CounterReport, LookupError> {
    if let Some(name) = device {
        return Ok(analyze(set, Some(catalog.lookup(name)?)));
    }
    let id = crate::device::identify(catalog, set.device.name.as_deref(), &facts(&set));
    let mut report = analyze_on(set, &id.candidates);
    if let Some(note) = id.note {
        report.roofs.notes.insert(0, note);
    }
    Ok(report)
}

/// Analyses a counter set against `device` (a resolved catalog entry, if any), or the
/// set's own measured roofs.
pub fn analyze(set: CounterSet, device: Option<&DeviceSpec>) -> CounterReport {
    let devices: Vec<&DeviceSpec> = device.into_iter().collect();
    analyze_on(set, &devices)
}

/// Analyses a counter set against the devices the files' facts leave: one, several
/// (their shared figures) or none.
pub fn analyze_on(set: CounterSet, devices: &[&DeviceSpec]) -> CounterReport {
    let judged = Judged { devices, measured: !set.measured_roofs.is_empty() };
    let roofs = roofs(&set, &judged);
    let vendor = set.vendor();
    let launch_model = judged.launch_model();
    let derived: Vec<Derived> = set
        .dispatches
        .iter()
        .map(|d| {
            let mut x = super::derive(vendor, d, &set.device);
            if let Some(dev) = launch_model {
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
    let ctx = Ctx { roofs: &roofs, judged };
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
            let mut r = record(name, None, idx.len() as u64, agg, first, &ctx);
            // Launch shapes only when every dispatch agrees.
            if !uniform(|d| d.grid) {
                r.grid = None;
            }
            if !uniform(|d| d.block) {
                r.block = None;
            }
            r.tool_findings = super::rules::collect(
                idx.iter().flat_map(|&i| &set.dispatches[i].tool_rules),
                r.duration_ns,
            );
            r
        })
        .collect();
    for a in &set.aggregates {
        kernels.push(tool_aggregate(a));
    }
    let dispatches: Vec<KernelRecord> = set
        .dispatches
        .iter()
        .zip(derived)
        .map(|(d, x)| {
            let mut r = record(&d.name, Some(d.id), 1, x, Some(d), &ctx);
            r.tool_findings = super::rules::collect(&d.tool_rules, r.duration_ns);
            r
        })
        .collect();
    for f in kernels.iter().flat_map(|k| &k.derived.formulas) {
        if !formulas.contains(f) {
            formulas.push(f.clone());
        }
    }
    // Longest first; kernels without a total last, in reading order.
    kernels.sort_by(|a, b| match (a.total_duration_ns, b.total_duration_ns) {
        (Some(x), Some(y)) => y.total_cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    CounterReport { set, roofs, formulas, dispatches, kernels }
}

/// What every record is judged against.
struct Ctx<'a> {
    roofs: &'a RoofSet,
    judged: Judged<'a>,
}

/// Means of extensive quantities and duration-weighted percentages over dispatches.
fn aggregate(parts: &[&Derived]) -> Derived {
    // Mean over the dispatches that have the quantity: several ncu runs or rocprof passes
    // of one kernel often collect different metrics, and a kernel's bytes per dispatch do
    // not depend on which run counted them.
    let avg = |f: &dyn Fn(&Derived) -> Option<f64>| -> Option<f64> {
        crate::stats::mean(&parts.iter().filter_map(|d| f(d)).collect::<Vec<_>>())
    };
    let mut unweighted = false;
    let mut weighted = |f: &dyn Fn(&Derived) -> Option<f64>| -> Option<f64> {
        let with: Vec<(f64, f64)> =
            parts.iter().filter_map(|d| f(d).zip(d.duration_ns.filter(|t| *t > 0.0))).collect();
        if with.is_empty() {
            let v = avg(f);
            unweighted |= v.is_some();
            return v;
        }
        let den: f64 = with.iter().map(|(_, w)| w).sum();
        Some(with.iter().map(|(v, w)| v * w).sum::<f64>() / den)
    };
    let l1_hit_rate_pct = weighted(&|d| d.l1_hit_rate_pct);
    let l2_hit_rate_pct = weighted(&|d| d.l2_hit_rate_pct);
    let lds_bank_conflict_pct = weighted(&|d| d.lds_bank_conflict_pct);
    let achieved_occupancy_pct = weighted(&|d| d.achieved_occupancy_pct);
    let theoretical_occupancy_pct = weighted(&|d| d.theoretical_occupancy_pct);
    let speed_of_light = SpeedOfLight {
        sm_pct: weighted(&|d| d.speed_of_light.sm_pct),
        memory_pct: weighted(&|d| d.speed_of_light.memory_pct),
        dram_pct: weighted(&|d| d.speed_of_light.dram_pct),
        l1_pct: weighted(&|d| d.speed_of_light.l1_pct),
        l2_pct: weighted(&|d| d.speed_of_light.l2_pct),
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
    // A level's bytes are derived when any dispatch's are.
    let mut byte_sources = BTreeMap::new();
    for (level, src) in parts.iter().flat_map(|d| &d.byte_sources) {
        let e = byte_sources.entry(*level).or_insert(*src);
        if *src == ByteSource::Derived {
            *e = ByteSource::Derived;
        }
    }
    let mut formulas: Vec<String> = Vec::new();
    for d in parts {
        for f in &d.formulas {
            if !formulas.contains(f) {
                formulas.push(f.clone());
            }
        }
    }
    if unweighted && parts.len() > 1 {
        formulas.push(
            "percentages of a kernel = plain means over its dispatches (no dispatch has a \
             duration to weight them by)"
                .to_string(),
        );
    }
    Derived {
        duration_ns: avg(&|d| d.duration_ns),
        dram_bytes_read: avg(&|d| d.dram_bytes_read),
        dram_bytes_written: avg(&|d| d.dram_bytes_written),
        dram_bytes_total: avg(&|d| d.dram_bytes_total),
        l2_bytes: avg(&|d| d.l2_bytes),
        l1_bytes: avg(&|d| d.l1_bytes),
        lds_bytes: avg(&|d| d.lds_bytes),
        flops,
        l1_hit_rate_pct,
        l2_hit_rate_pct,
        lds_bank_conflict_pct,
        achieved_occupancy_pct,
        theoretical_occupancy_pct,
        waves_launched: avg(&|d| d.waves_launched),
        grid_waves: avg(&|d| d.grid_waves),
        coalescing,
        speed_of_light,
        byte_sources,
        missing: kernel_missing(parts),
        formulas,
    }
}

/// Missing for a kernel: what no dispatch gave (a quantity some dispatch gave has a mean
/// above). The first dispatch's wording says what it needs. Dispatches with no counters
/// at all (traced, not counted) gave nothing and do not narrow the list.
fn kernel_missing(parts: &[&Derived]) -> Vec<Missing> {
    let counted: Vec<&&Derived> = parts
        .iter()
        .filter(|d| !d.missing.iter().any(|m| m.quantity == super::derive::NO_COUNTERS))
        .collect();
    let basis: Vec<&&Derived> = if counted.is_empty() { parts.iter().collect() } else { counted };
    basis
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
        .unwrap_or_default()
}

/// The bound of one record and its evidence.
struct Decision {
    bound: Option<Bound>,
    basis: Option<BoundBasis>,
    reason: String,
    pct: Option<f64>,
    compute_roof: Option<ComputeRoof>,
}

/// Rule 1 of the module docs: counted FLOPs and DRAM bytes against the roofs.
fn by_roofline(
    x: &Derived,
    flops: f64,
    bytes: f64,
    secs: Option<f64>,
    ctx: &Ctx<'_>,
) -> Result<Decision, String> {
    let Some(bw) = ctx.roofs.bandwidth(MemLevel::Dram) else {
        return Err("FLOPs and DRAM bytes are counted, but there is no DRAM roof (no device: pass --device)".to_string());
    };
    let bw = bw * 1e9;
    if flops == 0.0 {
        let rates = RoofRates { flops_per_s: None, bytes_per_s: bw };
        let pct = place(0.0, bytes, secs, rates).map_err(|e| e.to_string())?.attainment_pct;
        return Ok(Decision {
            bound: Some(Bound::Memory),
            basis: Some(BoundBasis::Roofline),
            reason: "no floating-point work: bound by data movement".to_string(),
            pct,
            compute_roof: None,
        });
    }
    let (unit, precision) = x.flops.dominant().ok_or("no FLOPs counted")?;
    let unit = if unit == "matrix" { ExecUnit::Matrix } else { ExecUnit::Vector };
    let roof = crate::units::Precision::from_str(precision)
        .ok()
        .and_then(|p| ctx.judged.compute_roof(ctx.roofs, unit, p))
        .ok_or_else(|| format!("no {precision} {} roof for the counted FLOPs", unit.as_str()))?;
    let peak = roof.tflops * 1e12;
    let p = place(flops, bytes, secs, RoofRates { flops_per_s: Some(peak), bytes_per_s: bw })
        .map_err(|e| e.to_string())?;
    let ridge = p.ridge.unwrap_or(peak / bw);
    Ok(Decision {
        bound: Some(p.bound),
        basis: Some(BoundBasis::Roofline),
        reason: format!(
            "arithmetic intensity {} FLOP/B against the {} {} ridge {} FLOP/B (balanced \
             within ±20%)",
            sig3(flops / bytes.max(f64::MIN_POSITIVE)),
            roof.precision.as_str(),
            roof.unit.as_str(),
            sig3(ridge)
        ),
        pct: p.attainment_pct,
        compute_roof: Some(roof),
    })
}

/// The module docs' order: counters, then Speed of Light, never compute-bound when a
/// memory unit is busier than the SM.
fn decide(
    x: &Derived,
    flops: Option<f64>,
    dram: Option<f64>,
    secs: Option<f64>,
    ctx: &Ctx<'_>,
) -> Decision {
    let counted = match (flops, dram) {
        (Some(f), Some(b)) if f > 0.0 || b > 0.0 => by_roofline(x, f, b, secs, ctx),
        (Some(_), None) => Err("FLOPs are counted but not DRAM bytes".to_string()),
        (None, Some(_)) => Err("DRAM bytes are counted but not FLOPs".to_string()),
        _ => Err("neither FLOPs nor DRAM bytes are counted".to_string()),
    };
    let sol = x.speed_of_light;
    let sol_pair = sol.sm_pct.zip(sol.busiest_memory());
    match (counted, sol_pair) {
        (Ok(c), Some((sm, (pipe, mem)))) if c.bound == Some(Bound::Compute) && mem > sm => {
            Decision {
                bound: Some(Bound::Memory),
                basis: Some(BoundBasis::SpeedOfLight),
                reason: format!(
                    "{}; but {pipe} is the busiest unit at {}% of its peak against the SM's \
                     {}% (Speed of Light): bound by the memory pipeline",
                    c.reason,
                    sig3(mem),
                    sig3(sm)
                ),
                pct: Some(mem),
                compute_roof: c.compute_roof,
            }
        }
        (Ok(c), _) => c,
        (Err(why), Some((sm, (pipe, mem)))) => Decision {
            bound: Bound::classify(sm, mem).ok(),
            basis: Some(BoundBasis::SpeedOfLight),
            reason: format!(
                "{why}; Speed of Light: SM {}%, busiest memory unit {pipe} {}% of peak \
                 (balanced within ±20%)",
                sig3(sm),
                sig3(mem)
            ),
            pct: Some(sm.max(mem)),
            compute_roof: None,
        },
        (Err(why), None) => Decision {
            bound: None,
            basis: None,
            reason: format!("{why}, and there is no Speed-of-Light section"),
            pct: None,
            compute_roof: None,
        },
    }
}

/// The hierarchical-roofline points of a record.
fn points(
    x: &Derived,
    flops: Option<f64>,
    secs: Option<f64>,
    roofs: &RoofSet,
) -> Vec<RooflinePoint> {
    [
        (MemLevel::Dram, x.dram_bytes()),
        (MemLevel::L2, x.l2_bytes),
        (MemLevel::L1, x.l1_bytes),
        (MemLevel::Lds, x.lds_bytes),
    ]
    .into_iter()
    .filter_map(|(level, bytes)| {
        let bytes = bytes?;
        let achieved = secs.map(|s| bytes / s / 1e9);
        let roof = roofs.bandwidth(level);
        Some(RooflinePoint {
            level,
            bytes,
            source: x.byte_sources.get(&level).copied(),
            arithmetic_intensity: flops.filter(|_| bytes > 0.0).map(|f| f / bytes),
            achieved_gbs: achieved,
            roof_gbs: roof,
            pct_of_roof: achieved.zip(roof).map(|(a, r)| 100.0 * a / r),
        })
    })
    .collect()
}

/// A record from derived (per-dispatch) values.
fn record(
    name: &str,
    id: Option<u64>,
    count: u64,
    x: Derived,
    launch: Option<&Dispatch>,
    ctx: &Ctx<'_>,
) -> KernelRecord {
    let secs = x.duration_ns.filter(|t| *t > 0.0).map(|t| t * 1e-9);
    let flops_total = (!x.flops.is_empty()).then(|| x.flops.total());
    // One direction alone is a lower bound of the traffic, not the traffic: no rate.
    let dram = x.dram_bytes();
    let mut missing = x.missing.clone();
    if secs.is_none() {
        push_missing(
            &mut missing,
            "duration_ns",
            "kernel start/end timestamps or gpu__time_duration.sum",
        );
    }
    let d = decide(&x, flops_total, dram, secs, ctx);
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
        achieved_gbs: dram.zip(secs).map(|(b, s)| b / s / 1e9),
        achieved_tflops: flops_total.zip(secs).map(|(f, s)| f / s / 1e12),
        arithmetic_intensity: flops_total.zip(dram).filter(|(_, b)| *b > 0.0).map(|(f, b)| f / b),
        bound: d.bound,
        bound_basis: d.basis,
        bound_reason: d.reason,
        pct_of_roof: d.pct,
        compute_roof: d.compute_roof,
        roofline: points(&x, flops_total, secs, ctx.roofs),
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
    r.findings = findings(&r, ctx.roofs);
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
        super::derive::NO_COUNTERS,
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
        bound: None,
        bound_basis: None,
        bound_reason: "durations only: no counters".to_string(),
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

#[cfg(test)]
mod tests;

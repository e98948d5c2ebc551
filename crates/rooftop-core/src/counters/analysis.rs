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

use super::derive::ByteSource;
use super::findings::{findings, short_kernel};
use super::roofs::{roofs, Judged, RoofSet};
use super::{CounterSet, Derived, Dim3, Dispatch, Missing, ToolAggregate, ToolFinding};
use crate::device::{Catalog, DeviceSpec, LookupError, MemLevel, ProfileFacts};
use crate::diagnose::Finding;
use crate::roofline::{place, Bound, ComputeRoof, RoofRates};
use crate::units::{sig3, ExecUnit};
use foldhash::HashMap;
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::str::FromStr;

mod accum;
use accum::Acc;

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
    /// Aggregated by name, by total time descending.
    pub kernels: Vec<KernelRecord>,
    /// The devices the set was judged on, for the dispatches' records
    /// ([`CounterReport::dispatch_records`]), which are built when they are asked for.
    #[serde(skip)]
    judged: Vec<DeviceSpec>,
    /// The derived values of counter-less launches by launch shape, from the analysis
    /// (the duration is any one dispatch's): what a dispatch record of that shape starts
    /// from.
    #[serde(skip)]
    shapes: HashMap<LaunchShape, Derived>,
}

impl CounterReport {
    /// What builds one record per dispatch of [`CounterReport::set`], against the same
    /// roofs and devices as the kernels. A report of a trace of a million launches
    /// holds no dispatch records: those that are shown are built here, as they are
    /// written, on as many threads as the writer uses.
    pub fn dispatch_records(&self) -> DispatchRecords<'_> {
        DispatchRecords {
            roofs: &self.roofs,
            devices: self.judged.iter().collect(),
            measured: !self.set.measured_roofs.is_empty(),
            vendor: self.set.vendor(),
            device: &self.set.device,
            dispatches: &self.set.dispatches,
            shapes: &self.shapes,
        }
    }
}

/// Builds dispatch records for a [`CounterReport`] (see
/// [`CounterReport::dispatch_records`]).
#[derive(Debug)]
pub struct DispatchRecords<'a> {
    roofs: &'a RoofSet,
    devices: Vec<&'a DeviceSpec>,
    measured: bool,
    vendor: super::GpuVendor,
    device: &'a super::DeviceInfo,
    dispatches: &'a [Dispatch],
    shapes: &'a HashMap<LaunchShape, Derived>,
}

impl DispatchRecords<'_> {
    /// The record of dispatch `d`: its derived values (the same function the kernels'
    /// aggregates add up), its bound, findings and the profiler's rules.
    pub fn record(&self, d: &Dispatch) -> KernelRecord {
        let judged = Judged { devices: &self.devices, measured: self.measured };
        let ctx = Ctx { roofs: self.roofs, judged };
        let shape = d.counters.is_empty().then(|| self.shapes.get(&launch_shape(d))).flatten();
        let x = match shape {
            Some(x) => Derived { duration_ns: d.duration_ns, ..x.clone() },
            None => derive_one(self.vendor, judged.launch_model(), d, self.device),
        };
        let mut r = record(&d.name, Some(d.id), 1, x, Some(d), &ctx);
        r.tool_findings = super::rules::collect(&d.tool_rules, r.duration_ns);
        r
    }

    /// Every dispatch's record, in the set's order, built on the thread pool.
    pub fn all(&self) -> Vec<KernelRecord> {
        self.dispatches.par_iter().map(|d| self.record(d)).collect()
    }
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
        return Ok(analyze_on(set, &[catalog.lookup(name)?]));
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
///
/// One pass over the dispatches: each one's derived values are added into its kernel's
/// running aggregate (`accum::Acc`) and are not kept; a dispatch's own record is built
/// when it is asked for ([`CounterReport::dispatch_records`]).
pub fn analyze_on(set: CounterSet, devices: &[&DeviceSpec]) -> CounterReport {
    let judged = Judged { devices, measured: !set.measured_roofs.is_empty() };
    let roofs = roofs(&set, &judged);
    let ctx = Ctx { roofs: &roofs, judged };
    let mut derive = Deriver::new(set.vendor(), ctx.judged.launch_model());
    let mut formulas: Vec<String> = Vec::new();
    // Kernels by name, in first-seen order.
    let mut group_of: HashMap<&str, usize> = HashMap::default();
    let mut groups: Vec<Group<'_>> = Vec::new();
    // The values of dispatches with counters are derived ahead on the pool, a block at a
    // time (a pure function of the dispatch: the same values as one after another); they
    // are added up below in file order. Small sets stay on this thread.
    let ahead = set.dispatches.len() >= DERIVED_AHEAD;
    let mut pre: Vec<Option<Derived>> = Vec::new();
    for (i, d) in set.dispatches.iter().enumerate() {
        if ahead && i % DERIVED_AHEAD == 0 {
            let block = set.dispatches.get(i..).unwrap_or_default();
            let block = block.get(..DERIVED_AHEAD).unwrap_or(block);
            let derive = &derive;
            pre = block
                .par_iter()
                .map(|d| (!d.counters.is_empty()).then(|| derive.compute(d, &set.device)))
                .collect();
            pre.reverse();
        }
        let g = *group_of.entry(&*d.name).or_insert_with(|| {
            groups.push(Group { name: &d.name, idx: Vec::new(), acc: Acc::default() });
            groups.len() - 1
        });
        let x = match pre.pop().flatten() {
            Some(x) => derive.set_last(x),
            None => derive.of(d, &set.device),
        };
        for f in &x.formulas {
            if !formulas.contains(f) {
                formulas.push(f.clone());
            }
        }
        groups[g].idx.push(i);
        groups[g].acc.add(x);
    }
    let mut kernels: Vec<KernelRecord> =
        groups.into_iter().map(|g| kernel_record(g, &set.dispatches, &ctx)).collect();
    for a in &set.aggregates {
        kernels.push(tool_aggregate(a));
    }
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
    let judged = devices.iter().map(|&d| d.clone()).collect();
    let shapes = derive.shapes;
    CounterReport { set, roofs, formulas, kernels, judged, shapes }
}

/// The dispatches of one kernel name and their running aggregate.
struct Group<'a> {
    name: &'a str,
    idx: Vec<usize>,
    acc: Acc,
}

/// The record of one kernel from its dispatches.
fn kernel_record(g: Group<'_>, all: &[Dispatch], ctx: &Ctx<'_>) -> KernelRecord {
    let first = g.idx.first().map(|&i| &all[i]);
    let uniform =
        |f: fn(&Dispatch) -> Option<Dim3>| g.idx.iter().all(|&i| f(&all[i]) == first.and_then(f));
    let timed = g.acc.timed();
    let mut r = record(g.name, None, g.idx.len() as u64, g.acc.finish(), first, ctx);
    // The total is what was measured: the sum of the dispatches that have a duration,
    // and a `missing` entry saying how many have none.
    r.total_duration_ns = timed.total_ns;
    if timed.measured > 0 && timed.measured < timed.dispatches {
        let untimed = timed.dispatches - timed.measured;
        push_missing(
            &mut r.missing,
            "total_duration_ns",
            format!(
                "a duration for every dispatch: {untimed} of the {} dispatches of {} have \
                 none (kernel timestamps or gpu__time_duration.sum); the total sums the {} \
                 that do",
                timed.dispatches, g.name, timed.measured
            ),
        );
    }
    // Launch shapes only when every dispatch agrees.
    if !uniform(|d| d.grid) {
        r.grid = None;
    }
    if !uniform(|d| d.block) {
        r.block = None;
    }
    r.tool_findings =
        super::rules::collect(g.idx.iter().flat_map(|&i| &all[i].tool_rules), r.duration_ns);
    r
}

/// What a counter-less dispatch's derived values depend on, but for the duration: grid,
/// block, registers (vector, accumulation, scalar), shared memory and wave size.
type LaunchShape =
    (Option<Dim3>, Option<Dim3>, Option<u32>, Option<u32>, Option<u32>, Option<u64>, Option<u32>);

fn launch_shape(d: &Dispatch) -> LaunchShape {
    (d.grid, d.block, d.vgprs, d.agprs, d.sgprs, d.shared_bytes, d.wave_size)
}

/// Dispatches whose values are derived ahead on the thread pool at once (and the
/// fewest for which that is done).
const DERIVED_AHEAD: usize = 1024;

/// Launch shapes remembered at most: past it, each new shape is derived per dispatch.
const SHAPES_KEPT: usize = 4096;

/// Derives each dispatch's values ([`super::derive`], then the launch model's occupancy
/// and waves). A dispatch without counters derives the same values as any other with
/// the same launch but for its duration: those are derived once per launch shape.
struct Deriver<'a> {
    vendor: super::GpuVendor,
    launch_model: Option<&'a DeviceSpec>,
    /// Derived values of counter-less launches by launch shape (the duration is the
    /// last dispatch's).
    shapes: HashMap<LaunchShape, Derived>,
    last: Derived,
}

/// One dispatch's derived values: its counters, then the launch model's occupancy.
fn derive_one(
    vendor: super::GpuVendor,
    launch_model: Option<&DeviceSpec>,
    d: &Dispatch,
    device: &super::DeviceInfo,
) -> Derived {
    let mut x = super::derive(vendor, d, device);
    if let Some(dev) = launch_model {
        super::launch::fill(d, &mut x, dev);
    }
    x
}

impl<'a> Deriver<'a> {
    fn new(vendor: super::GpuVendor, launch_model: Option<&'a DeviceSpec>) -> Self {
        Deriver { vendor, launch_model, shapes: HashMap::default(), last: Derived::default() }
    }

    fn compute(&self, d: &Dispatch, device: &super::DeviceInfo) -> Derived {
        derive_one(self.vendor, self.launch_model, d, device)
    }

    /// `x`, derived elsewhere, as the last dispatch's values.
    fn set_last(&mut self, x: Derived) -> &Derived {
        self.last = x;
        &self.last
    }

    /// The derived values of `d` (valid until the next call).
    fn of(&mut self, d: &Dispatch, device: &super::DeviceInfo) -> &Derived {
        if !d.counters.is_empty() {
            self.last = self.compute(d, device);
            return &self.last;
        }
        let key = launch_shape(d);
        if !self.shapes.contains_key(&key) && self.shapes.len() >= SHAPES_KEPT {
            self.last = self.compute(d, device);
            return &self.last;
        }
        let (vendor, model) = (self.vendor, self.launch_model);
        let x = self.shapes.entry(key).or_insert_with(|| derive_one(vendor, model, d, device));
        x.duration_ns = d.duration_ns;
        x
    }
}

/// What every record is judged against.
struct Ctx<'a> {
    roofs: &'a RoofSet,
    judged: Judged<'a>,
}

/// Means of extensive quantities and duration-weighted percentages over dispatches.
#[cfg(test)]
fn aggregate(parts: &[&Derived]) -> Derived {
    let mut acc = Acc::default();
    for d in parts {
        acc.add(d);
    }
    acc.finish()
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
            "arithmetic intensity {} FLOP/B against the {} {} ridge {} FLOP/B{}",
            sig3(flops / bytes.max(f64::MIN_POSITIVE)),
            roof.precision.as_str(),
            roof.unit.as_str(),
            sig3(ridge),
            balanced_band(p.bound)
        ),
        pct: p.attainment_pct,
        compute_roof: Some(roof),
    })
}

/// The band rule, said where it decided: a balanced bound is one within ±20% of the
/// ridge (roofline) or of the other unit's throughput (Speed of Light); a memory or
/// compute bound lies outside it, and its reason does not repeat the band.
fn balanced_band(bound: Bound) -> &'static str {
    match bound {
        Bound::Balanced => " (balanced within ±20%)",
        _ => "",
    }
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
        (None, Some(_)) => Err(match x.flops_incomplete() {
            Some(why) => format!(
                "DRAM bytes are counted, but not all FLOPs: {}",
                why.strip_prefix("a complete count: ").unwrap_or(why)
            ),
            None => "DRAM bytes are counted but not FLOPs".to_string(),
        }),
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
                "{why}; Speed of Light: SM {}%, busiest memory unit {pipe} {}% of peak{}",
                sig3(sm),
                sig3(mem),
                Bound::classify(sm, mem).map_or("", balanced_band)
            ),
            pct: Some(sm.max(mem)),
            compute_roof: None,
        },
        (Err(why), None) => Decision {
            bound: None,
            basis: None,
            reason: match x.missing.iter().find(|m| m.quantity == super::nvidia::SPEED_OF_LIGHT) {
                Some(m) => {
                    format!("{why}, and the Speed of Light is not used: it needs {}", m.needs)
                }
                None => format!("{why}, and there is no Speed-of-Light section"),
            },
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
    // A FLOP count the counters show to be incomplete is missing, never a partial sum.
    let flops_total = x.flops_total();
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
        flops: flops_total.map(|_| x.flops.by_precision()),
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

fn push_missing(
    m: &mut Vec<Missing>,
    quantity: &'static str,
    needs: impl Into<std::borrow::Cow<'static, str>>,
) {
    if !m.iter().any(|x| x.quantity == quantity) {
        m.push(Missing { quantity: quantity.into(), needs: needs.into() });
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

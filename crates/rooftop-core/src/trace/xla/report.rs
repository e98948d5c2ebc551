//! The XLA section of a trace report (`TraceReport::xla`): what TensorBoard's profile
//! plugin (HLO op stats, roofline, kernel stats, overview) and TraceLens's JAX report
//! show, computed from a model the XPlane reader produced.
//!
//! - `ops`: one row per (module, HLO op): executions, kernels, device time (each
//!   execution's time is the union of its kernels' intervals), share of all XLA op time,
//!   the work of one execution (GEMM / convolution / attention model, or the memory
//!   model, or the profile's own cost-analysis stats), achieved rates and, with a
//!   device, roofline attainment and bound; for Triton GEMM fusions the output tile
//!   from the HLO backend config, the tile count (checked against the launch grid),
//!   tile and wave efficiency (`gemm_tiles::efficiency`,
//!   docs/reference/formulas.md#tile-wave-and-dimension-efficiency).
//! - `categories`: device time by XLA op category.
//! - `modules`: per XLA module, its executions and device time per execution.
//! - `steps`: executions of the module with the most device time (or the profile's step
//!   markers when it has them), with busy and idle time on the device.
//! - `collectives`: per collective op, message size from the HLO shapes, group size,
//!   algorithm and bus bandwidth ([`super::collective`]).
//! - `host_threads`: per host thread, events and busy time.
//!
//! Times are integer nanoseconds until printed; percentages are of the summed XLA op
//! time (the ops summary's convention).

use super::classify::classify;
use super::collective::{self, XlaCollectiveKind};
use super::hlo::HloInstr;
use super::work::{self, gemm_dims};
use super::{HostThread, StepMarker, XlaDevice, XlaInfo};
use crate::device::DeviceSpec;
use crate::ops::{OpClass, Work};
use crate::roofline::{roofline, Bound};
use crate::trace::attrib::busy_ns;
use crate::trace::model::{GpuEvent, TraceModel};
use crate::units::{ExecUnit, Precision};
use foldhash::HashMap;
use serde::Serialize;
use std::collections::BTreeMap;

/// The output tile of a Triton GEMM fusion and what it gives on the device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct XlaTile {
    /// Tile per output dimension (from the backend config), major to minor.
    pub output_tile: Vec<i64>,
    /// The dot's output dimensions.
    pub output_dims: Vec<i64>,
    /// Product over output dimensions of ceil(dim / tile) (times split-K).
    pub tiles: u64,
    /// Blocks of the op's longest kernel launch (grid x*y*z), when the profile gives it.
    pub grid_blocks: Option<u64>,
    /// Useful elements / elements of the padded tiles, in (0, 1].
    pub tile_eff: f64,
    /// ceil(tiles / compute units), with a device.
    pub waves: Option<u64>,
    /// tiles / (waves * compute units), with a device.
    pub wave_eff: Option<f64>,
}

/// One row of the XLA op summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct XlaOpRow {
    pub module: Option<String>,
    pub program_id: Option<i64>,
    /// The HLO op name (`gemm_fusion_dot.3`).
    pub name: String,
    /// XLA op category (`gemm`, `attention`, `loop fusion`, ...).
    pub category: String,
    pub opcode: Option<String>,
    pub fusion_kind: Option<String>,
    pub custom_call_target: Option<String>,
    /// The framework op that produced it (`jit(loss_fn)/jvp()/dot_general`).
    pub framework_op: Option<String>,
    /// Result shape as HLO text.
    pub shape: Option<String>,
    /// Operand shapes as HLO text.
    pub operands: Option<String>,
    /// Executions (op instances on a device).
    pub occurrences: u64,
    /// Device activities (kernels, copies) of all executions.
    pub kernels: u64,
    pub total_us: f64,
    pub mean_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// Share of the summed time of all XLA ops.
    pub percent: f64,
    pub cumulative_percent: f64,
    /// FLOPs of one execution.
    pub flops: Option<f64>,
    /// Bytes of one execution.
    pub bytes: Option<f64>,
    /// Which model gave `flops`/`bytes`: `gemm`, `attention`, `conv`, `memory`,
    /// `xla-cost-analysis`.
    pub model: Option<String>,
    pub flops_formula: Option<String>,
    pub bytes_formula: Option<String>,
    /// From the mean execution time.
    pub achieved_tflops: Option<f64>,
    pub achieved_tbs: Option<f64>,
    pub roofline_attainment_pct: Option<f64>,
    pub bound: Option<Bound>,
    pub floor_time_us: Option<f64>,
    pub tile: Option<XlaTile>,
    /// Why the row has no model, when it has none.
    pub unmodelled: Option<String>,
}

/// Device time by XLA op category.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct XlaCategoryRow {
    pub category: String,
    pub ops: u64,
    pub occurrences: u64,
    pub time_ms: f64,
    pub percent: f64,
}

/// One XLA module.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModuleRow {
    pub name: String,
    pub program_id: Option<i64>,
    pub has_hlo: bool,
    /// Executions over all devices.
    pub runs: u64,
    pub devices: u64,
    /// Distinct HLO ops that ran.
    pub ops: u64,
    pub kernels: u64,
    /// Summed over executions: union of each execution's device intervals.
    pub device_time_ms: f64,
    pub mean_run_ms: f64,
    pub min_run_ms: f64,
    pub max_run_ms: f64,
}

/// One step (an execution of the step module, or a step marker).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepRow {
    pub index: u64,
    pub device: i64,
    /// First kernel start, ms from the start of the timeline window.
    pub start_ms: f64,
    /// First kernel start to last kernel end of the step.
    pub span_ms: f64,
    /// Union of all device activities in the span.
    pub busy_ms: f64,
    pub idle_ms: f64,
    pub kernels: u64,
    /// Device idle time until the next step on the same device starts.
    pub gap_to_next_ms: Option<f64>,
}

/// The steps and how they were found.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Steps {
    /// `module:<name>` (executions of that module) or `none`.
    pub basis: String,
    pub rows: Vec<StepRow>,
    /// The profile's step markers (host-side), when any.
    pub markers: Vec<StepMarker>,
    /// Steps that start before the previous step on their device ends (a step inside a
    /// step): their predecessor's gap to next is not a gap, so it is left out (`None`)
    /// and the report says how many.
    #[serde(skip)]
    pub overlapping: u64,
}

/// One collective op.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct XlaCollectiveRow {
    pub module: Option<String>,
    pub name: String,
    pub kind: Option<XlaCollectiveKind>,
    /// Devices in the group.
    pub group_size: Option<u64>,
    /// How the group size was found (`replica groups`, `all devices in the profile`).
    pub group_size_basis: Option<String>,
    pub occurrences: u64,
    pub message_bytes: Option<f64>,
    pub message_basis: Option<String>,
    pub mean_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// message / mean time, GB/s.
    pub algbw_gbs: Option<f64>,
    /// algbw × bus factor, GB/s.
    pub busbw_gbs: Option<f64>,
    pub bus_factor: Option<String>,
}

/// The XLA section of a trace report.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct XlaReport {
    /// The XPlane layout the reader found.
    pub layout: String,
    pub hostnames: Vec<String>,
    /// Device capabilities as the profile states them.
    pub devices: Vec<XlaDevice>,
    pub modules: Vec<ModuleRow>,
    pub steps: Steps,
    pub categories: Vec<XlaCategoryRow>,
    pub ops: Vec<XlaOpRow>,
    /// Summed time of all XLA ops (the `percent` denominator), ms.
    pub total_op_time_ms: f64,
    pub collectives: Vec<XlaCollectiveRow>,
    pub host_threads: Vec<HostThread>,
    pub notes: Vec<String>,
}

/// Per-execution times of one (module, op) group.
#[derive(Default)]
struct Group {
    first: usize,
    times_ns: Vec<i64>,
    kernels: u64,
}

fn stats(times_ns: &[i64]) -> (f64, f64, f64, f64) {
    let total: i64 = times_ns.iter().sum();
    let n = times_ns.len().max(1) as f64;
    let min = times_ns.iter().copied().min().unwrap_or(0);
    let max = times_ns.iter().copied().max().unwrap_or(0);
    (total as f64 / 1e3, total as f64 / 1e3 / n, min as f64 / 1e3, max as f64 / 1e3)
}

/// The XLA section of the report of `model` (`None` when the model has no XLA content).
pub fn xla_report(
    model: &TraceModel,
    device: Option<&DeviceSpec>,
    window_start_ns: i64,
) -> Option<XlaReport> {
    let info = model.xla.as_deref()?;
    let op_time: Vec<i64> =
        (0..model.ops.len()).map(|i| busy_ns(model, &model.ops[i].launched)).collect();

    // Group op instances by (module, name), in first-seen order.
    let mut groups: Vec<Group> = Vec::new();
    let mut index: HashMap<(Option<u32>, &str), usize> = HashMap::default();
    for (i, op) in info.ops.iter().enumerate().take(model.ops.len()) {
        let g = *index.entry((op.module, &*op.hlo_op)).or_insert_with(|| {
            groups.push(Group { first: i, ..Group::default() });
            groups.len() - 1
        });
        groups[g].times_ns.push(op_time[i]);
        groups[g].kernels += model.ops[i].launched.len() as u64;
    }
    let total_ns: i64 = op_time.iter().sum();
    let mut ops: Vec<XlaOpRow> =
        groups.iter().map(|g| op_row(model, info, device, g, total_ns)).collect();
    ops.sort_by(|a, b| b.total_us.total_cmp(&a.total_us).then_with(|| a.name.cmp(&b.name)));
    let mut cum = 0.0;
    for r in &mut ops {
        cum += r.percent;
        r.cumulative_percent = cum;
    }

    let mut notes = Vec::new();
    let no_hlo: Vec<&str> =
        info.modules.iter().filter(|m| !m.has_hlo).map(|m| m.name.as_str()).collect();
    if !no_hlo.is_empty() {
        notes.push(format!(
            "No HLO in the profile for {} ({}): their ops have times but no shapes or models.",
            crate::diagnose::count(no_hlo.len() as u64, "module", "modules"),
            no_hlo.join(", ")
        ));
    }
    // The module executions, which the steps and the module rows both read.
    let runs = runs(model, info);
    let steps = steps(model, info, &runs, window_start_ns);
    if steps.overlapping > 0 {
        notes.push(format!(
            "{} before the previous step on their device ends (overlapping runs of the step \
             module): the gap to next of the step before each is not shown.",
            if steps.overlapping == 1 {
                "1 step starts".to_string()
            } else {
                format!("{} steps start", steps.overlapping)
            }
        ));
    }
    Some(XlaReport {
        layout: info.layout.as_str().to_string(),
        hostnames: info.hostnames.clone(),
        devices: info.devices.clone(),
        modules: module_rows(info, &runs),
        steps,
        categories: category_rows(&ops, total_ns),
        total_op_time_ms: total_ns as f64 / 1e6,
        collectives: collective_rows(model, info, &groups, &ops),
        host_threads: info.host_threads.clone(),
        ops,
        notes,
    })
}

fn module_name(info: &XlaInfo, m: Option<u32>) -> Option<String> {
    m.and_then(|m| info.modules.get(m as usize)).map(|m| m.name.clone())
}

/// The work of one execution and its provenance.
fn work_of(
    instr: Option<&HloInstr>,
    op: &super::XlaOp,
) -> (Option<Work>, Option<String>, Option<String>) {
    if let Some(i) = instr {
        match work::model(i) {
            Ok(m) => {
                let label = match m.work.class {
                    OpClass::Attention => "attention",
                    OpClass::Conv => "conv",
                    _ => "gemm",
                };
                return (Some(m.work), Some(label.to_string()), None);
            }
            Err(crate::trace::ops::OpModelError::BadArgs { reason, .. }) => {
                return (work::memory_work(i), Some("memory".to_string()), Some(reason));
            }
            Err(_) => {}
        }
        if let Some(w) = work::memory_work(i) {
            return (Some(w), Some("memory".to_string()), None);
        }
    }
    if let (Some(f), Some(b)) = (op.profile_flops, op.profile_bytes) {
        let w = Work {
            class: OpClass::Elementwise,
            shape: op.hlo_op.to_string(),
            flops: f,
            precision: Precision::Fp32,
            unit: ExecUnit::Vector,
            bytes_read: b,
            bytes_written: 0.0,
            flops_formula: "XLA cost analysis (`flops` stat in the profile)".to_string(),
            bytes_formula: "XLA cost analysis (`bytes_accessed` stat in the profile)".to_string(),
            assumptions: vec![
                "FLOPs and bytes as the profile's own cost analysis states".to_string()
            ],
        };
        return (Some(w), Some("xla-cost-analysis".to_string()), None);
    }
    let why = if instr.is_some() {
        "no shapes with known element sizes"
    } else {
        "the profile carries no HLO for this op"
    };
    (None, None, Some(why.to_string()))
}

fn op_row(
    model: &TraceModel,
    info: &XlaInfo,
    device: Option<&DeviceSpec>,
    g: &Group,
    total_ns: i64,
) -> XlaOpRow {
    let op = &info.ops[g.first];
    let instr = op.instr.as_deref();
    let first_kernel = super::first_kernel(model, g.first).map(|e| e.name.as_ref());
    let class = classify(instr, &op.hlo_op, first_kernel);
    let (total_us, mean_us, min_us, max_us) = stats(&g.times_ns);
    let (w, model_label, unmodelled) = work_of(instr, op);
    let rate = |amount: f64| (mean_us > 0.0).then(|| amount / (mean_us * 1e-6) / 1e12);
    let mut row = XlaOpRow {
        module: module_name(info, op.module),
        program_id: op.module.and_then(|m| info.modules.get(m as usize)).and_then(|m| m.program_id),
        name: op.hlo_op.to_string(),
        category: class.label.to_string(),
        opcode: instr.map(|i| i.opcode.clone()),
        fusion_kind: instr.and_then(|i| i.fusion_kind.clone()),
        custom_call_target: instr.and_then(|i| i.custom_call_target.clone()),
        framework_op: op.framework_op.as_deref().map(str::to_string),
        shape: instr.map(|i| i.shape.text()),
        operands: instr.map(work::operands_text),
        occurrences: g.times_ns.len() as u64,
        kernels: g.kernels,
        total_us,
        mean_us,
        min_us,
        max_us,
        percent: if total_ns > 0 { total_us * 1e3 / total_ns as f64 * 100.0 } else { 0.0 },
        cumulative_percent: 0.0,
        flops: w.as_ref().map(|w| w.flops),
        bytes: w.as_ref().map(Work::bytes),
        model: model_label,
        flops_formula: w.as_ref().map(|w| w.flops_formula.clone()),
        bytes_formula: w.as_ref().map(|w| w.bytes_formula.clone()),
        achieved_tflops: w.as_ref().filter(|w| w.flops > 0.0).and_then(|w| rate(w.flops)),
        achieved_tbs: w.as_ref().and_then(|w| rate(w.bytes())),
        roofline_attainment_pct: None,
        bound: None,
        floor_time_us: None,
        tile: instr.and_then(|i| tile_of(model, g, i, device)),
        unmodelled,
    };
    if let (Some(dev), Some(w)) = (device, &w) {
        let ns = (mean_us * 1e3).round();
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let t = (ns >= 1.0).then_some(ns as u64);
        if let Ok(r) = roofline(w, dev, t, &[]) {
            row.bound = Some(r.bound);
            row.floor_time_us = Some(r.floor_time_us);
            row.roofline_attainment_pct = r.achieved.map(|a| a.roofline_attainment_pct);
        }
    }
    row
}

/// Tile, wave and grid figures of a Triton GEMM fusion whose backend config states its
/// output tile.
fn tile_of(
    model: &TraceModel,
    g: &Group,
    i: &HloInstr,
    device: Option<&DeviceSpec>,
) -> Option<XlaTile> {
    let cfg = i.tile.as_ref()?;
    let gd = gemm_dims(i).ok()?;
    let (tile, dims, split): (Vec<i64>, Vec<i64>, u64) = if cfg.output_tile.is_empty() {
        let (bm, bn) = (cfg.block_m?, cfg.block_n?);
        let batch = i64::try_from(gd.batch).ok()?;
        let (rows, cols) = (i64::try_from(gd.m).ok()?, i64::try_from(gd.n).ok()?);
        let split = cfg.split_k.and_then(|s| u64::try_from(s).ok()).filter(|&s| s > 0).unwrap_or(1);
        (vec![1, bm, bn], vec![batch, rows, cols], split)
    } else {
        (cfg.output_tile.clone(), gd.out_dims.clone(), 1)
    };
    if tile.len() != dims.len() || tile.iter().any(|&t| t <= 0) || dims.iter().any(|&d| d <= 0) {
        return None;
    }
    let mut tiles: u64 = split;
    let mut eff = 1.0f64;
    for (&dim, &size) in dims.iter().zip(&tile) {
        let (dim, size) = (u64::try_from(dim).ok()?, u64::try_from(size).ok()?);
        let count = dim.div_ceil(size);
        tiles = tiles.checked_mul(count)?;
        eff *= dim as f64 / (count as f64 * size as f64);
    }
    // The op's longest kernel: its grid is the tile launch.
    let kernel = model.ops[g.first]
        .launched
        .iter()
        .filter_map(|&e| model.gpu.get(e as usize))
        .max_by_key(|e| e.dur_ns);
    let grid_blocks =
        kernel.and_then(GpuEvent::grid).map(|[x, y, z]| u64::from(x) * u64::from(y) * u64::from(z));
    let (waves, wave_eff) = match device.map(|d| u64::from(d.num_cu)).filter(|&c| c > 0) {
        Some(cu) => {
            let w = tiles.div_ceil(cu);
            (Some(w), Some(tiles as f64 / (w as f64 * cu as f64)))
        }
        None => (None, None),
    };
    Some(XlaTile {
        output_tile: tile,
        output_dims: dims,
        tiles,
        grid_blocks,
        tile_eff: eff,
        waves,
        wave_eff,
    })
}

fn category_rows(ops: &[XlaOpRow], total_ns: i64) -> Vec<XlaCategoryRow> {
    let mut by: BTreeMap<&str, (u64, u64, f64)> = BTreeMap::new();
    for r in ops {
        let e = by.entry(r.category.as_str()).or_default();
        e.0 += 1;
        e.1 += r.occurrences;
        e.2 += r.total_us;
    }
    let mut rows: Vec<XlaCategoryRow> = by
        .into_iter()
        .map(|(c, (n, occ, us))| XlaCategoryRow {
            category: c.to_string(),
            ops: n,
            occurrences: occ,
            time_ms: us / 1e3,
            percent: if total_ns > 0 { us * 1e3 / total_ns as f64 * 100.0 } else { 0.0 },
        })
        .collect();
    rows.sort_by(|a, b| b.time_ms.total_cmp(&a.time_ms).then_with(|| a.category.cmp(&b.category)));
    rows
}

/// (module, device, run).
type RunKey = (u32, i64, u32);

/// One module execution on one device.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// Union of its activities' intervals.
    busy_ns: i64,
    start_ns: i64,
    end_ns: i64,
    activities: u64,
}

/// Each (module, device, run) with its activities' span and busy time.
fn runs(model: &TraceModel, info: &XlaInfo) -> BTreeMap<RunKey, Run> {
    // The ops by (module, device, run), in op order within each: sorted stably by key,
    // then taken a key at a time.
    let mut keyed: Vec<((u32, i64, u32), usize)> = info
        .ops
        .iter()
        .zip(&model.ops)
        .enumerate()
        .filter_map(|(i, (op, cpu))| Some(((op.module?, cpu.pid, op.run), i)))
        .collect();
    keyed.sort_by_key(|&(k, _)| k);
    keyed
        .chunk_by(|a, b| a.0 == b.0)
        .map(|group| {
            let k = group[0].0;
            let ev: Vec<u32> =
                group.iter().flat_map(|&(_, i)| model.ops[i].launched.iter().copied()).collect();
            let start = ev
                .iter()
                .filter_map(|&e| model.gpu.get(e as usize))
                .map(|e| e.ts_ns)
                .min()
                .unwrap_or(0);
            let end = ev
                .iter()
                .filter_map(|&e| model.gpu.get(e as usize))
                .map(|e| e.ts_ns.saturating_add(e.dur_ns))
                .max()
                .unwrap_or(0);
            let run = Run {
                busy_ns: busy_ns(model, &ev),
                start_ns: start,
                end_ns: end,
                activities: ev.len() as u64,
            };
            (k, run)
        })
        .collect()
}

fn module_rows(info: &XlaInfo, runs: &BTreeMap<RunKey, Run>) -> Vec<ModuleRow> {
    let mut rows: Vec<ModuleRow> = info
        .modules
        .iter()
        .enumerate()
        .map(|(mi, m)| {
            let mi = u32::try_from(mi).unwrap_or(u32::MAX);
            let mine: Vec<(&RunKey, &Run)> = runs.iter().filter(|(k, _)| k.0 == mi).collect();
            let times: Vec<i64> = mine.iter().map(|(_, v)| v.busy_ns).collect();
            let (total_us, mean_us, min_us, max_us) = stats(&times);
            let mut devs: Vec<i64> = mine.iter().map(|(k, _)| k.1).collect();
            devs.dedup();
            let mut names: Vec<&str> =
                info.ops.iter().filter(|o| o.module == Some(mi)).map(|o| &*o.hlo_op).collect();
            names.sort_unstable();
            names.dedup();
            ModuleRow {
                name: m.name.clone(),
                program_id: m.program_id,
                has_hlo: m.has_hlo,
                runs: times.len() as u64,
                devices: devs.len() as u64,
                ops: names.len() as u64,
                kernels: mine.iter().map(|(_, v)| v.activities).sum(),
                device_time_ms: total_us / 1e3,
                mean_run_ms: mean_us / 1e3,
                min_run_ms: min_us / 1e3,
                max_run_ms: max_us / 1e3,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.device_time_ms.total_cmp(&a.device_time_ms).then_with(|| a.name.cmp(&b.name))
    });
    rows
}

fn steps(
    model: &TraceModel,
    info: &XlaInfo,
    runs: &BTreeMap<RunKey, Run>,
    window_start_ns: i64,
) -> Steps {
    // The step module: the one with the most device time.
    let mut per_module: BTreeMap<u32, i64> = BTreeMap::new();
    for (k, v) in runs {
        *per_module.entry(k.0).or_default() += v.busy_ns;
    }
    let Some((&main, _)) = per_module.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))) else {
        return Steps {
            basis: "none".to_string(),
            rows: Vec::new(),
            markers: info.step_markers.clone(),
            overlapping: 0,
        };
    };
    let mut spans: Vec<(i64, i64, i64, u64)> = runs
        .iter()
        .filter(|(k, _)| k.0 == main)
        .map(|(k, v)| (k.1, v.start_ns, v.end_ns, v.activities))
        .collect();
    spans.sort_by_key(|s| (s.0, s.1));
    // Each device's activities as (start, end), sorted by start (the model's order), and
    // the longest, to find the activities overlapping a span by binary search.
    let mut by_dev: BTreeMap<i64, (Vec<(i64, i64)>, i64)> = BTreeMap::new();
    for e in &model.gpu {
        let d = by_dev.entry(e.device).or_default();
        d.0.push((e.ts_ns, e.ts_ns.saturating_add(e.dur_ns)));
        d.1 = d.1.max(e.dur_ns);
    }
    let mut rows = Vec::new();
    let mut overlapping = 0u64;
    // The spans are sorted by device: a step's index on its device counts the spans since
    // the device's first.
    let mut first_of_device = 0usize;
    for (n, &(dev, start, end, kernels)) in spans.iter().enumerate() {
        if n > 0 && spans[n - 1].0 != dev {
            first_of_device = n;
        }
        // Every device activity on this device inside the span counts as busy.
        let (acts, longest) = by_dev.get(&dev).map_or((&[][..], 0), |(v, l)| (v.as_slice(), *l));
        let lo = acts.partition_point(|a| a.0 < start.saturating_sub(longest));
        let hi = acts.partition_point(|a| a.0 < end);
        let mut iv: Vec<(i64, i64)> = acts[lo..hi.max(lo)]
            .iter()
            .filter(|a| a.1 > start)
            .map(|a| (a.0.max(start), a.1.min(end)))
            .collect();
        let busy = crate::trace::attrib::busy_of_intervals(&mut iv);
        let span = end.saturating_sub(start);
        // A next step that starts inside this one is no gap: left out and counted.
        let next = spans.get(n + 1).filter(|s| s.0 == dev).map(|s| s.1.saturating_sub(end));
        let next = next.filter(|&g| {
            overlapping += u64::from(g < 0);
            g >= 0
        });
        rows.push(StepRow {
            index: (n - first_of_device) as u64,
            device: dev,
            start_ms: start.saturating_sub(window_start_ns) as f64 / 1e6,
            span_ms: span as f64 / 1e6,
            busy_ms: busy as f64 / 1e6,
            idle_ms: span.saturating_sub(busy) as f64 / 1e6,
            kernels,
            gap_to_next_ms: next.map(|g| g as f64 / 1e6),
        });
    }
    let name = info.modules.get(main as usize).map_or("?", |m| m.name.as_str());
    Steps { basis: format!("module:{name}"), rows, markers: info.step_markers.clone(), overlapping }
}

fn collective_rows(
    model: &TraceModel,
    info: &XlaInfo,
    groups: &[Group],
    ops: &[XlaOpRow],
) -> Vec<XlaCollectiveRow> {
    let devices_in_profile = {
        let mut d: Vec<i64> = model.gpu.iter().map(|e| e.device).collect();
        d.sort_unstable();
        d.dedup();
        d.len() as u64
    };
    let mut rows = Vec::new();
    for g in groups {
        let op = &info.ops[g.first];
        let instr = op.instr.as_deref();
        let Some(row) =
            ops.iter().find(|r| *r.name == *op.hlo_op && r.module == module_name(info, op.module))
        else {
            continue;
        };
        if row.category != "collective" {
            continue;
        }
        let kind = instr
            .and_then(collective::kind)
            .or_else(|| collective::kind_from_name(super::classify::base_name(&op.hlo_op)));
        let (n, basis) = match instr.and_then(HloInstr::group_size) {
            Some(n) => (Some(n), Some("replica groups".to_string())),
            None if devices_in_profile > 0 => (
                Some(devices_in_profile),
                Some("all devices in the profile (no replica groups)".to_string()),
            ),
            None => (None, None),
        };
        let msg = instr.and_then(|i| collective::message_bytes(i, n));
        let mean_ns = row.mean_us * 1e3;
        let algbw = msg.as_ref().filter(|_| mean_ns > 0.0).map(|(b, _)| *b as f64 / mean_ns);
        let factor = kind.zip(n).map(|(k, n)| k.bus_factor(n));
        rows.push(XlaCollectiveRow {
            module: row.module.clone(),
            name: op.hlo_op.to_string(),
            kind,
            group_size: n,
            group_size_basis: basis,
            occurrences: row.occurrences,
            message_bytes: msg.as_ref().map(|(b, _)| *b as f64),
            message_basis: msg.map(|(_, s)| s),
            mean_us: row.mean_us,
            min_us: row.min_us,
            max_us: row.max_us,
            algbw_gbs: algbw,
            busbw_gbs: algbw.zip(factor).map(|(a, f)| a * f),
            bus_factor: kind.map(|k| k.bus_factor_formula().to_string()),
        });
    }
    rows.sort_by(|a, b| {
        (b.mean_us * b.occurrences as f64).total_cmp(&(a.mean_us * a.occurrences as f64))
    });
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::xla::{XlaModule, XlaOp};
    use crate::trace::{CpuOp, GpuEvent};

    /// Two runs of one module on device 0: run 0 spans 0-10 ms, run 1 starts at 4 ms
    /// (inside run 0) and ends at 12 ms, as in a profile whose step 1 starts inside
    /// step 0. By hand: the gap from step 0 to step 1 would be 4 - 10 = -6 ms.
    #[test]
    fn a_step_inside_a_step_gives_no_negative_gap() {
        let ms = 1_000_000;
        let gpu = |ts: i64, dur: i64| GpuEvent { ts_ns: ts, dur_ns: dur, ..GpuEvent::default() };
        let mut model =
            TraceModel { gpu: vec![gpu(0, 10 * ms), gpu(4 * ms, 8 * ms)], ..TraceModel::default() };
        model.ops = vec![
            CpuOp { launched: vec![0], ..CpuOp::default() },
            CpuOp { launched: vec![1], ..CpuOp::default() },
        ];
        let op = |run: u32| XlaOp { module: Some(0), run, ..XlaOp::default() };
        let info = XlaInfo {
            modules: vec![XlaModule { name: "jit_step".to_string(), ..XlaModule::default() }],
            ops: vec![op(0), op(1)],
            ..XlaInfo::default()
        };
        let s = steps(&model, &info, &runs(&model, &info), 0);
        assert_eq!(s.rows.len(), 2);
        assert_eq!(s.overlapping, 1);
        assert!(s.rows.iter().all(|r| r.gap_to_next_ms.is_none_or(|g| g >= 0.0)), "{s:?}");
        assert_eq!(s.rows[0].gap_to_next_ms, None);
        // Spans are the runs' own: 10 ms and 8 ms.
        assert_eq!(s.rows[0].span_ms, 10.0);
        assert_eq!(s.rows[1].span_ms, 8.0);
    }

    /// Three runs of the step module on device 0 and two on device 1, listed device by
    /// device: each device's steps are numbered from 0.
    #[test]
    fn steps_are_numbered_per_device() {
        let ms = 1_000_000;
        let runs = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)];
        let model = TraceModel {
            gpu: runs
                .iter()
                .map(|&(device, run)| GpuEvent {
                    device,
                    ts_ns: i64::from(run) * 10 * ms,
                    dur_ns: ms,
                    ..GpuEvent::default()
                })
                .collect(),
            // The op of a device's run has the device's plane as its `pid`.
            ops: runs
                .iter()
                .zip(0..)
                .map(|(&(device, _), i)| CpuOp {
                    pid: device,
                    launched: vec![i],
                    ..CpuOp::default()
                })
                .collect(),
            ..TraceModel::default()
        };
        let info = XlaInfo {
            modules: vec![XlaModule { name: "jit_step".to_string(), ..XlaModule::default() }],
            ops: runs
                .iter()
                .map(|&(_, run)| XlaOp { module: Some(0), run, ..XlaOp::default() })
                .collect(),
            ..XlaInfo::default()
        };
        let s = steps(&model, &info, &super::runs(&model, &info), 0);
        let numbered: Vec<(i64, u64)> = s.rows.iter().map(|r| (r.device, r.index)).collect();
        assert_eq!(numbered, [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)], "{s:?}");
    }
}

//! Per-category roofline tables: TraceLens's `GEMM.csv`, `SDPA_fwd.csv`, `CONV_fwd.csv`,
//! `Normalization.csv`, `BinaryElementwise.csv`, ... — one row per unique (op name,
//! model parameters) — plus what TraceLens lacks: roofline attainment and bound on the
//! device, GEMM tile/wave/dim efficiency from the kernel names, the top finding, and an
//! `unmodelled` table for kernel-launching ops no model covers (times only, no numbers).
//!
//! How TraceLens builds these tables (`TreePerfAnalyzer.build_df_perf_metrics` and
//! `summarize_df_perf_metrics`), and so how we do:
//! - every CPU op whose name has a model is a call, nested or not (so
//!   `aten::layer_norm` and the `aten::native_layer_norm` inside it both have rows);
//! - a call's kernel time is the busy time of its **subtree**'s GPU events (kernels,
//!   memcpys, memsets; [`super::attrib`]);
//! - calls are grouped by (name, parameters) — not by the full argument list;
//! - per row: FLOPs and bytes of one call; kernel time mean, median, **sample** std
//!   (n − 1; none for one call), min, max, sum; achieved TFLOP/s and TB/s per call, then
//!   mean, median, sample std, min, max over the calls with a non-zero time;
//! - rows sorted by total kernel time, descending (ties: first call first);
//! - kernel details: the n-th GPU event of each call (calls with another event count are
//!   skipped), with the **sample** std (n − 1; 0 for one launch) that `kernels[]` of the
//!   summary also reports, so one kernel has one std in a report. TraceLens's
//!   `_summarize_kernel_stats` uses `np.std` (population) here; see
//!   `docs/differences-from-tracelens.md`.
//!
//! Units: bytes are bytes (TraceLens prints MB = 2^20 bytes), FLOPs are FLOPs (TraceLens
//! prints GFLOPS = 1e9), TB/s = 1e12 B/s, TFLOP/s = 1e12 FLOP/s, times in µs.

use super::attrib::{busy_ns, subtree_events};
use super::model::{Dims, OpArgs, TraceModel};
use super::ops::{
    categorize_in, op_table, op_table_in, Category, ModelMemo, OpModel, OpModelError, ParamValue,
    Params, Table,
};
use crate::analysis::{analyze, KernelRequest};
use crate::device::DeviceSpec;
use crate::diagnose::Finding;
use crate::roofline::Bound;
use foldhash::HashMap;
use serde::Serialize;
use std::sync::Arc;

/// Statistics of one quantity across the calls of a row (`rooftop_core::stats`).
pub use crate::stats::Stats;

/// Kernel-time statistics of a row, in microseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimeStats {
    pub mean: f64,
    pub median: f64,
    pub std: Option<f64>,
    pub min: f64,
    pub max: f64,
    pub sum: f64,
}

/// One kernel position of a row (the n-th GPU event of each call).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelDetail {
    pub name: String,
    pub stream: i64,
    pub count: u64,
    pub total_us: f64,
    pub mean_us: f64,
    pub median_us: f64,
    /// Sample standard deviation (n − 1; 0 for one launch), as `KernelRow::std_us`.
    pub std_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    pub grid: Option<[u32; 3]>,
    pub block: Option<[u32; 3]>,
    pub shared_memory_bytes: Option<u64>,
    pub registers_per_thread: Option<u32>,
}

/// One row: all calls of one op with the same model parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpRow {
    pub name: String,
    pub category: Category,
    pub params: Params,
    /// FLOPs of one call; `None` when unmodelled.
    pub flops: Option<f64>,
    /// Bytes moved by one call; `None` when unmodelled.
    pub bytes: Option<f64>,
    pub flops_per_byte: Option<f64>,
    pub count: u64,
    pub kernel_time_us: TimeStats,
    pub achieved_tflops: Option<Stats>,
    pub achieved_tbs: Option<Stats>,
    pub roofline_attainment_pct: Option<f64>,
    pub bound: Option<Bound>,
    pub floor_time_us: Option<f64>,
    pub tile_eff: Option<f64>,
    pub wave_eff: Option<f64>,
    pub dim_eff: Option<f64>,
    pub top_finding: Option<Finding>,
    pub kernels: Vec<KernelDetail>,
    /// Why the row has no model numbers, when it has none.
    pub unmodelled: Option<String>,
    /// Index (in `TraceModel::ops`) of the row's first call.
    pub first_op: u32,
}

/// One table, named as TraceLens names its CSV (`GEMM`, `SDPA_fwd`, `CONV_fwd`,
/// `Normalization`, `BinaryElementwise`, ...) or `unmodelled`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CategoryTable {
    pub name: String,
    pub category: Category,
    pub rows: Vec<OpRow>,
}

/// Name of the table of ops without a model: the outermost kernel-launching ops that no
/// modelled op encloses, and modelled ops whose recorded arguments do not fit the model
/// (the reason is in [`OpRow::unmodelled`]). Their time is the subtree's, as for the
/// other rows; they have no FLOPs, bytes or rates.
pub const UNMODELLED: &str = "unmodelled";

/// The per-category roofline tables of a trace, in [`Table::ALL`] order then
/// [`UNMODELLED`]; empty tables are left out. With a `device`, rows get the roofline
/// attainment, bound, floor, tile/wave efficiency and top finding.
pub fn category_tables(model: &TraceModel, device: Option<&DeviceSpec>) -> Vec<CategoryTable> {
    category_tables_in(model, device, &super::inference::Context::new(model))
}

/// [`category_tables`] with the models' context (engine steps, a model config).
pub fn category_tables_in(
    model: &TraceModel,
    device: Option<&DeviceSpec>,
    inference: &super::inference::Context,
) -> Vec<CategoryTable> {
    category_tables_memo(&mut ModelMemo::new(model, inference), device)
}

/// [`category_tables_in`] with the models of `memo`, which keeps them for the coverage
/// ([`super::ops::model_coverage_memo`]).
pub fn category_tables_memo(
    memo: &mut ModelMemo<'_>,
    device: Option<&DeviceSpec>,
) -> Vec<CategoryTable> {
    let model = memo.model();
    // Groups in first-call order; `index` maps (table or None for unmodelled, grouping
    // key) to a group. Calls sharing an argument record (the reader interns them) are
    // modelled once: `seen` maps (name, address of the args) to the group.
    let mut groups: Vec<((Option<Table>, String), Group)> = Vec::new();
    let mut index: HashMap<(Option<Table>, String), usize> = HashMap::default();
    let mut seen: HashMap<(&str, *const OpArgs), usize> = HashMap::default();
    // Whether a PyTorch op is modelled depends on its name alone: found once per shared
    // copy of a name (by its address and length), not once per call.
    let mut modelled_by_name: HashMap<(usize, usize), bool> = HashMap::default();
    for (i, op) in model.ops.iter().enumerate() {
        let modelled = if model.xla.is_some() {
            op_table_in(model, i).is_some()
        } else {
            *modelled_by_name
                .entry((op.name.as_ptr() as usize, op.name.len()))
                .or_insert_with(|| op_table_in(model, i).is_some())
        };
        if !modelled && (op.launched.is_empty() || covered_by_ancestor(model, i)) {
            continue;
        }
        let shared = (op.name.as_ref(), Arc::as_ptr(&op.args));
        let in_context = super::ops::context_dependent(&op.name);
        if let Some(&g) = seen.get(&shared).filter(|_| !in_context) {
            groups[g].1.calls.push(i);
            continue;
        }
        let (table, key, model_or_reason) = if modelled {
            match &*memo.get(i) {
                Ok(m) => {
                    (Some(m.table), format!("{}|{}", op.name, m.params.group_key()), Ok(m.clone()))
                }
                Err(e) => (None, unmodelled_key(op), Err(reason(e))),
            }
        } else {
            (None, unmodelled_key(op), Err(format!("no work model for `{}`", op.name)))
        };
        let k = (table, key);
        let g = *index.entry(k.clone()).or_insert_with(|| {
            groups.push((k, Group { model: model_or_reason, calls: Vec::new() }));
            groups.len() - 1
        });
        seen.insert(shared, g);
        groups[g].1.calls.push(i);
    }

    let mut by_table: Vec<(Option<Table>, Vec<OpRow>)> = Vec::new();
    for (k, g) in groups {
        let row = build_row(model, device, &g);
        match by_table.iter_mut().find(|(t, _)| *t == k.0) {
            Some((_, rows)) => rows.push(row),
            None => by_table.push((k.0, vec![row])),
        }
    }
    let rank = |t: &Option<Table>| {
        t.map_or(Table::ALL.len(), |t| Table::ALL.iter().position(|&x| x == t).unwrap_or(0))
    };
    by_table.sort_by_key(|(t, _)| rank(t));
    by_table
        .into_iter()
        .map(|(t, mut rows)| {
            rows.sort_by(|a, b| {
                b.kernel_time_us
                    .sum
                    .total_cmp(&a.kernel_time_us.sum)
                    .then(a.first_op.cmp(&b.first_op))
            });
            CategoryTable {
                name: t.map_or(UNMODELLED, Table::as_str).to_string(),
                category: t.map_or(Category::Other, Table::category),
                rows,
            }
        })
        .collect()
}

/// The calls of one row and their shared model (or why there is none).
struct Group {
    model: Result<OpModel, String>,
    calls: Vec<usize>,
}

fn reason(e: &OpModelError) -> String {
    e.to_string()
}

fn dims_repr(d: &[Dims]) -> String {
    let items: Vec<String> = d
        .iter()
        .map(|x| match x {
            Dims::Tensor(v) => format!("{v:?}"),
            Dims::List(v) => format!("{v:?}"),
        })
        .collect();
    format!("[{}]", items.join(", "))
}

fn unmodelled_key(op: &super::model::CpuOp) -> String {
    format!("{}|{}|{:?}", op.name, dims_repr(&op.args.input_dims), op.args.input_types)
}

/// Whether an enclosing op of `op` has a row that holds its time: one with a work model,
/// or one that launches GPU work itself (an unmodelled row of the outer op).
fn covered_by_ancestor(model: &TraceModel, op: usize) -> bool {
    let mut cur = op;
    while let Some(p) = model.ops.get(cur).and_then(|o| o.parent).map(|p| p as usize) {
        if p >= cur {
            return false;
        }
        if model.ops.get(p).is_some_and(|o| op_table(&o.name).is_some() || !o.launched.is_empty()) {
            return true;
        }
        cur = p;
    }
    false
}

fn build_row(model: &TraceModel, device: Option<&DeviceSpec>, g: &Group) -> OpRow {
    let first = g.calls[0];
    let op0 = &model.ops[first];
    let per_call: Vec<Vec<u32>> = g.calls.iter().map(|&i| subtree_events(model, i)).collect();
    let times_ns: Vec<i64> = per_call.iter().map(|ev| busy_ns(model, ev)).collect();
    let times_us: Vec<f64> = times_ns.iter().map(|&t| t as f64 / 1e3).collect();
    let ts = Stats::of(&times_us).unwrap_or(Stats {
        mean: 0.0,
        median: 0.0,
        std: None,
        min: 0.0,
        max: 0.0,
    });
    let kernel_time_us = TimeStats {
        mean: ts.mean,
        median: ts.median,
        std: ts.std,
        min: ts.min,
        max: ts.max,
        sum: times_us.iter().sum(),
    };
    let kernels = kernel_details(model, &per_call);

    // The category of the row's first call as the ops summary gives it (one source of
    // truth, `categorize_in`): its table's category ([`Table::category`]), a Triton
    // kernel's by its kind, a copy's or a collective's by its kernel.
    let category = categorize_in(model, first);
    let (params, flops, bytes, unmodelled) = match &g.model {
        Ok(m) => (m.params.clone(), Some(m.flops), Some(m.bytes), None),
        Err(why) => {
            let mut p = Params::default();
            p.0.push(("input_dims", ParamValue::Str(dims_repr(&op0.args.input_dims))));
            p.0.push((
                "input_types",
                ParamValue::Dtypes(op0.args.input_types.iter().map(|t| Some(t.clone())).collect()),
            ));
            (p, None, None, Some(why.clone()))
        }
    };
    let rate = |amount: Option<f64>| -> Option<Stats> {
        let a = amount?;
        let v: Vec<f64> =
            times_us.iter().filter(|&&t| t > 0.0).map(|&t| a / (t * 1e-6) / 1e12).collect();
        Stats::of(&v)
    };
    let achieved_tflops = rate(flops);
    let achieved_tbs = rate(bytes);
    let flops_per_byte = match (flops, bytes) {
        (Some(f), Some(b)) if b > 0.0 => Some(f / b),
        _ => None,
    };

    let mut row = OpRow {
        name: op0.name.to_string(),
        category,
        params,
        flops,
        bytes,
        flops_per_byte,
        count: g.calls.len() as u64,
        kernel_time_us,
        achieved_tflops,
        achieved_tbs,
        roofline_attainment_pct: None,
        bound: None,
        floor_time_us: None,
        tile_eff: None,
        wave_eff: None,
        dim_eff: None,
        top_finding: None,
        kernels,
        unmodelled,
        first_op: u32::try_from(first).unwrap_or(u32::MAX),
    };
    if let (Some(dev), Ok(m)) = (device, &g.model) {
        roofline_columns(&mut row, dev, m);
    }
    row
}

/// The kernel of the row that the tile math and the diagnosis look at: the first whose
/// name gives a GEMM tile, else the one with the largest total time.
fn main_kernel(kernels: &[KernelDetail]) -> Option<&KernelDetail> {
    kernels
        .iter()
        .find(|k| crate::gemm_tiles::parse_kernel_name(&k.name).is_some_and(|i| i.has_tile()))
        .or_else(|| kernels.iter().max_by(|a, b| a.total_us.total_cmp(&b.total_us)))
}

fn roofline_columns(row: &mut OpRow, dev: &DeviceSpec, m: &OpModel) {
    let mut req = KernelRequest::new(m.work.clone());
    let mean_ns = (row.kernel_time_us.mean * 1e3).round();
    // Saturating float-to-int conversion; a zero mean (no kernels) gives no time.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let ns = mean_ns as u64;
    req.time_ns = (ns > 0).then_some(ns);
    req.kernel_name = main_kernel(&row.kernels).map(|k| k.name.clone());
    req.gemm = m.gemm;
    let Ok(a) = analyze(dev, &req) else { return };
    row.bound = Some(a.roofline.bound);
    row.floor_time_us = Some(a.roofline.floor_time_us);
    row.roofline_attainment_pct = a.roofline.achieved.as_ref().map(|x| x.roofline_attainment_pct);
    if let Some(t) = &a.tiles {
        row.tile_eff = Some(t.efficiency.tile_eff);
        row.wave_eff = t.efficiency.wq_eff;
        row.dim_eff = Some(t.efficiency.dim_eff);
    }
    row.top_finding = a
        .findings
        .iter()
        .enumerate()
        .max_by(|(i, x), (j, y)| x.severity.cmp(&y.severity).then(j.cmp(i)))
        .map(|(_, f)| f.clone());
}

/// TraceLens `_summarize_kernel_stats`: the first call's events are the template; the
/// n-th event of every call with as many events gives the n-th kernel's durations.
fn kernel_details(model: &TraceModel, per_call: &[Vec<u32>]) -> Vec<KernelDetail> {
    let Some(template) = per_call.iter().find(|c| !c.is_empty()) else { return Vec::new() };
    let mut durs: Vec<Vec<f64>> = vec![Vec::new(); template.len()];
    for call in per_call.iter().filter(|c| c.len() == template.len()) {
        for (slot, &e) in durs.iter_mut().zip(call) {
            if let Some(g) = model.gpu.get(e as usize) {
                slot.push(g.dur_ns as f64 / 1e3);
            }
        }
    }
    template
        .iter()
        .zip(durs)
        .filter_map(|(&e, mut d)| {
            let g = model.gpu.get(e as usize)?;
            let total_us = d.iter().sum();
            // Sorted first, as `summary::kernel_summary` does, so that the same launches give
            // the same mean and std to the last bit in both places.
            d.sort_by(f64::total_cmp);
            let s = Stats::of_sorted(&d)?;
            Some(KernelDetail {
                name: g.name.to_string(),
                stream: g.stream,
                count: d.len() as u64,
                total_us,
                mean_us: s.mean,
                median_us: s.median,
                std_us: s.std.unwrap_or(0.0),
                min_us: s.min,
                max_us: s.max,
                grid: g.grid(),
                block: g.block(),
                shared_memory_bytes: g.shared_memory_bytes(),
                registers_per_thread: g.registers_per_thread(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Catalog;
    use crate::trace::attrib::tests::{kernel, link, op};
    use crate::trace::model::OpArgs;

    const BF: &str = "c10::BFloat16";

    fn t(d: &[i64]) -> Dims {
        Dims::Tensor(d.to_vec())
    }

    fn addmm_args(m: i64, n: i64, k: i64) -> OpArgs {
        OpArgs {
            input_dims: vec![t(&[n]), t(&[m, k]), t(&[k, n]), t(&[]), t(&[])],
            input_types: [BF, BF, BF, "Scalar", "Scalar"]
                .iter()
                .map(|s| (*s).to_string())
                .collect(),
            input_strides: vec![t(&[1]), t(&[k, 1]), t(&[1, k]), t(&[]), t(&[])],
            concrete_inputs: ["", "", "", "1", "1"].iter().map(|s| (*s).to_string()).collect(),
        }
    }

    /// Three linear layers: two of one shape (kernels of 8 and 10 µs), one of another
    /// (12 µs); a polygamma launcher without a model; a layer norm with its native op inside.
    fn model() -> TraceModel {
        let mut ops = vec![
            op("aten::linear", 0, 100_000, None),
            op("aten::addmm", 1_000, 50_000, Some(0)),
            op("aten::linear", 200_000, 100_000, None),
            op("aten::addmm", 201_000, 50_000, Some(2)),
            op("aten::linear", 400_000, 100_000, None),
            op("aten::addmm", 401_000, 50_000, Some(4)),
            op("aten::polygamma", 600_000, 10_000, None),
            op("aten::layer_norm", 700_000, 10_000, None),
            op("aten::native_layer_norm", 700_100, 9_000, Some(7)),
        ];
        ops[1].args = addmm_args(788, 768, 768).into();
        ops[3].args = addmm_args(788, 768, 768).into();
        ops[5].args = addmm_args(788, 3072, 768).into();
        let ln = OpArgs {
            input_dims: vec![t(&[4, 197, 768]), t(&[]), t(&[768]), t(&[768]), t(&[]), t(&[])],
            input_types: [BF, "ScalarList", BF, BF, "Scalar", "Scalar"]
                .iter()
                .map(|s| (*s).to_string())
                .collect(),
            input_strides: vec![],
            concrete_inputs: ["", "[768]", "", "", "1e-12", "True"]
                .iter()
                .map(|s| (*s).to_string())
                .collect(),
        };
        ops[7].args = ln.clone().into();
        ops[8].args = ln.into();
        let mut gpu = vec![
            kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 10_000, 8_000, 7, 1),
            kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 210_000, 10_000, 7, 3),
            kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 410_000, 12_000, 7, 5),
            kernel("void at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>", 610_000, 3_000, 7, 6),
            kernel("void at::native::vectorized_layer_norm_kernel<c10::BFloat16, float>", 710_000, 4_000, 7, 8),
        ];
        gpu[3].launch =
            crate::trace::model::LaunchDims { grid: Some([100, 1, 1]), ..Default::default() }
                .shared();
        link(TraceModel { ops, gpu, ..TraceModel::default() })
    }

    #[test]
    fn rows_group_by_params_with_tracelens_statistics() {
        let tables = category_tables(&model(), None);
        let names: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["GEMM", "Normalization", "unmodelled"]);

        let gemm = &tables[0];
        assert_eq!(gemm.category, Category::Gemm);
        // Sorted by total time: 8 + 10 = 18 µs before 12 µs.
        let r = &gemm.rows[0];
        assert_eq!((r.name.as_str(), r.count), ("aten::addmm", 2));
        assert_eq!(r.params.get("N"), Some(&ParamValue::Int(768)));
        let kt = &r.kernel_time_us;
        assert_eq!((kt.mean, kt.median, kt.min, kt.max, kt.sum), (9.0, 9.0, 8.0, 10.0, 18.0));
        // Sample std of {8, 10}: sqrt(((8-9)² + (10-9)²)/1) = sqrt(2).
        assert!((kt.std.unwrap() - 2f64.sqrt()).abs() < 1e-12);
        // 930_167_808 FLOPs in 8 µs = 116.27 TFLOP/s; in 10 µs = 93.02 TFLOP/s.
        let tf = r.achieved_tflops.as_ref().unwrap();
        assert!((tf.max - 930_167_808.0 / 8e-6 / 1e12).abs() < 1e-9);
        assert!(
            (tf.mean - f64::midpoint(930_167_808.0 / 8e-6, 930_167_808.0 / 10e-6) / 1e12).abs()
                < 1e-9
        );
        let tbs = r.achieved_tbs.as_ref().unwrap();
        assert!((tbs.min - 3_601_920.0 / 10e-6 / 1e12).abs() < 1e-12);
        // One kernel position, two calls; sample std of {8, 10} is sqrt(2), as the row's.
        assert_eq!(r.kernels.len(), 1);
        assert_eq!((r.kernels[0].count, r.kernels[0].total_us), (2, 18.0));
        assert!((r.kernels[0].std_us - 2f64.sqrt()).abs() < 1e-12);
        assert!(r.roofline_attainment_pct.is_none());

        let single = &gemm.rows[1];
        assert_eq!(single.count, 1);
        assert_eq!(single.kernel_time_us.std, None);
        assert_eq!(single.achieved_tflops.as_ref().unwrap().std, None);

        // Both the composite and the native layer norm have rows, with the same time.
        let norm = &tables[1];
        assert_eq!(norm.rows.len(), 2);
        assert!(norm.rows.iter().all(|r| r.kernel_time_us.sum == 4.0));

        // polygamma launches a kernel and has no model: listed, with no numbers.
        let un = &tables[2];
        assert_eq!(un.rows.len(), 1);
        assert_eq!(un.rows[0].name, "aten::polygamma");
        assert_eq!(un.rows[0].category, Category::Elementwise);
        assert!(un.rows[0].flops.is_none() && un.rows[0].achieved_tflops.is_none());
        assert!(un.rows[0].unmodelled.as_deref().unwrap().contains("no work model"));
        assert_eq!(un.rows[0].kernels[0].grid, Some([100, 1, 1]));
    }

    /// One kernel has one std in a report (finding 14 of the trace review): four addmm
    /// calls of one shape whose kernels take 2, 4, 4 and 6 µs. By hand: mean 4, squared
    /// deviations 4 + 0 + 0 + 4 = 8; sample std sqrt(8 / 3) = 1.632_993 (the population
    /// std, sqrt(8 / 4) = 1.414_214, is not used anywhere).
    #[test]
    fn kernel_details_and_kernel_rows_share_the_sample_std() {
        let mut ops = Vec::new();
        let mut gpu = Vec::new();
        for (i, ts, dur_ns) in
            [(0, 0, 2_000), (1, 100_000, 4_000), (2, 200_000, 6_000), (3, 300_000, 4_000)]
        {
            let mut o = op("aten::addmm", ts, 50_000, None);
            o.args = addmm_args(788, 768, 768).into();
            ops.push(o);
            gpu.push(kernel("void gemm_kernel<128>()", ts + 10_000, dur_ns, 7, i));
        }
        let m = link(TraceModel { ops, gpu, ..TraceModel::default() });
        let expected = (8.0f64 / 3.0).sqrt();

        let tables = category_tables(&m, None);
        let row = &tables[0].rows[0];
        assert_eq!((row.name.as_str(), row.count), ("aten::addmm", 4));
        let detail = &row.kernels[0];
        assert_eq!((detail.count, detail.total_us, detail.mean_us), (4, 16.0, 4.0));
        assert!((detail.std_us - expected).abs() < 1e-12, "{}", detail.std_us);

        let rows = super::super::summary::kernel_summary(&m, &|_| "GEMM", 400.0);
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].count, rows[0].total_us), (4, 16.0));
        assert!((rows[0].std_us - expected).abs() < 1e-12, "{}", rows[0].std_us);
        // The same launches give the same bits in both places.
        assert_eq!(rows[0].std_us.to_bits(), detail.std_us.to_bits());
    }

    #[test]
    fn device_adds_roofline_and_tiles() {
        let cat = Catalog::builtin();
        let dev = cat.lookup("h100-sxm").unwrap();
        let tables = category_tables(&model(), Some(dev));
        let r = &tables[0].rows[0];
        let att = r.roofline_attainment_pct.unwrap();
        assert!(att > 0.0 && att <= 100.0, "{att}");
        assert!(r.bound.is_some() && r.floor_time_us.unwrap() > 0.0);
        // 788×768 output, cuBLAS column-major: kernel sees M=768, N=788; tile 128×64
        // gives 6×13 = 78 tiles, 768*788/(6*128*13*64) = 0.947 tile efficiency.
        let te = r.tile_eff.unwrap();
        assert!((te - (768.0 * 788.0) / (768.0 * 832.0)).abs() < 1e-9, "{te}");
        assert!(r.dim_eff.is_some());
        // Unmodelled rows get no roofline numbers.
        assert!(tables[2].rows[0].bound.is_none());
    }

    #[test]
    fn ops_without_kernels_count_with_zero_time() {
        let mut m = model();
        m.gpu.clear();
        for o in &mut m.ops {
            o.launched.clear();
        }
        let tables = category_tables(&m, None);
        let r = &tables[0].rows[0];
        assert_eq!(r.kernel_time_us.sum, 0.0);
        assert!(r.achieved_tflops.is_none());
        assert!(r.kernels.is_empty());
        assert!(tables.iter().all(|t| t.name != UNMODELLED));
    }

    /// An unmodelled launcher inside another is counted in the outer row only:
    /// outer kernel [0, 5) µs, inner kernel [3, 9) µs → one row of 9 µs busy time.
    #[test]
    fn nested_unmodelled_launchers_count_once() {
        let m = link(TraceModel {
            ops: vec![op("my::outer", 0, 100_000, None), op("my::inner", 1_000, 50_000, Some(0))],
            gpu: vec![kernel("a", 0, 5_000, 7, 0), kernel("b", 3_000, 6_000, 8, 1)],
            ..TraceModel::default()
        });
        let tables = category_tables(&m, None);
        assert_eq!(tables.len(), 1);
        assert_eq!(tables[0].rows.len(), 1);
        assert_eq!(tables[0].rows[0].name, "my::outer");
        assert_eq!(tables[0].rows[0].kernel_time_us.sum, 9.0);
    }

    #[test]
    fn empty_model_has_no_tables() {
        assert!(category_tables(&TraceModel::default(), None).is_empty());
    }
}

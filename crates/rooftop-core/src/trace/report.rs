//! `TraceReport`: everything `rooftop trace` reports about one trace (one rank), the
//! stable JSON schema of `rooftop trace --format json` (`docs/json-schema.md`), and
//! [`analyze`], which computes it from a [`TraceModel`]. Directories of per-rank traces:
//! [`super::ranks`].
//!
//! Top-level keys: `schema_version`, `device`, `window`, `timeline`, `ops_summary`,
//! `categories`, `kernels`, `short_kernels`, `findings`, `warnings`, and the time between
//! the kernels ([`super::gaps`], [`super::inference`]): `idle`, `launch`, `syncs`,
//! `graphs`, `critical_path`, `modules`, `memory`, `inference`. Adding a key is a
//! compatible change; renaming or removing one bumps [`SCHEMA_VERSION`].

use super::findings::{findings, FindingsInput, Framework};
use super::gaps::critical_path::{critical_path, CpOptions, CriticalPath};
use super::gaps::graphs::{graphs, Graphs};
use super::gaps::idle::{idle_breakdown, IdleBreakdown, CONSECUTIVE_KERNEL_DELAY_NS};
use super::gaps::launch::{launch_stats, LaunchStats};
use super::gaps::memory::{memory, Memory};
use super::gaps::modules::{modules, Modules};
use super::gaps::syncs::{syncs, Syncs};
use super::inference::{inference, Inference};
use super::model::{GpuKind, TraceModel, TraceWarning};
use super::ops;
use super::summary::{
    kernel_summary, ops_summary, short_kernels, KernelRow, OpsSummary, ShortKernels,
};
use super::tables::{category_tables_memo, CategoryTable, OpRow};
use super::timeline::{timeline, Timeline, Window};
use crate::device::DeviceSpec;
use crate::diagnose::{rank, Finding};
use crate::model::ModelConfig;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Version of the JSON schema below.
pub const SCHEMA_VERSION: u32 = 1;

/// Analysis settings.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceOptions {
    /// Kernels shorter than this are "short" (TraceLens's default: 10 µs).
    pub short_kernel_threshold_us: f64,
    /// Bins of the short-kernel histogram (TraceLens's default: 100).
    pub histogram_bins: usize,
    /// Count GPU events no runtime call launched in the timeline (TraceLens's default:
    /// no).
    pub include_unlinked: bool,
    /// Gaps shorter than this that are not host waits are kernel waits, ns (HTA's
    /// `consecutive_kernel_delay`, 30 µs).
    pub idle_threshold_ns: i64,
    /// The critical-path window and what-if requests.
    pub critical_path: CpOptions,
    /// A Hugging Face model config (`--model-config`): sizes the trace does not record
    /// (MoE expert widths, attention head size).
    pub model_config: Option<Arc<ModelConfig>>,
}

impl TraceOptions {
    /// The default options for `model`: an XPlane (JAX) model counts every device
    /// activity in the timeline (each was recorded on a device stream; "unlinked" is a
    /// Kineto notion), as TraceLens's JAX analysis does.
    pub fn for_model(model: &TraceModel) -> TraceOptions {
        TraceOptions { include_unlinked: model.xla.is_some(), ..TraceOptions::default() }
    }
}

impl Default for TraceOptions {
    fn default() -> Self {
        TraceOptions {
            short_kernel_threshold_us: 10.0,
            histogram_bins: 100,
            include_unlinked: false,
            idle_threshold_ns: CONSECUTIVE_KERNEL_DELAY_NS,
            critical_path: CpOptions::default(),
            model_config: None,
        }
    }
}

/// The device: what the trace says and the catalog entry used for roofline numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct TraceDevice {
    /// `deviceProperties[].name` of the first device, when present.
    pub trace_name: Option<String>,
    /// SMs / CUs (`numSms`), when present.
    pub trace_num_sms: Option<u32>,
    /// Compute capability, when present.
    pub trace_compute_capability: Option<String>,
    /// Devices listed in `deviceProperties`.
    pub trace_device_count: usize,
    /// Catalog id of the device used for the roofline (`None`: no roofline numbers).
    pub catalog_id: Option<String>,
    pub catalog_name: Option<String>,
    /// Its DRAM bandwidth, GB/s.
    pub peak_bw_gbs: Option<f64>,
    /// The whole entry the roofline numbers used (roofs, spec, sources), so renderers
    /// draw its roofs without resolving the device again. Not in the JSON, which names
    /// it by `catalog_id`.
    #[serde(skip)]
    pub spec: Option<DeviceSpec>,
}

/// The report of one trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceReport {
    pub schema_version: u32,
    pub device: TraceDevice,
    /// The time window the timeline and percent-of-total figures use.
    pub window: Window,
    pub timeline: Timeline,
    pub ops_summary: OpsSummary,
    /// Per-category roofline tables: table name (`GEMM`, `SDPA_fwd`, `CONV_fwd`,
    /// `Normalization`, `BinaryElementwise`, ..., `unmodelled`) → rows.
    pub categories: BTreeMap<String, Vec<OpRow>>,
    /// How much of the non-communication kernel time the work models cover, and the
    /// rest by op and reason.
    pub model_coverage: ops::ModelCoverage,
    pub kernels: Vec<KernelRow>,
    pub short_kernels: ShortKernels,
    pub findings: Vec<Finding>,
    /// What the reader tolerated and what the analysis could not do.
    pub warnings: Vec<TraceWarning>,
    /// JAX/XLA profiles only: XLA op summary, modules, steps, collectives, host threads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub xla: Option<super::xla::report::XlaReport>,

    // Where the time goes between the kernels (`super::gaps`, `super::inference`).
    /// GPU idle time by cause, per device and stream (HTA's definition).
    pub idle: IdleBreakdown,
    /// Launch latency and the launch queues.
    pub launch: LaunchStats,
    /// Blocking synchronisations and pageable copies.
    pub syncs: Syncs,
    /// CUDA/HIP graph replays.
    pub graphs: Graphs,
    /// The critical path of one window; `None` (and a warning) when it could not be
    /// computed.
    pub critical_path: Option<CriticalPath>,
    /// Time per `nn.Module`.
    pub modules: Modules,
    /// The allocator's memory timeline.
    pub memory: Memory,
    /// Inference engines: steps by phase, custom collectives.
    pub inference: Inference,
}

impl TraceReport {
    /// The whole analysis in one call: the catalog entry of the GPU the trace names
    /// ([`super::run::device_for_builtin`]; no roofline numbers when the trace names
    /// none the catalog knows) and the options for this kind of trace
    /// ([`TraceOptions::for_model`]).
    pub fn of(model: &TraceModel) -> TraceReport {
        let device = super::run::device_for_builtin(model).spec();
        analyze(model, device, &TraceOptions::for_model(model))
    }

    /// The `n` op rows with the most kernel time (sum over their calls), across every
    /// category table, the unmodelled one included, largest first; ties keep table
    /// order. Each row carries its FLOPs, bytes, achieved rates, bound and roofline
    /// attainment where the op has a work model and the report a device.
    pub fn top_ops(&self, n: usize) -> Vec<&OpRow> {
        let mut rows: Vec<&OpRow> = self.categories.values().flatten().collect();
        rows.sort_by(|a, b| b.kernel_time_us.sum.total_cmp(&a.kernel_time_us.sum));
        rows.truncate(n);
        rows
    }
}

/// Analyses one trace. `device` is the catalog entry for the roofline numbers (`None`:
/// tables without attainment, and a warning).
pub fn analyze(
    model: &TraceModel,
    device: Option<&DeviceSpec>,
    opts: &TraceOptions,
) -> TraceReport {
    // The critical path, the work models' tables, the summaries (after the timeline,
    // which they read), the gap analyses and the XLA report need the model alone: they
    // run as tasks on the thread pool, which balances them between its threads (a
    // panic in any is raised here). The two longest (the critical path, the tables)
    // start at once, beside the timeline. The pool's threads, not threads of their
    // own: each new thread would take a heap of its own, and the memory one task
    // frees would stay out of the others' reach (2,500 JAX copies: tens of MB of the
    // peak).
    let ((cp, modelled), (timeline, window, xla, (categories_of, summaries), gaps)) = rayon::join(
        || {
            rayon::join(
                || critical_path(model, &opts.critical_path),
                || Modelled::of(model, device, opts),
            )
        },
        || {
            let (timeline, window) = timeline(model, opts.include_unlinked);
            let window_start_ns = (window.start_us * 1e3).round() as i64;
            let ((summaries, gaps), xla) = rayon::join(
                || rayon::join(|| Summaries::of(model, opts, &timeline), || Gaps::of(model, opts)),
                || super::xla::report::xla_report(model, device, window_start_ns),
            );
            (timeline, window, xla, summaries, gaps)
        },
    );
    let Modelled { tables, model_coverage } = modelled;
    let Summaries { ops_summary, kernels, short_kernels } = summaries;
    // Data movement (`cat`, `index_select`) counts with the element-wise ops in chains of
    // unfused kernels: it also reads and writes device memory once per kernel, and a
    // compiler fuses it with its neighbours.
    let is_elementwise = |i: u32| {
        matches!(
            categories_of.category(i),
            ops::Category::Elementwise | ops::Category::DataMovement
        )
    };
    let mut findings = findings(&FindingsInput {
        model,
        timeline: &timeline,
        short: &short_kernels,
        tables: &tables,
        is_elementwise: &is_elementwise,
    });
    let Gaps { idle, launch, syncs, graphs, modules, memory, inference } = gaps;
    // The gap findings' `trace.gpu_idle` states the idle time with its causes.
    findings.retain(|f| f.id != "trace.gpu_idle");
    findings.extend(super::gaps::findings::gap_findings(&super::gaps::findings::GapInput {
        timeline: &timeline,
        idle: &idle,
        launch: &launch,
        syncs: &syncs,
        graphs: &graphs,
        framework: Framework::of(model),
        serving: inference.engine.is_some(),
    }));
    if model.xla.is_some() {
        for f in &mut findings {
            f.recommendation = jax_advice(&f.recommendation);
        }
    }
    if graphs.percent_of_gpu_time >= 50.0 {
        for f in findings.iter_mut().filter(|f| f.id == "trace.short_kernels") {
            f.recommendation = graphed_short_advice(graphs.percent_of_gpu_time);
        }
    }
    let in_buffers = command_buffer_pct(model);
    if in_buffers >= 50.0 {
        for f in findings
            .iter_mut()
            .filter(|f| matches!(f.id, "trace.short_kernels" | "trace.launch_bound"))
        {
            f.recommendation = command_buffer_advice(in_buffers);
        }
    }
    rank(&mut findings);
    let mut categories: BTreeMap<String, Vec<OpRow>> = BTreeMap::new();
    for t in tables {
        categories.entry(t.name).or_default().extend(t.rows);
    }
    let mut warnings = model.warnings.clone();
    let mut warn = |w: TraceWarning| {
        // The reader may have said it already (`no_gpu_events`).
        if !warnings.iter().any(|x| x.kind == w.kind) {
            warnings.push(w);
        }
    };
    if device.is_none() {
        warn(TraceWarning {
            kind: "no_device".to_string(),
            count: 1,
            example: format!(
                "no catalog device for {}; roofline columns are empty (pass --device)",
                model.devices.first().map_or("this trace", |d| d.name.as_str())
            ),
        });
    }
    if timeline.unlinked_excluded > 0 {
        warn(TraceWarning {
            kind: "unlinked_gpu_events_excluded".to_string(),
            count: timeline.unlinked_excluded,
            example: "GPU events with no launching runtime call are left out of the timeline \
                      (as TraceLens does by default)"
                .to_string(),
        });
    }
    let critical_path = match cp {
        Ok(c) => Some(c),
        Err(_) if model.ops.is_empty() && model.gpu.is_empty() => None,
        Err(e) => {
            warn(TraceWarning {
                kind: "no_critical_path".to_string(),
                count: 1,
                example: format!("the critical path was not computed: {e}"),
            });
            None
        }
    };
    if model.gpu.is_empty() {
        warn(TraceWarning {
            kind: "no_gpu_events".to_string(),
            count: 1,
            example: "the trace has no kernel, memcpy or memset events".to_string(),
        });
    }
    let first = model.devices.first();
    TraceReport {
        schema_version: SCHEMA_VERSION,
        device: TraceDevice {
            trace_name: first.map(|d| d.name.clone()),
            trace_num_sms: first.and_then(|d| d.num_sms),
            trace_compute_capability: first.and_then(|d| d.compute_capability.clone()),
            trace_device_count: model.devices.len(),
            catalog_id: device.map(|d| d.id.clone()),
            catalog_name: device.map(|d| d.name.clone()),
            peak_bw_gbs: device.map(|d| d.peak_bw_gbs),
            spec: device.cloned(),
        },
        window,
        timeline,
        ops_summary,
        categories,
        model_coverage,
        kernels,
        short_kernels,
        findings,
        warnings,
        xla,
        idle,
        launch,
        syncs,
        graphs,
        critical_path,
        modules,
        memory,
        inference,
    }
}

/// The analyses of the time between and around the kernels, and of the allocator and
/// the serving engine: each reads the model alone.
struct Gaps {
    idle: IdleBreakdown,
    launch: LaunchStats,
    syncs: Syncs,
    graphs: Graphs,
    modules: Modules,
    memory: Memory,
    inference: Inference,
}

impl Gaps {
    fn of(model: &TraceModel, opts: &TraceOptions) -> Gaps {
        // Two tasks of about the same length on a PyTorch training trace.
        let ((idle, launch, syncs, graphs), (modules, memory, inference)) = rayon::join(
            || {
                (
                    idle_breakdown(model, opts.idle_threshold_ns),
                    launch_stats(model),
                    syncs(model),
                    graphs(model),
                )
            },
            || (modules(model), memory(model), inference(model)),
        );
        Gaps { idle, launch, syncs, graphs, modules, memory, inference }
    }
}

/// Each op's category (GEMM, CONV, SDPA, ...), from the op's name or its first kernel,
/// worked out once per op: the summaries and the findings ask for it per launch.
struct OpCategories<'m> {
    model: &'m TraceModel,
    /// For an op captured into a CUDA/HIP graph, the first kernel a replay ran for it.
    replayed: std::collections::HashMap<u32, u32>,
    by_op: Vec<std::sync::OnceLock<ops::Category>>,
    memo: ops::CategoryMemo<'m>,
}

impl<'m> OpCategories<'m> {
    fn new(model: &'m TraceModel) -> Self {
        let mut replayed: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
        for (ev, op) in super::gaps::graphs::capture_map(model) {
            let first = replayed.entry(op).or_insert(ev);
            *first = (*first).min(ev);
        }
        OpCategories {
            model,
            replayed,
            by_op: vec![std::sync::OnceLock::new(); model.ops.len()],
            memo: ops::CategoryMemo::default(),
        }
    }

    /// The category of op `i` by its name and its first kernel.
    fn category(&self, i: u32) -> ops::Category {
        match self.by_op.get(i as usize) {
            Some(c) => *c.get_or_init(|| self.memo.categorize(self.model, i as usize)),
            None => self.memo.categorize(self.model, i as usize),
        }
    }

    /// The category's name for the summaries: an op replayed from a graph (it launched
    /// nothing itself) by the first kernel a replay ran for it.
    fn name(&self, i: u32) -> &'static str {
        let (model, by_op) = (self.model, self.category(i));
        let kernel = self.replayed.get(&i).and_then(|&e| model.gpu.get(e as usize));
        match (by_op, kernel, model.ops.get(i as usize)) {
            (ops::Category::Other, Some(k), Some(o)) if o.launched.is_empty() => {
                ops::categorize_op(&o.name, Some(&k.name)).as_str()
            }
            _ => by_op.as_str(),
        }
    }
}

/// The summaries of the ops and kernels.
struct Summaries {
    ops_summary: OpsSummary,
    kernels: Vec<KernelRow>,
    short_kernels: ShortKernels,
}

impl Summaries {
    /// The summaries, and the ops' categories they worked out (the findings read them).
    fn of<'m>(
        model: &'m TraceModel,
        opts: &TraceOptions,
        timeline: &Timeline,
    ) -> (OpCategories<'m>, Summaries) {
        let total_us = timeline.all.total.time_ms * 1e3;
        let categories = OpCategories::new(model);
        let category_name = |i: u32| categories.name(i);
        let ops_summary = ops_summary(model, &category_name);
        let kernels = kernel_summary(model, &category_name, total_us);
        let short_kernels =
            short_kernels(model, opts.short_kernel_threshold_us, opts.histogram_bins, total_us);
        (categories, Summaries { ops_summary, kernels, short_kernels })
    }
}

/// The tables of the ops with a work model, and the models' coverage.
struct Modelled {
    tables: Vec<CategoryTable>,
    model_coverage: ops::ModelCoverage,
}

impl Modelled {
    fn of(model: &TraceModel, device: Option<&DeviceSpec>, opts: &TraceOptions) -> Modelled {
        let ctx = super::inference::Context::with_config(model, opts.model_config.clone());
        // One model per distinct (op, arguments), shared by the tables and the coverage.
        let mut memo = ops::ModelMemo::new(model, &ctx);
        let tables = category_tables_memo(&mut memo, device);
        let model_coverage = ops::model_coverage_memo(&mut memo);
        Modelled { tables, model_coverage }
    }
}

/// A finding's advice in JAX's terms: the findings are written for PyTorch, whose
/// remedies (`torch.compile`, CUDA graphs, `.item()`) a JAX program does not have; XLA
/// fuses what one `jax.jit` compiles, runs a jitted step as one executable, and syncs
/// the host on `block_until_ready` / `device_get`.
/// The short-kernel advice where most of the GPU time already runs as graph replays:
/// capturing a graph is advice already taken (the replayed kernels have no per-kernel
/// launch call); what is left is the GPU's own gap between kernels and each kernel's
/// round trip of its tensors through memory.
fn graphed_short_advice(graph_pct: f64) -> String {
    format!(
        "{} of the GPU time already runs as CUDA/HIP graph replays, which remove the \
         per-kernel CPU launch; each small kernel still costs the GPU a gap before it \
         starts and a round trip of its tensors through memory: fuse small ops \
         (torch.compile) or batch work per kernel.",
        crate::units::pct(graph_pct)
    )
}

/// Percent of the kernel time of an XLA profile that ran from command buffers (0 for a
/// PyTorch trace).
fn command_buffer_pct(model: &TraceModel) -> f64 {
    let Some(x) = model.xla.as_deref() else { return 0.0 };
    let all: i64 =
        model.gpu.iter().filter(|e| e.kind == GpuKind::Kernel).map(|e| e.dur_ns.max(0)).sum();
    if all > 0 {
        (x.command_buffer_kernel_us * 1e3 / all as f64 * 100.0).min(100.0)
    } else {
        0.0
    }
}

fn command_buffer_advice(pct_in_buffers: f64) -> String {
    format!(
        "{} of the kernel time already runs from XLA command buffers (CUDA graphs), which \
         remove the per-kernel host launch; each small kernel still costs the GPU a gap \
         before it starts and a round trip of its tensors through memory: let XLA fuse more \
         (larger jitted functions, fewer custom calls between fusions) or give each kernel \
         more work (a larger batch per step).",
        crate::units::pct(pct_in_buffers)
    )
}

fn jax_advice(text: &str) -> String {
    [
        ("(torch.compile)", "(jit larger functions with jax.jit, so XLA fuses them)"),
        ("torch.compile", "jax.jit over larger functions"),
        (
            "replay the step as a CUDA/HIP graph",
            "jit the whole step so XLA runs it as one executable",
        ),
        ("a CUDA/HIP graph", "one jitted executable"),
        ("a CUDA graph", "one jitted executable"),
        ("(.item(), .cpu())", "(block_until_ready, jax.device_get, printing arrays)"),
    ]
    .iter()
    .fold(text.to_string(), |t, (from, to)| t.replace(from, to))
}

// The multi-rank part lives in `super::ranks`; these names stay importable from here.
pub use super::ranks::{cross_rank, CrossRank, RankRow};

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::device::Catalog;
    use crate::trace::model::{CpuOp, GpuEvent, RuntimeCall};

    /// One GEMM and two all-reduces on their own stream (shared with the rank tests).
    pub(crate) fn model(gemm_us: i64, nccl_us: i64) -> TraceModel {
        let k = |name: &str, ts: i64, dur: i64, stream: i64| GpuEvent {
            name: name.into(),
            ts_ns: ts * 1000,
            dur_ns: dur * 1000,
            stream,
            launcher: Some("cudaLaunchKernel".into()),
            op: Some(0),
            ..GpuEvent::default()
        };
        TraceModel {
            ops: vec![CpuOp { name: "aten::mm".into(), ..CpuOp::default() }],
            gpu: vec![
                k("gemm", 0, gemm_us, 7),
                k("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 0, nccl_us, 20),
                k("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 100, 10, 20),
            ],
            ..TraceModel::default()
        }
    }

    /// Two devices idle 80 of their 100 µs each: 160 µs of idle device time is 80% of
    /// their 200 µs of device time, not 160% of one window.
    #[test]
    fn findings_of_several_devices_stay_within_their_window() {
        let k = |dev: i64, ts: i64| GpuEvent {
            name: "k".into(),
            ts_ns: ts * 1000,
            dur_ns: 10_000,
            device: dev,
            stream: 7,
            launcher: Some("cudaLaunchKernel".into()),
            op: Some(0),
            ..GpuEvent::default()
        };
        let m = TraceModel {
            ops: vec![CpuOp { name: "aten::mm".into(), ..CpuOp::default() }],
            gpu: vec![k(0, 0), k(1, 0), k(0, 90), k(1, 90)],
            ..TraceModel::default()
        };
        let r = analyze(&m, None, &TraceOptions::default());
        assert_eq!(r.timeline.per_device.len(), 2);
        let idle = r.findings.iter().find(|f| f.id == "trace.gpu_idle").unwrap();
        assert_eq!(idle.time_at_stake_us(), Some(160.0));
        assert_eq!(idle.share_pct(), Some(80.0));
        assert!(r.findings.iter().all(|f| f.share_pct().is_none_or(|p| p <= 100.0)));
    }

    /// A step replayed as one CUDA graph (the capture outside the trace): 40 kernels of
    /// 2 µs, one every 3 µs, all from `cudaGraphLaunch`. The short-kernel finding does not
    /// advise capturing a graph.
    #[test]
    fn short_kernels_of_a_graph_replay_are_not_told_to_capture_a_graph() {
        let runtime = vec![RuntimeCall {
            name: "cudaGraphLaunch".into(),
            ts_ns: 0,
            dur_ns: 5_000,
            ..RuntimeCall::default()
        }];
        let gpu = (0..40)
            .map(|i| GpuEvent {
                name: format!("k{}", i % 4).into(),
                ts_ns: 10_000 + i * 3_000,
                dur_ns: 2_000,
                device: 0,
                stream: 7,
                runtime: Some(0),
                launcher: Some("cudaGraphLaunch".into()),
                ..GpuEvent::default()
            })
            .collect();
        let m = TraceModel { gpu, runtime, ..TraceModel::default() };
        let r = analyze(&m, None, &TraceOptions::default());
        assert_eq!(r.graphs.percent_of_gpu_time, 100.0);
        let f = r.findings.iter().find(|f| f.id == "trace.short_kernels").unwrap();
        let advice = &f.recommendation;
        assert!(advice.contains("already runs as CUDA/HIP graph replays"), "{advice}");
        assert!(!advice.contains("capture"), "{advice}");
    }

    /// A JAX profile's findings give JAX's remedies, not PyTorch's.
    #[test]
    fn jax_advice_names_jit_not_torch_compile() {
        let a =
            jax_advice("fuse small ops (torch.compile), or replay the step as a CUDA/HIP graph");
        assert!(!a.contains("torch") && !a.contains("CUDA/HIP graph"), "{a}");
        assert!(a.contains("jax.jit"), "{a}");
    }

    #[test]
    fn analyze_assembles_every_section() {
        let cat = Catalog::builtin();
        let r = analyze(&model(60, 80), cat.lookup("h100-sxm").ok(), &TraceOptions::default());
        assert_eq!(r.schema_version, SCHEMA_VERSION);
        assert_eq!(r.device.catalog_id.as_deref(), Some("h100-sxm"));
        // Window [0, 110) µs; comm [0,80) ∪ [100,110) = 90 µs, exposed [60,80) ∪ [100,110).
        assert_eq!(r.window.duration_ms, 0.110);
        assert_eq!(r.timeline.all.communication.time_ms, 0.090);
        assert_eq!(r.timeline.all.exposed_communication.time_ms, 0.030);
        // NCCL kernels count at the op that launched them: [0,60) ∪ [0,80) ∪ [100,110).
        assert_eq!(r.ops_summary.total_direct_kernel_time_ms, 0.090);
        // The work models cover the GEMM's 60 µs; the NCCL kernels are left out.
        assert_eq!(r.model_coverage.kernel_time_us, 60.0);
        assert_eq!(r.kernels.len(), 2);
        assert!(r.warnings.iter().all(|w| w.kind != "no_device"));
        let r = analyze(&TraceModel::default(), None, &TraceOptions::default());
        let kinds: Vec<&str> = r.warnings.iter().map(|w| w.kind.as_str()).collect();
        assert_eq!(kinds, vec!["no_device", "no_gpu_events"]);
    }
}

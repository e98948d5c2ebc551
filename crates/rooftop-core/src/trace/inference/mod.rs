//! Inference traces (vLLM, SGLang; eager and graph-replayed) read for what they are.
//!
//! - [`steps`]: engine step annotations → prefill / decode / mixed steps and their sums;
//! - [`moe`]: MoE layers as grouped GEMMs (FLOPs, bytes, roofline) from their arguments
//!   and the fused-experts ops they call;
//! - [`attention`]: paged attention with the step's key lengths;
//! - [`quant`]: FP8/FP4 activation quantisation;
//! - [`comm`]: custom all-reduce kernels (symmetric memory, vLLM/SGLang custom and quick
//!   all-reduce), counted as communication by [`super::ops::is_comm_kernel`].
//!
//! The models land in the per-category roofline tables (`MoE`, `InferenceAttention`,
//! `Quant`) through [`Context::model`]; this module's section summarises the engine, its
//! steps by phase and its custom collectives.

pub mod attention;
pub mod comm;
pub mod config;
pub mod moe;
pub mod quant;
pub mod steps;

use super::gaps::{is_graph_launch, Dist};
use super::model::{OpArgs, TraceModel};
use super::ops::{OpModel, OpModelError};
use super::timeline::{length, merge};
use crate::model::ModelConfig;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use steps::{parse_step, Phase, StepInfo};

/// Whether `name` could be an inference-engine op (a cheap test before the exact ones:
/// their names start with `vllm::`, `sglang::`, `sgl_kernel::`, `_C::`, `_rocm_C::`).
fn engine_prefix(name: &str) -> bool {
    matches!(name.as_bytes().first(), Some(b'v' | b's' | b'_'))
        && (name.starts_with("vllm::")
            || name.starts_with("sglang::")
            || name.starts_with("sgl_kernel::")
            || name.starts_with("_C::")
            || name.starts_with("_rocm_C::"))
}

/// The roofline table of an inference op this module models (`None`: not one).
pub fn table_of(name: &str) -> Option<super::ops::Table> {
    use super::ops::Table;
    if !engine_prefix(name) {
        return None;
    }
    if moe::is_fused_experts(name) || moe::is_moe_layer(name) {
        Some(Table::Moe)
    } else if attention::is_paged_attention(name) {
        Some(Table::InferenceAttention)
    } else if quant::is_quant(name) {
        Some(Table::Quant)
    } else {
        None
    }
}

/// Context-free models of inference ops (`None`: not an op of this module).
pub(crate) fn model_args(name: &str, args: &OpArgs) -> Option<Result<OpModel, String>> {
    if !engine_prefix(name) {
        return None;
    }
    if moe::is_fused_experts(name) {
        return Some(moe::fused_shape(args).map(|s| moe::moe_model(&s)));
    }
    if quant::is_quant(name) {
        return Some(quant::quant_model(name, args));
    }
    if moe::is_moe_layer(name) {
        return Some(Err(format!("`{name}` is modelled from the ops it calls")));
    }
    if attention::is_paged_attention(name) {
        return Some(attention::attention_model(name, args, None));
    }
    None
}

/// Whether an op's model depends on the trace around it (its descendants or its step),
/// so that calls with equal arguments can differ.
pub fn context_dependent(name: &str) -> bool {
    engine_prefix(name) && (moe::is_moe_layer(name) || attention::is_paged_attention(name))
}

/// What the models need from the whole trace: the steps, by start time, and the model
/// config (`--model-config`) with the parallel degree the trace's shapes imply.
#[derive(Debug, Clone, Default)]
pub struct Context {
    steps: Vec<(i64, i64, StepInfo)>,
    config: Option<ConfigContext>,
    /// The backward passes' parameters, for optimizer ops recorded without their lists.
    grads: super::ops::optimizer::GradRuns,
}

/// A model config and what the trace says about how it was split.
#[derive(Debug, Clone)]
struct ConfigContext {
    config: Arc<ModelConfig>,
    /// Tensor (or expert) parallel degree, or why it is not known.
    parallel: Result<u64, String>,
}

impl Context {
    pub fn new(model: &TraceModel) -> Context {
        let mut steps: Vec<(i64, i64, StepInfo)> = model
            .annotations
            .iter()
            .filter(|a| !a.on_gpu)
            .filter_map(|a| parse_step(&a.name).map(|s| (a.ts_ns, a.ts_ns + a.dur_ns, s)))
            .collect();
        steps.sort_by_key(|s| s.0);
        Context { steps, config: None, grads: super::ops::optimizer::GradRuns::new(model) }
    }

    /// With a model config (`--model-config`): MoE layers whose expert weights are not in
    /// the trace, and attention ops with flattened heads, get their sizes from it.
    pub fn with_config(model: &TraceModel, config: Option<Arc<ModelConfig>>) -> Context {
        let mut c = Context::new(model);
        c.config = config.map(|config| {
            let parallel = config::parallel_degree(model, &config);
            ConfigContext { config, parallel }
        });
        c
    }

    /// The step whose annotation contains `ts` (the latest starting one).
    pub fn step_at(&self, ts: i64) -> Option<&StepInfo> {
        let k = self.steps.partition_point(|s| s.0 <= ts);
        self.steps[..k].iter().rev().find(|s| s.1 >= ts).map(|s| &s.2)
    }

    /// The index of the step whose annotation contains `ts` (see [`Context::step_at`]).
    pub fn step_index_at(&self, ts: i64) -> Option<usize> {
        let k = self.steps.partition_point(|s| s.0 <= ts);
        self.steps[..k].iter().rposition(|s| s.1 >= ts)
    }

    /// The model of op `op` when it is an inference op whose model needs the trace
    /// around it; `None` otherwise (use [`super::ops::model_op`]).
    pub fn model(&self, model: &TraceModel, op: usize) -> Option<Result<OpModel, OpModelError>> {
        let ts = model.ops.get(op)?.ts_ns;
        self.model_at(model, op, ts)
    }

    /// [`Context::model`] with the step in progress at `ts` rather than at the op's
    /// start: a CUDA-graph replay runs the ops of its capture in the replay's step.
    pub fn model_at(
        &self,
        model: &TraceModel,
        op: usize,
        ts: i64,
    ) -> Option<Result<OpModel, OpModelError>> {
        let o = model.ops.get(op)?;
        if let Some(r) = super::ops::optimizer::recovered(model, op, &self.grads) {
            return Some(r);
        }
        if !engine_prefix(&o.name) {
            return None;
        }
        let bad = |reason: String| OpModelError::BadArgs { op: o.name.to_string(), reason };
        if moe::is_moe_layer(&o.name) {
            let r = match (moe::layer_shape(model, op), &self.config) {
                (Ok(s), _) => Ok(moe::moe_model(&s)),
                (Err(_), Some(c)) => config::moe(model, op, &c.config, &c.parallel),
                (Err(e), None) => Err(format!("{e}; pass --model-config config.json")),
            };
            return Some(r.map_err(bad));
        }
        if attention::is_paged_attention(&o.name) {
            let step = self.step_at(ts);
            let args = match &self.config {
                Some(c) => config::unflatten_attention(&o.name, &o.args, &c.config),
                None => None,
            };
            let args = args.as_ref().unwrap_or(&o.args);
            return Some(attention::attention_model(&o.name, args, step).map_err(bad));
        }
        None
    }
}

/// The steps of one phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseSummary {
    pub phase: Phase,
    pub steps: u64,
    /// Step annotation durations (CPU wall time of the step).
    pub wall: Dist,
    /// Mean union of the GPU events launched during a step, µs.
    pub mean_gpu_busy_us: f64,
    /// Tokens computed (Σ query lengths) over the steps.
    pub tokens: u64,
    pub requests: u64,
    /// Percent of the phase's GPU event time replayed from CUDA/HIP graphs.
    pub graphed_percent: f64,
}

/// Custom all-reduce kernels of one name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommKernel {
    pub name: String,
    pub count: u64,
    pub total_us: f64,
}

/// The inference section of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Inference {
    /// `vLLM`, `SGLang`, or `None` when the trace shows neither.
    pub engine: Option<String>,
    /// The step annotation format, when steps were found.
    pub step_format: Option<String>,
    pub phases: Vec<PhaseSummary>,
    /// Custom all-reduce kernels, counted as communication in the timeline.
    pub custom_allreduce_kernels: u64,
    pub custom_allreduce_us: f64,
    pub custom_allreduce: Vec<CommKernel>,
    /// MoE layer calls and their subtree GPU time, µs (rows in the `MoE` table).
    pub moe_calls: u64,
    /// Quantisation op calls (rows in the `Quant` table).
    pub quant_calls: u64,
    /// Paged-attention calls (rows in the `InferenceAttention` table).
    pub attention_calls: u64,
}

/// The inference section of `model`.
pub fn inference(model: &TraceModel) -> Inference {
    let mut out = Inference::default();
    let (mut vllm, mut sglang) = (0u64, 0u64);
    for o in model.ops.iter().filter(|o| engine_prefix(&o.name)) {
        if o.name.starts_with("vllm::") || o.name.starts_with("_C::") {
            vllm += 1;
        } else if o.name.starts_with("sglang::") || o.name.starts_with("sgl_kernel::") {
            sglang += 1;
        }
        out.moe_calls += u64::from(moe::is_moe_layer(&o.name));
        out.quant_calls += u64::from(quant::is_quant(&o.name));
        out.attention_calls += u64::from(attention::is_paged_attention(&o.name));
    }
    let ctx = Context::new(model);
    if let Some(s) = ctx.steps.first() {
        out.step_format = Some(s.2.format.to_string());
        if s.2.format.starts_with("vllm") {
            vllm += 1;
        } else {
            sglang += 1;
        }
    }
    out.engine = match (vllm, sglang) {
        (0, 0) => None,
        (v, s) if v >= s => Some("vLLM".to_string()),
        _ => Some("SGLang".to_string()),
    };
    // A custom all-reduce is a communication kernel: the per-name memo of the
    // categories rejects the others without scanning each launch's name. The
    // communication kernels are summed per shared copy of their name (by its address:
    // distinct live copies have distinct addresses), then each distinct name is scanned
    // once (NCCL's kernel names hold `educe`, which the scan looks for first).
    let mut per_copy: foldhash::HashMap<usize, (&str, u64, i64)> = foldhash::HashMap::default();
    for g in model.gpu.iter().filter(|g| crate::trace::ops::is_comm_kernel_shared(&g.name)) {
        let e = per_copy.entry(g.name.as_ptr() as usize).or_insert((g.name.as_ref(), 0, 0));
        e.1 += 1;
        e.2 += g.dur_ns;
    }
    let mut comm: BTreeMap<&str, (u64, i64)> = BTreeMap::new();
    for &(name, n, ns) in per_copy.values().filter(|(name, ..)| comm::is_custom_allreduce(name)) {
        let e = comm.entry(name).or_default();
        e.0 += n;
        e.1 += ns;
    }
    out.custom_allreduce_kernels = comm.values().map(|v| v.0).sum();
    out.custom_allreduce_us = comm.values().map(|v| v.1).sum::<i64>() as f64 / 1e3;
    let mut ck: Vec<CommKernel> = comm
        .into_iter()
        .map(|(n, (c, ns))| CommKernel { name: n.to_string(), count: c, total_us: ns as f64 / 1e3 })
        .collect();
    ck.sort_by(|a, b| b.total_us.total_cmp(&a.total_us));
    out.custom_allreduce = ck;
    out.phases = phases(model, &ctx);
    out
}

/// Sums over the steps of one phase.
struct Acc {
    walls: Vec<i64>,
    busy: i64,
    tokens: u64,
    requests: u64,
    gpu: i64,
    graphed: i64,
}

/// GPU work per step, summarised by phase.
fn phases(model: &TraceModel, ctx: &Context) -> Vec<PhaseSummary> {
    if ctx.steps.is_empty() {
        return Vec::new();
    }
    // GPU events by launch time.
    let mut launches: Vec<(i64, u32)> = model
        .gpu
        .iter()
        .enumerate()
        .filter_map(|(i, g)| {
            let r = model.runtime.get(g.runtime? as usize)?;
            Some((r.ts_ns, i as u32))
        })
        .collect();
    launches.sort_unstable();
    let mut acc: BTreeMap<Phase, Acc> = BTreeMap::new();
    for (s, e, info) in &ctx.steps {
        let a = acc.entry(info.phase()).or_insert(Acc {
            walls: Vec::new(),
            busy: 0,
            tokens: 0,
            requests: 0,
            gpu: 0,
            graphed: 0,
        });
        a.walls.push(e - s);
        a.tokens += info.tokens();
        a.requests += info.prefill.requests + info.decode.requests;
        let lo = launches.partition_point(|l| l.0 < *s);
        let hi = launches.partition_point(|l| l.0 <= *e);
        let mut iv: Vec<(i64, i64)> = Vec::with_capacity(hi - lo);
        for &(_, gi) in &launches[lo..hi] {
            let g = &model.gpu[gi as usize];
            iv.push((g.ts_ns, g.ts_ns + g.dur_ns));
            a.gpu += g.dur_ns;
            let graphed = g
                .runtime
                .and_then(|r| model.runtime.get(r as usize))
                .is_some_and(|r| is_graph_launch(&r.name));
            if graphed {
                a.graphed += g.dur_ns;
            }
        }
        merge(&mut iv);
        a.busy += length(&iv);
    }
    acc.into_iter()
        .map(|(phase, mut a)| {
            let n = a.walls.len() as u64;
            PhaseSummary {
                phase,
                steps: n,
                wall: Dist::of_ns(&mut a.walls),
                mean_gpu_busy_us: a.busy as f64 / n.max(1) as f64 / 1e3,
                tokens: a.tokens,
                requests: a.requests,
                graphed_percent: if a.gpu > 0 {
                    a.graphed as f64 / a.gpu as f64 * 100.0
                } else {
                    0.0
                },
            }
        })
        .collect()
}

//! The step's budget on a device: each op's roofline floor ([`crate::roofline`]), the
//! step's floor (the sum: kernels run one after another), tokens/s or time to first
//! token, the bandwidth a target rate needs, and what each fusion saves.
//!
//! Fusions, each measured against the op list of [`super::step`] (one kernel per op,
//! dequantization already fused), on disjoint groups of ops:
//! - dequantization fused into the matmul: the unfused alternative is a kernel writing
//!   the K×N weights in the activation precision and a dense matmul reading them back
//!   ([`QuantGemmSpec::dequant_fusion`](crate::ops::quant::QuantGemmSpec::dequant_fusion), minimal counting);
//! - residual add + the RMSNorm after it: the norm stops re-reading the sum (T·H
//!   elements per pair; 2·L pairs: each layer's two adds, the last feeding the final norm);
//! - Q, K and V as one GEMM: the activations are read once instead of three times;
//! - gate and up as one GEMM, and with SiLU·mul in its epilogue: the activations read
//!   once, and the 2·T·I gate/up outputs neither written nor read back.
//!
//! A fused kernel's floor is `max(Σ compute floors of its parts, (Σ bytes − saved) / BW)`.

use super::config::{ModelConfig, ParamCount};
use super::step::{
    build, expected_active_experts, kv_cache_bytes, weight_storage_bytes, Phase, Role, StepError,
    StepOp, StepOptions, WeightScheme,
};
use crate::device::DeviceSpec;
use crate::ops::gemm::GemmSpec;
use crate::roofline::{roofline, Bound, RooflineError};
use crate::units::{ExecUnit, Precision};
use serde::Serialize;

/// Why a budget could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error(transparent)]
    Step(#[from] StepError),
    #[error("{op}: {source}")]
    Roofline {
        op: String,
        #[source]
        source: RooflineError,
    },
    #[error("{0}")]
    Invalid(String),
}

/// The compute roof an op was held to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoofUsed {
    pub precision: Precision,
    pub unit: ExecUnit,
    pub tflops: f64,
    /// Set when the roof is a fallback.
    pub note: Option<String>,
}

/// One op with its floor on the device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpBudget {
    #[serde(flatten)]
    pub op: StepOp,
    /// Floor of one run: max(compute, memory).
    pub floor_us: f64,
    pub compute_floor_us: f64,
    pub memory_floor_us: f64,
    pub bound: Bound,
    pub roof: Option<RoofUsed>,
    /// `count × floor_us`.
    pub step_floor_us: f64,
    /// Share of the step's floor.
    pub share_pct: f64,
}

/// Sums over the step (every op times its count).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Totals {
    pub flops: f64,
    pub bytes_read: f64,
    pub bytes_written: f64,
    pub bytes: f64,
    /// Weight bytes read (projections, router, LM head).
    pub weight_bytes: f64,
    /// K and V bytes the attention reads.
    pub kv_read_bytes: f64,
    /// Σ per-op floors.
    pub floor_us: f64,
    /// Σ per-op compute floors.
    pub compute_floor_us: f64,
    /// Σ per-op memory floors (= bytes / bandwidth).
    pub memory_floor_us: f64,
    /// Share of the floor spent in memory-bound ops.
    pub memory_bound_pct: f64,
}

/// What the floors mean for throughput.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Throughput {
    /// Tokens one step produces (decode: batch) or processes (prefill: batch × tokens).
    pub tokens_per_step: u64,
    /// Step floor with the ops as listed.
    pub step_floor_us: f64,
    /// Step floor with every fusion of [`ModelReport::fusions`].
    pub fused_step_floor_us: f64,
    /// Decode: upper bound on tokens/s over all sequences, ops as listed.
    pub tokens_per_s: Option<f64>,
    /// Decode: upper bound with every fusion.
    pub fused_tokens_per_s: Option<f64>,
    /// Decode: `batch × bandwidth / weights_only_bytes`: the back-of-envelope bound that
    /// reads every weight once and nothing else.
    pub weights_only_tokens_per_s: Option<f64>,
    /// Prefill: time-to-first-token floor, ops as listed.
    pub ttft_floor_us: Option<f64>,
    /// Prefill: with every fusion.
    pub fused_ttft_floor_us: Option<f64>,
    /// Storage of all weights (active experts only for a MoE at one token).
    pub weight_storage_bytes: f64,
    /// Storage of every weight, all experts included.
    pub total_weight_storage_bytes: f64,
    /// Storage of the weights the step uses: all of them for a dense model, the expected
    /// active experts' for a mixture of experts.
    pub weights_only_bytes: f64,
    /// KV cache after the step.
    pub kv_cache_bytes: f64,
}

/// What one fusion saves per step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fusion {
    pub name: String,
    /// Ops it merges and why it saves traffic.
    pub description: String,
    /// DRAM bytes per step the fusion avoids.
    pub bytes_saved: f64,
    /// Step floor without this fusion (the others as in the op list).
    pub floor_without_us: f64,
    /// Step floor with it.
    pub floor_with_us: f64,
    /// Decode: tokens/s without and with.
    pub tokens_per_s_without: Option<f64>,
    pub tokens_per_s_with: Option<f64>,
    /// Dequant fusion: unfused / fused traffic of the quantized projections.
    pub traffic_ratio: Option<f64>,
    pub assumptions: Vec<String>,
}

/// The budget for a target rate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Target {
    /// Tokens/s per sequence asked for (decode: generated; prefill: prompt tokens).
    pub tokens_per_s: f64,
    /// Steps per second that takes.
    pub steps_per_s: f64,
    /// DRAM bandwidth the listed step needs at that rate.
    pub bandwidth_needed_gbs: f64,
    /// With every fusion.
    pub fused_bandwidth_needed_gbs: f64,
    /// `fused_bandwidth_needed_gbs` / device bandwidth.
    pub bandwidth_pct_of_peak: f64,
    /// FLOP/s the step needs at that rate.
    pub flops_needed: f64,
    /// Fraction of each second the compute units are busy at their peaks.
    pub compute_busy_pct: f64,
    /// Whether the fused step's floor allows the rate on this device.
    pub reachable: bool,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelReport {
    pub model: ModelConfig,
    pub params: ParamCount,
    pub device_id: String,
    pub device_name: String,
    pub peak_bw_gbs: f64,
    pub options: StepOptions,
    /// `--weights` as a label (`bf16`, `Q4_0`, `4-bit g128`).
    pub weights_label: String,
    pub act_dtype: Precision,
    pub ops: Vec<OpBudget>,
    pub totals: Totals,
    pub throughput: Throughput,
    pub fusions: Vec<Fusion>,
    pub target: Option<Target>,
    /// Every assumption the numbers rest on.
    pub assumptions: Vec<String>,
}

struct Ctx<'a> {
    device: &'a DeviceSpec,
    bw: f64,
}

impl Ctx<'_> {
    fn floor(&self, op: &StepOp) -> Result<OpBudget, ModelError> {
        let r = roofline(&op.work, self.device, None, &[])
            .map_err(|source| ModelError::Roofline { op: op.name.clone(), source })?;
        Ok(OpBudget {
            op: op.clone(),
            floor_us: r.floor_time_us,
            compute_floor_us: r.compute_floor_us,
            memory_floor_us: r.memory_floor_us,
            bound: r.bound,
            roof: r.compute_roof.map(|c| RoofUsed {
                precision: c.precision,
                unit: c.unit,
                tflops: c.tflops,
                note: c.note,
            }),
            step_floor_us: r.floor_time_us * op.count as f64,
            share_pct: 0.0,
        })
    }

    /// Floor of one kernel doing the work of `parts`, moving `saved` fewer bytes.
    fn merged_us(&self, parts: &[&OpBudget], saved: f64) -> f64 {
        let compute: f64 = parts.iter().map(|p| p.compute_floor_us).sum();
        let bytes: f64 = parts.iter().map(|p| p.op.work.bytes()).sum::<f64>() - saved;
        compute.max(bytes / self.bw * 1e6)
    }
}

/// Input bytes per element of a projection in `s`.
fn gemm_in_bytes(s: WeightScheme) -> f64 {
    match s {
        WeightScheme::Dense(p) | WeightScheme::W8A8(p) => p.bytes(),
        WeightScheme::Quant(_) => s.act_dtype().bytes(),
    }
}

/// (floor saved per step, bytes saved per step) of merging the ops with `roles` into
/// one kernel that moves `saved(run)` fewer bytes per run.
fn group_saving(ctx: &Ctx<'_>, ops: &[OpBudget], roles: &[Role], saved: f64) -> Option<(f64, f64)> {
    let parts: Vec<&OpBudget> =
        roles.iter().map(|r| ops.iter().find(|o| o.op.role == *r)).collect::<Option<_>>()?;
    let count = parts[0].op.count as f64;
    let separate: f64 = parts.iter().map(|p| p.floor_us).sum();
    let merged = ctx.merged_us(&parts, saved);
    Some((count * (separate - merged), count * saved))
}

/// Dequantization fused into the matmul: the fusion, with the time and bytes the unfused
/// version adds (`None` without quantized ops).
fn dequant_fusion(
    opts: &StepOptions,
    ctx: &Ctx<'_>,
    ops: &[OpBudget],
    floor_us: f64,
    rate: &dyn Fn(f64) -> Option<f64>,
) -> Result<Option<(Fusion, f64, f64)>, ModelError> {
    let (act, device) = (opts.weights.act_dtype(), ctx.device);
    let quant_ops: Vec<&OpBudget> = ops.iter().filter(|o| o.op.quant.is_some()).collect();
    if quant_ops.is_empty() {
        return Ok(None);
    }

    let (mut extra_us, mut extra_bytes, mut unfused_total, mut fused_total) = (0.0, 0.0, 0.0, 0.0);
    for o in &quant_ops {
        let Some(spec) = o.op.quant else { continue };
        let f = spec
            .dequant_fusion(act)
            .map_err(|source| ModelError::Step(StepError::Op { op: o.op.name.clone(), source }))?;
        let per_matrix = f.minimal.unfused_bytes - f.minimal.fused_bytes;
        let extra = o.op.weight_matrices * per_matrix;
        // Kernel 1: read packed weights, write them in `act`; kernel 2: dense matmul.
        let dq_bytes =
            o.op.weight_bytes + o.op.weight_matrices * (spec.k * spec.n) as f64 * act.bytes();
        let dq_us = dq_bytes / ctx.bw * 1e6;
        let mm_bytes = o.op.work.bytes() + extra - dq_bytes;
        let dense = GemmSpec::new(spec.m, spec.n, spec.k, act)
            .work()
            .map_err(|source| ModelError::Step(StepError::Op { op: o.op.name.clone(), source }))?;
        let dense_r = roofline(&dense, device, None, &[])
            .map_err(|source| ModelError::Roofline { op: o.op.name.clone(), source })?;
        let mm_us = dense_r.compute_floor_us.max(mm_bytes / ctx.bw * 1e6);
        let c = o.op.count as f64;
        extra_us += c * (dq_us + mm_us - o.floor_us);
        extra_bytes += c * extra;
        unfused_total += c * (o.op.work.bytes() + extra);
        fused_total += c * o.op.work.bytes();
    }
    let fusion = Fusion {
        name: "dequant fused into matmul".to_string(),
        description: "unfused: a kernel writes the weights in the activation precision and \
                      a dense matmul reads them back; fused (the op list): the matmul reads \
                      the packed weights"
            .to_string(),
        bytes_saved: extra_bytes,
        floor_without_us: floor_us + extra_us,
        floor_with_us: floor_us,
        tokens_per_s_without: rate(floor_us + extra_us),
        tokens_per_s_with: rate(floor_us),
        traffic_ratio: Some(unfused_total / fused_total),
        assumptions: vec![
            format!(
                "dequantized weights are written and read back in {act} (K*N*{} B each way) \
                 and do not stay in cache",
                act.bytes()
            ),
            "both versions read the activations and write the output once \
             (QuantGemmSpec::dequant_fusion, minimal counting)"
                .to_string(),
            "traffic ratio = unfused / fused bytes of the quantized projections; the \
             \"~17x\" in circulation counts Q4_0 at 2 bits/weight, fp32 dequantized weights \
             and a fused kernel reading the weights twice (docs/reference/formulas.md)"
                .to_string(),
        ],
    };
    Ok(Some((fusion, extra_us, extra_bytes)))
}

/// The fusions the step allows and what they save together.
struct Fusions {
    list: Vec<Fusion>,
    /// Floor time and bytes saved by all of them together.
    saved_us: f64,
    saved_bytes: f64,
}

/// The fusions of the step's ops (`floor_us`: the unfused step's floor; `t`: tokens per
/// step): dequantization into the matmul, residual add + RMSNorm, Q/K/V as one GEMM,
/// gate + up with SiLU·mul in the epilogue, and all of them together.
// H is the name the formulas use.
#[allow(clippy::many_single_char_names)]
fn fusions(
    cfg: &ModelConfig,
    opts: &StepOptions,
    ctx: &Ctx<'_>,
    ops: &[OpBudget],
    floor_us: f64,
    t: u64,
) -> Result<Fusions, ModelError> {
    let act = opts.weights.act_dtype();
    let rate = |floor: f64| match opts.phase {
        Phase::Decode => Some(opts.batch as f64 * 1e6 / floor),
        Phase::Prefill => None,
    };
    let (h, a_in) = (cfg.hidden_size as f64, gemm_in_bytes(opts.weights));
    let tf = t as f64;
    let mut fusions = Vec::new();
    let mut all_saved_us = 0.0;
    let mut all_saved_bytes = 0.0;
    let mut unfused_extra_us = 0.0;
    let mut unfused_extra_bytes = 0.0;

    // Dequantization fused into the matmul.
    if let Some((f, extra_us, extra_bytes)) = dequant_fusion(opts, ctx, ops, floor_us, &rate)? {
        unfused_extra_us = extra_us;
        unfused_extra_bytes = extra_bytes;
        fusions.push(f);
    }

    // Residual add + RMSNorm.
    {
        let pairs: [(Role, Role, f64); 3] = [
            (Role::AttnResidual, Role::MlpNorm, cfg.num_layers as f64),
            (Role::MlpResidual, Role::AttnNorm, (cfg.num_layers - 1) as f64),
            (Role::MlpResidual, Role::FinalNorm, 1.0),
        ];
        let saved_run = tf * h * act.bytes();
        let (mut us, mut bytes) = (0.0, 0.0);
        for (add, norm, n) in pairs {
            let find = |r: Role| ops.iter().find(|o| o.op.role == r);
            if let (Some(a), Some(b)) = (find(add), find(norm)) {
                let merged = ctx.merged_us(&[a, b], saved_run);
                us += n * (a.floor_us + b.floor_us - merged);
                bytes += n * saved_run;
            }
        }
        all_saved_us += us;
        all_saved_bytes += bytes;
        fusions.push(Fusion {
            name: "residual add + RMSNorm".to_string(),
            description: format!(
                "one kernel adds the residual and normalizes the sum: the norm no longer reads \
                 the T*H sum back ({} pairs per step)",
                2 * cfg.num_layers
            ),
            bytes_saved: bytes,
            floor_without_us: floor_us,
            floor_with_us: floor_us - us,
            tokens_per_s_without: rate(floor_us),
            tokens_per_s_with: rate(floor_us - us),
            traffic_ratio: None,
            assumptions: vec![
                "the fused kernel still writes both the new residual stream and the normalized \
                 rows"
                    .to_string(),
            ],
        });
    }

    // Q, K, V as one GEMM.
    if let Some((us, bytes)) =
        group_saving(ctx, ops, &[Role::QProj, Role::KProj, Role::VProj], 2.0 * tf * h * a_in)
    {
        all_saved_us += us;
        all_saved_bytes += bytes;
        fusions.push(Fusion {
            name: "QKV as one GEMM".to_string(),
            description: "one GEMM with N = (Hq + 2*Hkv)*D: the T*H activations are read once \
                          instead of three times"
                .to_string(),
            bytes_saved: bytes,
            floor_without_us: floor_us,
            floor_with_us: floor_us - us,
            tokens_per_s_without: rate(floor_us),
            tokens_per_s_with: rate(floor_us - us),
            traffic_ratio: None,
            assumptions: vec![
                "weights and outputs are unchanged; launch overhead not counted".to_string()
            ],
        });
    }

    // Gate + up, and with SiLU·mul in the epilogue (the latter subsumes the former).
    let mlp_groups: Vec<([Role; 3], f64, f64)> = {
        let mut g = Vec::new();
        match cfg.moe {
            None => {
                g.push(([Role::Gate, Role::Up, Role::SiluMul], tf, cfg.intermediate_size as f64));
            }
            Some(m) => {
                let k = m.experts_per_token as f64;
                g.push((
                    [Role::ExpertGate, Role::ExpertUp, Role::ExpertSiluMul],
                    tf * k,
                    m.expert_intermediate_size as f64,
                ));
                if let Some(s) = m.shared_expert_intermediate_size {
                    g.push(([Role::SharedGate, Role::SharedUp, Role::SharedSiluMul], tf, s as f64));
                }
            }
        }
        g
    };
    let (mut gu_us, mut gu_bytes, mut gus_us, mut gus_bytes) = (0.0, 0.0, 0.0, 0.0);
    for (roles, rows, width) in &mlp_groups {
        if let Some((us, bytes)) = group_saving(ctx, ops, &roles[..2], rows * h * a_in) {
            gu_us += us;
            gu_bytes += bytes;
        }
        let saved = rows * h * a_in + 4.0 * rows * width * act.bytes();
        if let Some((us, bytes)) = group_saving(ctx, ops, roles, saved) {
            gus_us += us;
            gus_bytes += bytes;
        }
    }
    fusions.push(Fusion {
        name: "gate+up as one GEMM".to_string(),
        description: "one GEMM with N = 2*I: the activations are read once instead of twice"
            .to_string(),
        bytes_saved: gu_bytes,
        floor_without_us: floor_us,
        floor_with_us: floor_us - gu_us,
        tokens_per_s_without: rate(floor_us),
        tokens_per_s_with: rate(floor_us - gu_us),
        traffic_ratio: None,
        assumptions: vec!["weights and outputs are unchanged".to_string()],
    });
    all_saved_us += gus_us;
    all_saved_bytes += gus_bytes;
    fusions.push(Fusion {
        name: "gate+up GEMM + SiLU·mul epilogue".to_string(),
        description: "the gate+up GEMM applies SiLU·mul before writing: the 2*T*I gate and up \
                      outputs are neither written nor read back (4*T*I elements) and the \
                      activations are read once"
            .to_string(),
        bytes_saved: gus_bytes,
        floor_without_us: floor_us,
        floor_with_us: floor_us - gus_us,
        tokens_per_s_without: rate(floor_us),
        tokens_per_s_with: rate(floor_us - gus_us),
        traffic_ratio: None,
        assumptions: vec![
            "includes the gate+up merge above; the gate and up columns of a tile are computed by \
             the same block"
                .to_string(),
        ],
    });

    let fused_floor = floor_us - all_saved_us;
    fusions.push(Fusion {
        name: "all of the above".to_string(),
        description: "every fusion above together (gate+up counted once, with its epilogue)"
            .to_string(),
        bytes_saved: all_saved_bytes + unfused_extra_bytes,
        floor_without_us: floor_us + unfused_extra_us,
        floor_with_us: fused_floor,
        tokens_per_s_without: rate(floor_us + unfused_extra_us),
        tokens_per_s_with: rate(fused_floor),
        traffic_ratio: None,
        assumptions: vec!["the groups are disjoint, so their savings add".to_string()],
    });
    Ok(Fusions { list: fusions, saved_us: all_saved_us, saved_bytes: all_saved_bytes })
}

/// Computes the budget of `cfg`'s step under `opts` on `device`.
// T, H are the names the formulas use.
#[allow(clippy::many_single_char_names)]
pub fn budget(
    cfg: &ModelConfig,
    opts: &StepOptions,
    device: &DeviceSpec,
    target_tokens_per_s: Option<f64>,
) -> Result<ModelReport, ModelError> {
    if let Some(t) = target_tokens_per_s {
        if !(t.is_finite() && t > 0.0) {
            return Err(ModelError::Invalid(format!(
                "the target must be a positive number of tokens per second, got {t}"
            )));
        }
    }
    let steps = build(cfg, opts)?;
    let ctx = Ctx { device, bw: device.peak_bw_gbs * 1e9 };
    let mut ops = steps.iter().map(|s| ctx.floor(s)).collect::<Result<Vec<_>, _>>()?;
    let act = opts.weights.act_dtype();

    let sum =
        |f: &dyn Fn(&OpBudget) -> f64| ops.iter().map(|o| o.op.count as f64 * f(o)).sum::<f64>();
    let floor_us = sum(&|o| o.floor_us);
    let memory_bound_us: f64 =
        ops.iter().filter(|o| o.bound == Bound::Memory).map(|o| o.step_floor_us).sum();
    let totals = Totals {
        flops: sum(&|o| o.op.work.flops),
        bytes_read: sum(&|o| o.op.work.bytes_read),
        bytes_written: sum(&|o| o.op.work.bytes_written),
        bytes: sum(&|o| o.op.work.bytes()),
        weight_bytes: sum(&|o| o.op.weight_bytes),
        kv_read_bytes: match opts.phase {
            Phase::Decode => {
                cfg.num_layers as f64
                    * (opts.batch * cfg.num_kv_heads * 2 * cfg.head_dim) as f64
                    * cfg.sliding_window.map_or(opts.context, |w| opts.context.min(w)) as f64
                    * opts.kv_dtype.bytes()
            }
            Phase::Prefill => 0.0,
        },
        floor_us,
        compute_floor_us: sum(&|o| o.compute_floor_us),
        memory_floor_us: sum(&|o| o.memory_floor_us),
        memory_bound_pct: if floor_us > 0.0 { memory_bound_us / floor_us * 100.0 } else { 0.0 },
    };
    for o in &mut ops {
        o.share_pct = if floor_us > 0.0 { o.step_floor_us / floor_us * 100.0 } else { 0.0 };
    }

    let t = match opts.phase {
        Phase::Decode => opts.batch,
        Phase::Prefill => opts.batch * opts.tokens,
    };
    let rate = |floor: f64| match opts.phase {
        Phase::Decode => Some(opts.batch as f64 * 1e6 / floor),
        Phase::Prefill => None,
    };
    let Fusions { list: fusions, saved_us: all_saved_us, saved_bytes: all_saved_bytes } =
        fusions(cfg, opts, &ctx, &ops, floor_us, t)?;
    let fused_floor = floor_us - all_saved_us;

    let params = cfg.params();
    let storage_active =
        weight_storage_bytes(cfg, opts.weights, cfg.moe.map(|m| m.experts_per_token as f64));
    let storage_total = weight_storage_bytes(cfg, opts.weights, None);
    // The experts this step's T tokens activate (k at one token).
    let storage_step = weight_storage_bytes(
        cfg,
        opts.weights,
        cfg.moe.map(|m| expected_active_experts(m.experts, m.experts_per_token, t)),
    );
    let throughput = Throughput {
        tokens_per_step: t,
        step_floor_us: floor_us,
        fused_step_floor_us: fused_floor,
        tokens_per_s: rate(floor_us),
        fused_tokens_per_s: rate(fused_floor),
        weights_only_tokens_per_s: match opts.phase {
            Phase::Decode => Some(opts.batch as f64 * ctx.bw / storage_step),
            Phase::Prefill => None,
        },
        ttft_floor_us: (opts.phase == Phase::Prefill).then_some(floor_us),
        fused_ttft_floor_us: (opts.phase == Phase::Prefill).then_some(fused_floor),
        weight_storage_bytes: storage_active,
        total_weight_storage_bytes: storage_total,
        weights_only_bytes: storage_step,
        kv_cache_bytes: kv_cache_bytes(cfg, opts),
    };

    let target = target_tokens_per_s.map(|tps| {
        let steps_per_s = match opts.phase {
            Phase::Decode => tps,
            Phase::Prefill => tps / opts.tokens as f64,
        };
        let fused_bytes = totals.bytes - all_saved_bytes;
        Target {
            tokens_per_s: tps,
            steps_per_s,
            bandwidth_needed_gbs: totals.bytes * steps_per_s / 1e9,
            fused_bandwidth_needed_gbs: fused_bytes * steps_per_s / 1e9,
            bandwidth_pct_of_peak: fused_bytes * steps_per_s / ctx.bw * 100.0,
            flops_needed: totals.flops * steps_per_s,
            compute_busy_pct: totals.compute_floor_us * 1e-6 * steps_per_s * 100.0,
            reachable: fused_floor * 1e-6 * steps_per_s <= 1.0,
        }
    });

    let mut assumptions = assumptions(cfg, opts, device);
    // Where an op's precision has no roof of its own (a CPU has no BF16 matrix unit), the
    // fallback roof it was held to, once per distinct fallback.
    let mut fallbacks: Vec<(String, u64)> = Vec::new();
    for o in &ops {
        if let Some(note) = o.roof.as_ref().and_then(|r| r.note.as_ref()) {
            match fallbacks.iter_mut().find(|(n, _)| n == note) {
                Some((_, k)) => *k += 1,
                None => fallbacks.push((note.clone(), 1)),
            }
        }
    }
    for (note, k) in fallbacks {
        assumptions.push(format!(
            "{note} for {} of the step's op rows ({} has no roof of their own precision and unit)",
            k, device.id
        ));
    }
    Ok(ModelReport {
        model: cfg.clone(),
        params,
        device_id: device.id.clone(),
        device_name: device.name.clone(),
        peak_bw_gbs: device.peak_bw_gbs,
        options: *opts,
        weights_label: opts.weights.to_string(),
        act_dtype: act,
        ops,
        totals,
        throughput,
        fusions,
        target,
        assumptions,
    })
}

fn assumptions(cfg: &ModelConfig, opts: &StepOptions, device: &DeviceSpec) -> Vec<String> {
    let act = opts.weights.act_dtype();
    let mut a = vec![
        format!(
            "each op is one kernel at its roofline floor max(FLOPs / peak, bytes / {} GB/s) on \
             {}'s datasheet peaks; the step floor is the sum (kernels do not overlap; launch \
             and synchronisation overhead not counted)",
            device.peak_bw_gbs, device.id
        ),
        "every weight byte crosses DRAM once per step (a layer's weights do not fit in the \
         last-level \
         cache); activations between ops go through DRAM"
            .to_string(),
        format!(
            "weights {}; activations {act}; KV cache {}; norms, biases and routers in {act}",
            opts.weights, opts.kv_dtype
        ),
        "one device: no tensor or pipeline parallelism".to_string(),
        "LM head computes logits for the last position of each sequence only; sampling is not \
         counted"
            .to_string(),
    ];
    match opts.weights {
        WeightScheme::W8A8(p) => a.push(format!(
            "{p} W8A8: projections read {p} activations and write {act}; the kernels that quantize \
             activations (and per-tensor scales) are not counted; embedding and LM head stay {act}"
        )),
        WeightScheme::Quant(q) => a.push(format!(
            "weight-only {}: {} bits/weight with scales, fp16 activations; embedding and LM head \
             {}",
            q.label(),
            q.bits_per_weight(),
            match opts.weights.head() {
                WeightScheme::Quant(_) => format!(
                    "in {} too (llama.cpp stores output.weight as Q6_K in Q4_0 files: a little \
                     more traffic)",
                    q.label()
                ),
                h => format!("in {h} (GPTQ/AWQ checkpoints leave lm_head unquantized)"),
            }
        )),
        WeightScheme::Dense(_) => {}
    }
    match opts.phase {
        Phase::Decode => {
            a.push(format!(
                "decode: one new token per sequence, batch {}, attending to {} cached positions \
                 (the new one included); tokens/s = batch / step floor",
                opts.batch, opts.context
            ));
            if let Some(w) = cfg.sliding_window {
                if opts.context > w {
                    a.push(format!(
                        "sliding window {w}: attention reads only the last {w} positions of \
                         the cache"
                    ));
                }
            }
            if let Some(m) = cfg.max_position_embeddings {
                if opts.context > m {
                    a.push(format!(
                        "the context {} exceeds the model's max_position_embeddings {m}",
                        opts.context
                    ));
                }
            }
        }
        Phase::Prefill => a.push(format!(
            "prefill: {} prompt tokens per sequence, batch {}, causal attention over the prompt \
             (no cached prefix); time to first token = the step floor",
            opts.tokens, opts.batch
        )),
    }
    if let Some(m) = cfg.moe {
        a.push(format!(
            "mixture of experts: each token's {} experts read their weights; a step over {} tokens \
             activates {:.3} experts per layer (expected, routing uniform and independent); the \
             router is a dense {act} GEMM",
            m.experts_per_token,
            match opts.phase {
                Phase::Decode => opts.batch,
                Phase::Prefill => opts.batch * opts.tokens,
            },
            expected_active_experts(
                m.experts,
                m.experts_per_token,
                match opts.phase {
                    Phase::Decode => opts.batch,
                    Phase::Prefill => opts.batch * opts.tokens,
                }
            )
        ));
    }
    a.push(
        "Llama-style layers: Gemma's embedding scale, Gemma 2's extra norms and logit \
         soft-capping, \
         and alternating attention windows are not modelled"
            .to_string(),
    );
    a.extend(cfg.notes.iter().cloned());
    a
}

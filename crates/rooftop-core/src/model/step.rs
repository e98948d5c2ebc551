//! One LLM step (a decode step or a prefill) as a list of ops, each built from the core's
//! work models ([`crate::ops`]): projections are [`GemmSpec`] / [`QuantGemmSpec`],
//! attention over the KV cache [`AttentionSpec`], norms [`RmsNormSpec`], residual adds,
//! rotary and SiLU·mul [`ElementwiseSpec`], the KV-cache write a [`CopySpec`].
//!
//! The list is one kernel per op, each reading its inputs from DRAM and writing its
//! outputs (the "nothing fused" step of an eager framework), except that quantized
//! weights are read packed by the matmul (dequantization fused, as every quantized
//! inference kernel does); `budget` quantifies each fusion against this list.
//!
//! Per decoder layer, T tokens (decode: T = batch; prefill: T = batch × tokens):
//! RMSNorm(T×H) → Q, K, V projections (T×H · H×Hq·D, H×Hkv·D) → rotary on Q and K →
//! KV-cache write (T×2·Hkv·D) → attention (Hq query heads over Hkv cached heads) → O
//! projection → residual add → RMSNorm → gate, up (T×H · H×I) → SiLU·mul → down
//! (T×I · I×H) → residual add. Once per step: embedding gather, final RMSNorm, LM head
//! for the last token of each sequence.
//!
//! A mixture of experts replaces the MLP with a router GEMM (T×H · H×E), expert
//! gate/up/SiLU·mul/down over the T·k routed rows, reading the weights of the experts
//! the step activates, and a weighted sum of the k expert outputs. At T = 1 exactly k
//! experts are active; for T > 1, with routing uniform and independent across tokens,
//! the expected number is `E·(1 − (1 − k/E)^T)`.

use super::config::{ModelConfig, MoeConfig};
use crate::ops::attention::{AttentionSpec, CausalMode, Pass};
use crate::ops::copy::CopySpec;
use crate::ops::elementwise::ElementwiseSpec;
use crate::ops::gemm::GemmSpec;
use crate::ops::norm::RmsNormSpec;
use crate::ops::quant::{QuantGemmSpec, WeightFormat};
use crate::ops::{OpClass, OpError, Work};
use crate::units::Precision;
use serde::Serialize;
use std::fmt::{self, Write as _};
use std::str::FromStr;

/// Decode (one new token per sequence, attending to the KV cache) or prefill (the
/// prompt, attending causally to itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Decode,
    Prefill,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Decode => "decode",
            Phase::Prefill => "prefill",
        }
    }
}

/// How the projection weights are stored and multiplied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WeightScheme {
    /// 16- or 32-bit weights and activations (bf16, fp16, fp32).
    Dense(Precision),
    /// 8-bit weights and activations on the 8-bit matrix roof (fp8 or int8 W8A8), output
    /// in bf16.
    W8A8(Precision),
    /// Weight-only quantization (Q4_0, Q8_0, intB-gN), fp16 activations.
    Quant(WeightFormat),
}

/// A weight scheme name that is not known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown weight format `{0}`: expected bf16, fp16, fp32, fp8, int8, q4_0, q8_0 or \
     int<bits>-g<group>[-zp] (int4-g128, int4-g64-zp, int3-g128)"
)]
pub struct UnknownWeights(pub String);

impl FromStr for WeightScheme {
    type Err = UnknownWeights;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase().replace('_', "-");
        let bad = || UnknownWeights(s.to_string());
        Ok(match t.as_str() {
            "bf16" | "bfloat16" => WeightScheme::Dense(Precision::Bf16),
            "fp16" | "f16" | "half" | "float16" => WeightScheme::Dense(Precision::Fp16),
            "fp32" | "f32" | "float32" => WeightScheme::Dense(Precision::Fp32),
            "fp8" | "fp8-e4m3" | "e4m3" => WeightScheme::W8A8(Precision::Fp8),
            "int8" | "w8a8" => WeightScheme::W8A8(Precision::Int8),
            "q4-0" => WeightScheme::Quant(WeightFormat::Q4_0),
            "q8-0" => WeightScheme::Quant(WeightFormat::Q8_0),
            other => {
                // int<bits>-g<group>[-zp]
                let rest = other.strip_prefix("int").ok_or_else(bad)?;
                let (rest, zero_point) = match rest.strip_suffix("-zp") {
                    Some(r) => (r, true),
                    None => (rest, false),
                };
                let (bits, group) = rest.split_once("-g").ok_or_else(bad)?;
                let bits: u32 = bits.parse().map_err(|_| bad())?;
                let group: u64 = group.parse().map_err(|_| bad())?;
                if !(1..=8).contains(&bits) || group == 0 {
                    return Err(bad());
                }
                WeightScheme::Quant(WeightFormat::Affine {
                    bits,
                    group_size: group,
                    scale_dtype: Precision::Fp16,
                    zero_point,
                })
            }
        })
    }
}

impl fmt::Display for WeightScheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WeightScheme::Dense(p) => write!(f, "{p}"),
            WeightScheme::W8A8(p) => write!(f, "{p} (W8A8)"),
            WeightScheme::Quant(q) => f.write_str(&q.label()),
        }
    }
}

impl WeightScheme {
    /// The precision activations are stored in between ops.
    pub fn act_dtype(self) -> Precision {
        match self {
            WeightScheme::Dense(p) => p,
            WeightScheme::W8A8(_) => Precision::Bf16,
            WeightScheme::Quant(_) => Precision::Fp16,
        }
    }

    /// Storage bits per weight (scales included for group formats).
    pub fn bits_per_weight(self) -> f64 {
        match self {
            WeightScheme::Dense(p) | WeightScheme::W8A8(p) => f64::from(p.bits()),
            WeightScheme::Quant(q) => q.bits_per_weight(),
        }
    }

    /// The scheme of the embedding table and LM head: the same GGML format for
    /// Q4_0/Q8_0 files, 16-bit activations' dtype for W8A8 and group formats (whose
    /// checkpoints leave `lm_head` unquantized).
    #[must_use]
    pub fn head(self) -> WeightScheme {
        match self {
            WeightScheme::Quant(WeightFormat::Affine { .. }) | WeightScheme::W8A8(_) => {
                WeightScheme::Dense(self.act_dtype())
            }
            s => s,
        }
    }
}

/// What a step computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StepOptions {
    pub phase: Phase,
    /// Sequences processed together.
    pub batch: u64,
    /// Decode: KV-cache positions the new token attends to, itself included (unused,
    /// conventionally 0, in prefill).
    pub context: u64,
    /// Prefill: prompt tokens per sequence (unused, conventionally 0, in decode).
    pub tokens: u64,
    pub weights: WeightScheme,
    /// KV-cache storage precision.
    pub kv_dtype: Precision,
}

/// Which part of the model an op is: fusions find their ops by role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Embedding,
    AttnNorm,
    QProj,
    KProj,
    VProj,
    Rotary,
    KvWrite,
    Attention,
    OProj,
    AttnResidual,
    MlpNorm,
    Router,
    Gate,
    Up,
    SiluMul,
    Down,
    ExpertGate,
    ExpertUp,
    ExpertSiluMul,
    ExpertDown,
    SharedGate,
    SharedUp,
    SharedSiluMul,
    SharedDown,
    ExpertCombine,
    MlpResidual,
    FinalNorm,
    LmHead,
}

/// One op of the step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepOp {
    /// Short name (`q proj`, `attention`).
    pub name: String,
    pub role: Role,
    /// Times it runs per step (the layer count for per-layer ops).
    pub count: u64,
    /// FLOPs and minimum bytes of one run.
    pub work: Work,
    /// Bytes of weights one run reads (0 for ops without weights).
    pub weight_bytes: f64,
    /// Weight matrices one run reads: 1, or the expected active experts.
    pub weight_matrices: f64,
    /// For weight-quantized projections: the spec (the dequant-fusion comparison needs
    /// it).
    #[serde(skip)]
    pub quant: Option<QuantGemmSpec>,
}

/// Why a step could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    #[error("{op}: {source}")]
    Op {
        op: String,
        #[source]
        source: OpError,
    },
    #[error("{0}")]
    Invalid(String),
}

/// Expected distinct experts activated by `tokens` tokens each choosing `k` of `e`,
/// routing uniform and independent across tokens: `e·(1 − (1 − k/e)^tokens)`; exactly
/// `k` for one token.
pub fn expected_active_experts(e: u64, k: u64, tokens: u64) -> f64 {
    if tokens == 1 {
        return k as f64;
    }
    let (e, k) = (e as f64, k as f64);
    let miss = 1.0 - k / e;
    let t = i32::try_from(tokens).unwrap_or(i32::MAX);
    e * (1.0 - miss.powi(t))
}

struct Builder<'a> {
    cfg: &'a ModelConfig,
    opts: StepOptions,
    act: Precision,
    ops: Vec<StepOp>,
}

fn op_err(name: &str) -> impl Fn(OpError) -> StepError + '_ {
    move |source| StepError::Op { op: name.to_string(), source }
}

impl Builder<'_> {
    fn push(&mut self, name: &str, role: Role, count: u64, work: Work) {
        self.ops.push(StepOp {
            name: name.to_string(),
            role,
            count,
            work,
            weight_bytes: 0.0,
            weight_matrices: 0.0,
            quant: None,
        });
    }

    /// A projection `[m×k] · [k×n]` in `scheme`, reading `matrices` weight matrices.
    #[allow(clippy::too_many_arguments, clippy::many_single_char_names)]
    fn linear(
        &mut self,
        name: &str,
        role: Role,
        count: u64,
        (m, n, k): (u64, u64, u64),
        scheme: WeightScheme,
        bias: bool,
        matrices: f64,
    ) -> Result<(), StepError> {
        let err = op_err(name);
        let (mut work, a_bytes, quant) = match scheme {
            WeightScheme::Dense(p) => {
                let spec = GemmSpec { bias, ..GemmSpec::new(m, n, k, p) };
                (spec.work().map_err(&err)?, p.bytes(), None)
            }
            WeightScheme::W8A8(p) => {
                let spec =
                    GemmSpec { bias, out_dtype: Some(self.act), ..GemmSpec::new(m, n, k, p) };
                (spec.work().map_err(&err)?, p.bytes(), None)
            }
            WeightScheme::Quant(format) => {
                let spec = QuantGemmSpec { m, n, k, act_dtype: self.act, format, out_dtype: None };
                let mut w = spec.work().map_err(&err)?;
                if bias {
                    // QuantGemmSpec has no bias: one N-vector read, M*N adds (as GemmSpec
                    // counts them).
                    let b = n as f64 * self.act.bytes();
                    w.bytes_read += b;
                    w.flops += (m * n) as f64;
                    let _ = write!(w.bytes_formula, " + bias N*{} = {b} B read", self.act.bytes());
                    let _ = write!(w.flops_formula, " + M*N bias adds = {}", m * n);
                    w.shape.push_str(" +bias");
                    w.assumptions.push(
                        "the bias is one N-vector in the activation precision, read once"
                            .to_string(),
                    );
                }
                (w, self.act.bytes(), Some(spec))
            }
        };
        let bias_bytes = if bias { n as f64 * self.act.bytes() } else { 0.0 };
        // Weights (and scales) = bytes read − activations − bias.
        let weight_bytes = work.bytes_read - (m * k) as f64 * a_bytes - bias_bytes;
        if matrices != 1.0 {
            let extra = (matrices - 1.0) * weight_bytes;
            work.bytes_read += extra;
            let _ = write!(
                work.bytes_formula,
                "; + ({matrices:.4} - 1) more expert weight matrices * {weight_bytes} B = \
                 {extra} B read"
            );
            work.assumptions.push(format!(
                "the {m} routed rows are spread over {matrices:.4} active experts (expected), each \
                 expert's weights read once"
            ));
            let _ = write!(work.shape, " x{matrices:.3} experts");
        }
        self.ops.push(StepOp {
            name: name.to_string(),
            role,
            count,
            work,
            weight_bytes: weight_bytes * matrices,
            weight_matrices: matrices,
            quant,
        });
        Ok(())
    }

    fn norm(&mut self, name: &str, role: Role, count: u64, rows: u64) -> Result<(), StepError> {
        let w =
            RmsNormSpec { rows, cols: self.cfg.hidden_size, dtype: self.act, weight_dtype: None }
                .work()
                .map_err(op_err(name))?;
        self.push(name, role, count, w);
        Ok(())
    }

    fn add(&mut self, name: &str, role: Role, count: u64, t: u64) -> Result<(), StepError> {
        let w = ElementwiseSpec::binary(t * self.cfg.hidden_size, self.act, 1.0)
            .work()
            .map_err(op_err(name))?;
        self.push(name, role, count, w);
        Ok(())
    }

    fn silu_mul(
        &mut self,
        name: &str,
        role: Role,
        count: u64,
        elems: u64,
    ) -> Result<(), StepError> {
        // silu(g)*u = g/(1+exp(-g))*u: negate, exp, add, divide, multiply = 5 per element
        // (exp counted as one operation).
        let mut w = ElementwiseSpec::binary(elems, self.act, 5.0).work().map_err(op_err(name))?;
        w.assumptions.push(
            "SiLU·mul = g/(1+exp(-g))*u: 5 operations per element, exp counted as one".to_string(),
        );
        self.push(name, role, count, w);
        Ok(())
    }

    /// The gated MLP over `rows` rows of width `width`, reading `matrices` experts.
    #[allow(clippy::too_many_arguments)]
    fn mlp(
        &mut self,
        names: [&str; 4],
        roles: [Role; 4],
        rows: u64,
        width: u64,
        matrices: f64,
    ) -> Result<(), StepError> {
        let (l, h, s) = (self.cfg.num_layers, self.cfg.hidden_size, self.opts.weights);
        self.linear(names[0], roles[0], l, (rows, width, h), s, false, matrices)?;
        self.linear(names[1], roles[1], l, (rows, width, h), s, false, matrices)?;
        self.silu_mul(names[2], roles[2], l, rows * width)?;
        self.linear(names[3], roles[3], l, (rows, h, width), s, false, matrices)
    }
    /// A mixture-of-experts MLP for `t` tokens: the router, the experts the tokens
    /// activate (each token to `k` of them), the shared expert if any, and the weighted
    /// combination of their outputs.
    // E, K, H, L, T are the names the formulas use.
    #[allow(clippy::many_single_char_names)]
    fn moe_mlp(&mut self, m: MoeConfig, t: u64) -> Result<(), StepError> {
        let (h, l, act) = (self.cfg.hidden_size, self.cfg.num_layers, self.act);
        let e = m.experts;
        let k = m.experts_per_token;
        self.linear("router", Role::Router, l, (t, e, h), WeightScheme::Dense(act), false, 1.0)?;
        let active = expected_active_experts(e, k, t);
        self.mlp(
            ["expert gate", "expert up", "expert SiLU·mul", "expert down"],
            [Role::ExpertGate, Role::ExpertUp, Role::ExpertSiluMul, Role::ExpertDown],
            t * k,
            m.expert_intermediate_size,
            active,
        )?;
        let mut inputs = k;
        if let Some(sw) = m.shared_expert_intermediate_size {
            self.mlp(
                ["shared gate", "shared up", "shared SiLU·mul", "shared down"],
                [Role::SharedGate, Role::SharedUp, Role::SharedSiluMul, Role::SharedDown],
                t,
                sw,
                1.0,
            )?;
            inputs += 1;
        }
        let name = "expert combine";
        let mut w = ElementwiseSpec {
            elements: t * h,
            inputs: u32::try_from(inputs).unwrap_or(u32::MAX),
            outputs: 1,
            dtype: act,
            flops_per_element: (2 * inputs - 1) as f64,
            broadcast_elements: None,
        }
        .work()
        .map_err(op_err(name))?;
        w.assumptions.push(format!(
            "weighted sum of {inputs} expert outputs: {inputs} multiplies and {} adds per \
             element; router softmax/top-k not counted",
            inputs - 1
        ));
        self.push(name, Role::ExpertCombine, l, w);
        Ok(())
    }
}

/// Builds the step's ops for `cfg` under `opts`.
// B, T, H, L, D are the names the formulas use.
#[allow(clippy::many_single_char_names)]
pub fn build(cfg: &ModelConfig, opts: &StepOptions) -> Result<Vec<StepOp>, StepError> {
    if opts.batch == 0 {
        return Err(StepError::Invalid("the batch must be at least 1".to_string()));
    }
    let (b, act) = (opts.batch, opts.weights.act_dtype());
    let (t, seq_q, seq_kv, causal) = match opts.phase {
        Phase::Decode => {
            if opts.context == 0 {
                return Err(StepError::Invalid("the context must be at least 1".to_string()));
            }
            let kv = cfg.sliding_window.map_or(opts.context, |w| opts.context.min(w));
            (b, 1, kv, CausalMode::None)
        }
        Phase::Prefill => {
            if opts.tokens == 0 {
                return Err(StepError::Invalid(
                    "the prompt must have at least 1 token".to_string(),
                ));
            }
            let t = b.checked_mul(opts.tokens).ok_or_else(|| {
                StepError::Invalid("batch × tokens does not fit in 64 bits".to_string())
            })?;
            (t, opts.tokens, opts.tokens, CausalMode::TopLeft)
        }
    };
    let (h, l, hq, hkv, d) =
        (cfg.hidden_size, cfg.num_layers, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim);
    let mut bd = Builder { cfg, opts: *opts, act, ops: Vec::new() };
    let head = opts.weights.head();

    // Embedding gather: T rows of H from the table.
    {
        let name = "embedding";
        let mut w = CopySpec { elements: t * h, dtype: act }.work().map_err(op_err(name))?;
        let row_bits = head.bits_per_weight();
        let read = (t * h) as f64 * row_bits / 8.0;
        w.bytes_read = read;
        w.class = OpClass::Copy;
        w.shape = format!("T={t} H={h} {head} -> {act}");
        w.bytes_formula = format!(
            "read T*H*{row_bits}/8 (table rows) = {t}*{h}*{row_bits}/8 = {read} B; \
             write T*H*{} = {} B",
            act.bytes(),
            w.bytes_written
        );
        w.assumptions = vec![
            "gathers the T token rows of the embedding table (the rest of the table is not read)"
                .to_string(),
        ];
        bd.push(name, Role::Embedding, 1, w);
    }

    // One decoder layer; every op runs `l` times.
    {
        bd.norm("attn norm", Role::AttnNorm, l, t)?;
        let s = opts.weights;
        bd.linear("q proj", Role::QProj, l, (t, hq * d, h), s, cfg.qkv_bias, 1.0)?;
        bd.linear("k proj", Role::KProj, l, (t, hkv * d, h), s, cfg.qkv_bias, 1.0)?;
        bd.linear("v proj", Role::VProj, l, (t, hkv * d, h), s, cfg.qkv_bias, 1.0)?;

        // Rotary on Q and K: x*cos + rotate(x)*sin, cos/sin of D/2 each per position.
        let name = "rotary";
        let mut w = ElementwiseSpec {
            elements: t * (hq + hkv) * d,
            inputs: 2,
            outputs: 1,
            dtype: act,
            flops_per_element: 3.0,
            broadcast_elements: Some(t * d),
        }
        .work()
        .map_err(op_err(name))?;
        w.assumptions.push(
            "rotary on Q and K: x*cos + rotate(x)*sin = 3 operations per element; the cos and \
             sin tables (D/2 each per position) are the broadcast input"
                .to_string(),
        );
        bd.push(name, Role::Rotary, l, w);

        // The new K and V rows go into the cache (in its precision).
        let name = "KV-cache write";
        let elems = t * 2 * hkv * d;
        let mut w = CopySpec { elements: elems, dtype: act }.work().map_err(op_err(name))?;
        if opts.kv_dtype != act {
            let written = elems as f64 * opts.kv_dtype.bytes();
            w.bytes_written = written;
            w.shape = format!("E={elems} {act} -> {}", opts.kv_dtype);
            w.bytes_formula = format!(
                "read T*2*Hkv*D*{} = {} B; write T*2*Hkv*D*{} = {elems}*{} = {written} B",
                act.bytes(),
                w.bytes_read,
                opts.kv_dtype.bytes(),
                opts.kv_dtype.bytes()
            );
            w.assumptions.push(format!(
                "K and V are cast to the {} cache as they are written; scales not counted",
                opts.kv_dtype
            ));
        }
        bd.push(name, Role::KvWrite, l, w);

        let name = "attention";
        let spec = AttentionSpec {
            batch: b,
            heads_q: hq,
            heads_kv: hkv,
            seq_q,
            seq_kv,
            head_dim: d,
            head_dim_v: None,
            causal,
            dtype: act,
            pass: Pass::Forward,
        };
        let mut w = spec.work().map_err(op_err(name))?;
        if opts.phase == Phase::Decode && opts.kv_dtype != act {
            // K and V come from the cache in its precision; Q and O stay in `act`.
            let kv_elems = (b * hkv * seq_kv * 2 * d) as f64;
            let delta = kv_elems * (opts.kv_dtype.bytes() - act.bytes());
            w.bytes_read += delta;
            let _ = write!(w.shape, " KV {}", opts.kv_dtype);
            let _ = write!(
                w.bytes_formula,
                "; K and V in {}: B*Hkv*Skv*2*D*({} - {}) = {kv_elems}*({} - {}) = {delta} B",
                opts.kv_dtype,
                opts.kv_dtype.bytes(),
                act.bytes(),
                opts.kv_dtype.bytes(),
                act.bytes()
            );
            w.assumptions.push(format!(
                "K and V are read from the {} cache and widened on chip; Q·K^T and P·V run at \
                 the \
                 {act} roof",
                opts.kv_dtype
            ));
        }
        if let (Phase::Prefill, Some(win)) = (opts.phase, cfg.sliding_window) {
            let s = u128::from(opts.tokens);
            let win = u128::from(win);
            if s > win {
                // Query i sees min(i+1, W) keys: W(W+1)/2 + (S−W)·W pairs instead of S(S+1)/2.
                let causal_pairs = s * (s + 1) / 2;
                let window_pairs = win * (win + 1) / 2 + (s - win) * win;
                w.flops *= window_pairs as f64 / causal_pairs as f64;
                let _ = write!(
                    w.flops_formula,
                    "; sliding window {win}: x {window_pairs}/{causal_pairs} pairs = {}",
                    w.flops
                );
                w.assumptions.push(format!(
                    "sliding window {win}: each query sees at most {win} keys (FLOPs scaled by the \
                     pair count); K and V are still read once"
                ));
            }
        }
        if opts.phase == Phase::Prefill && opts.kv_dtype != act {
            w.assumptions.push(format!(
                "prefill attention reads the new K and V in {act}, not from the {} cache",
                opts.kv_dtype
            ));
        }
        bd.push(name, Role::Attention, l, w);

        bd.linear("o proj", Role::OProj, l, (t, h, hq * d), s, false, 1.0)?;
        bd.add("attn residual", Role::AttnResidual, l, t)?;
        bd.norm("mlp norm", Role::MlpNorm, l, t)?;

        match cfg.moe {
            None => bd.mlp(
                ["gate proj", "up proj", "SiLU·mul", "down proj"],
                [Role::Gate, Role::Up, Role::SiluMul, Role::Down],
                t,
                cfg.intermediate_size,
                1.0,
            )?,
            Some(m) => bd.moe_mlp(m, t)?,
        }
        bd.add("mlp residual", Role::MlpResidual, l, t)?;
    }

    bd.norm("final norm", Role::FinalNorm, 1, t)?;
    // Logits only for the last position of each sequence.
    bd.linear("LM head", Role::LmHead, 1, (b, cfg.vocab_size, h), head, false, 1.0)?;
    Ok(bd.ops)
}

/// Bytes of the whole KV cache after the step: `2·L·Hkv·D·positions·batch` elements.
pub fn kv_cache_bytes(cfg: &ModelConfig, opts: &StepOptions) -> f64 {
    let positions = match opts.phase {
        Phase::Decode => opts.context,
        Phase::Prefill => opts.tokens,
    };
    let positions = cfg.sliding_window.map_or(positions, |w| positions.min(w));
    2.0 * (cfg.num_layers * cfg.num_kv_heads * cfg.head_dim) as f64
        * positions as f64
        * opts.batch as f64
        * opts.kv_dtype.bytes()
}

/// Storage of the weights in the scheme: projections in `weights`, embedding and LM
/// head in `weights.head()`, norms, biases and routers in the activation precision. For
/// a mixture of experts, `experts` routed experts per layer are counted (`None`: all).
/// Exact when K is a multiple of the format's group (else the last partial group's
/// scale is not counted).
// H, L, D are the names the formulas use.
#[allow(clippy::many_single_char_names)]
pub fn weight_storage_bytes(cfg: &ModelConfig, weights: WeightScheme, experts: Option<f64>) -> f64 {
    let p = cfg.params();
    let h = cfg.hidden_size as f64;
    let l = cfg.num_layers as f64;
    let act = weights.act_dtype().bytes();
    let head_bits = weights.head().bits_per_weight();
    let embed = (p.embedding + p.lm_head) as f64 * head_bits / 8.0;
    let (hq, hkv, d) = (cfg.num_heads as f64, cfg.num_kv_heads as f64, cfg.head_dim as f64);
    let attn = 2.0 * h * hq * d + 2.0 * h * hkv * d;
    let bias = if cfg.qkv_bias { (hq + 2.0 * hkv) * d } else { 0.0 };
    let (mlp, router) = match cfg.moe {
        None => (3.0 * h * cfg.intermediate_size as f64, 0.0),
        Some(m) => {
            let n = experts.unwrap_or(m.experts as f64);
            let shared = m.shared_expert_intermediate_size.map_or(0.0, |s| 3.0 * h * s as f64);
            // Shared-expert gate (H) kept with the router in the activation precision.
            let gate = if m.shared_expert_intermediate_size.is_some() { h } else { 0.0 };
            (n * 3.0 * h * m.expert_intermediate_size as f64 + shared, h * m.experts as f64 + gate)
        }
    };
    let per_layer =
        (attn + mlp) * weights.bits_per_weight() / 8.0 + (bias + router + 2.0 * h) * act;
    embed + l * per_layer + h * act
}

//! Mixture-of-experts layers as grouped GEMMs, from their recorded arguments.
//!
//! Ops read:
//! - fused-experts ops: `vllm::outplace_fused_experts`, `vllm::inplace_fused_experts`,
//!   `sglang::*_fused_experts`, `vllm::rocm_aiter_fused_moe` — arguments
//!   `hidden_states [T, H]`, `w1 [E, N1, H]` (gate and up, `N1 = 2·I` when gated),
//!   `w2 [E, H, I]`, `topk_weights [T, k]` (vLLM's `fused_experts` signature; AITER's
//!   is the same for these four);
//! - `vllm::moe_forward`, `vllm::moe_forward_shared` (`hidden_states [T, H]`,
//!   `router_logits [T, E]`): the rest from the op they call — the first fused-experts op
//!   among their descendants, or for top-k a descendant with a `[T, k]` argument (the
//!   `topk_softmax` / routing ops).
//!
//! Weights stored as `unsigned char` with half the hidden size are 4-bit values packed
//! two per byte (int4/fp4/mxfp4): their logical sizes are twice the stored ones.
//!
//! Model (TraceLens `FusedMoE`, `PerfModel/extensions/moe_perf_model_extensions.py`):
//! - FLOPs: up/gate `2·T·k·H·N1`, down `2·T·k·I·H`, weighted combine `T·H·(2k − 1)`;
//! - bytes: the input `T·H`, the output `T·H`, and the weights of the experts the tokens
//!   reach, `E_active·(N1·H + H·I)`, with `E_active = E·(1 − ((E − k)/E)^T)` the expected
//!   number of distinct experts hit by `T·k` uniform routing choices (an estimate: the
//!   real routing is not in the trace). Intermediate activations are taken to stay on
//!   chip (fused kernels);
//! - the compute roof is the weights' precision when they are FP8 (W8A8), else the
//!   activations' (4-bit and 8-bit integer weights are dequantised to them).

use super::super::model::{Dims, OpArgs, TraceModel};
use super::super::ops::{dtype_bytes, dtype_precision, OpModel, ParamValue, Params, Table};
use crate::ops::{OpClass, Work};
use crate::units::{ExecUnit, Precision};

/// Fused-experts ops whose arguments carry the whole layer.
pub fn is_fused_experts(name: &str) -> bool {
    matches!(
        name,
        "vllm::outplace_fused_experts"
            | "vllm::inplace_fused_experts"
            | "sglang::outplace_fused_experts"
            | "sglang::inplace_fused_experts"
            | "vllm::rocm_aiter_fused_moe"
    )
}

/// MoE layer ops (they call the fused-experts op, routing and the rest).
pub fn is_moe_layer(name: &str) -> bool {
    matches!(name, "vllm::moe_forward" | "vllm::moe_forward_shared")
}

/// The shape of one MoE call.
#[derive(Debug, Clone, PartialEq)]
pub struct MoeShape {
    pub tokens: u64,
    pub hidden: u64,
    /// Intermediate size per expert (`I`).
    pub inter: u64,
    pub experts: u64,
    pub topk: u64,
    /// Gate and up projections (`N1 = 2·I`).
    pub gated: bool,
    pub act_dtype: String,
    pub weight_dtype: String,
    /// Bits per stored weight value (4 for packed 4-bit).
    pub weight_bits: u32,
}

fn tensor(a: &OpArgs, i: usize) -> Option<&[i64]> {
    match a.input_dims.get(i)? {
        Dims::Tensor(d) if !d.is_empty() => Some(d),
        _ => None,
    }
}

fn u(x: i64, what: &str) -> Result<u64, String> {
    u64::try_from(x).ok().filter(|&v| v > 0).ok_or_else(|| format!("{what} is {x}, expected > 0"))
}

fn is_packed_byte(dtype: &str) -> bool {
    matches!(
        dtype.to_ascii_lowercase().as_str(),
        "unsigned char" | "uint8" | "c10::float4_e2m1fn_x2"
    )
}

/// The shape from a fused-experts op's arguments.
///
/// # Errors
/// When an argument is missing or the shapes do not fit together.
pub(crate) fn fused_shape(a: &OpArgs) -> Result<MoeShape, String> {
    let x = tensor(a, 0).ok_or("argument 0 (hidden_states) has no recorded shape")?;
    let w1 = tensor(a, 1).ok_or("argument 1 (w1) has no recorded shape")?;
    let w2 = tensor(a, 2).ok_or("argument 2 (w2) has no recorded shape")?;
    let tw = tensor(a, 3).ok_or("argument 3 (topk_weights) has no recorded shape")?;
    if x.len() != 2 || w1.len() != 3 || w2.len() != 3 || tw.len() != 2 {
        return Err(format!(
            "expected hidden_states [T, H], w1 [E, N1, H], w2 [E, H, I], topk_weights [T, k]; \
             got {x:?}, {w1:?}, {w2:?}, {tw:?}"
        ));
    }
    let (tokens, hidden) = (u(x[0], "T")?, u(x[1], "H")?);
    let experts = u(w1[0], "E")?;
    let wt = a.input_types.get(1).cloned().unwrap_or_default();
    let packed = is_packed_byte(&wt) && u(w1[2], "w1 K")? * 2 == hidden;
    let factor = if packed { 2 } else { 1 };
    let n1 = u(w1[1], "N1")?;
    let inter = u(w2[2], "I")? * factor;
    if u(w2[1], "w2 H")? != hidden {
        return Err(format!("w2 {w2:?} does not have the hidden size {hidden} of hidden_states"));
    }
    let gated = n1 == 2 * inter;
    if !gated && n1 != inter {
        return Err(format!("w1 {w1:?} is neither [E, I, H] nor [E, 2·I, H] for I = {inter}"));
    }
    Ok(MoeShape {
        tokens,
        hidden,
        inter,
        experts,
        topk: u(tw[1], "k")?,
        gated,
        act_dtype: a.input_types.first().cloned().unwrap_or_default(),
        weight_bits: if packed { 4 } else { dtype_bytes(&wt).map_or(16, |b| b * 8) },
        weight_dtype: if packed { format!("{wt} (4-bit packed)") } else { wt },
    })
}

/// The shape of a `moe_forward` call `op` of `model` from its own arguments and its
/// descendants'.
///
/// # Errors
/// When top-k, the intermediate size or the weights cannot be found.
pub(crate) fn layer_shape(model: &TraceModel, op: usize) -> Result<MoeShape, String> {
    let o = model.ops.get(op).ok_or("no such op")?;
    let x = tensor(&o.args, 0).ok_or("argument 0 (hidden_states) has no recorded shape")?;
    let logits = tensor(&o.args, 1).ok_or("argument 1 (router_logits) has no recorded shape")?;
    if x.len() != 2 || logits.len() != 2 {
        return Err(format!(
            "expected hidden_states [T, H] and router_logits [T, E], got {x:?}, {logits:?}"
        ));
    }
    let (tokens, experts) = (u(x[0], "T")?, u(logits[1], "E")?);
    // Descendants, depth first.
    let mut stack: Vec<u32> = o.children.iter().rev().copied().collect();
    let mut topk: Option<u64> = None;
    while let Some(c) = stack.pop() {
        let Some(co) = model.ops.get(c as usize).filter(|_| c as usize > op) else { continue };
        if is_fused_experts(&co.name) {
            let mut s = fused_shape(&co.args)?;
            // The layer's token count (the fused op may see padded or per-rank tokens).
            s.tokens = tokens;
            return Ok(s);
        }
        if topk.is_none() {
            topk = (0..co.args.input_dims.len())
                .filter_map(|i| tensor(&co.args, i))
                .find(|d| d.len() == 2 && d[0] == x[0] && d[1] > 0 && (d[1] as u64) < experts)
                .map(|d| d[1] as u64);
        }
        stack.extend(co.children.iter().rev());
    }
    Err(format!(
        "the intermediate size and the expert weights are in no recorded argument of `{}` or \
         the ops it calls (top-k {}); FLOPs and bytes are not modelled",
        o.name,
        topk.map_or_else(|| "not found either".to_string(), |k| k.to_string())
    ))
}

/// The model of one MoE call of shape `s`, in table MoE.
// The formula's own letters (T, H, I, E, k) read best as they are written.
#[allow(clippy::many_single_char_names)]
pub fn moe_model(s: &MoeShape) -> OpModel {
    let (t, h, i, e, k) =
        (s.tokens as f64, s.hidden as f64, s.inter as f64, s.experts as f64, s.topk as f64);
    let n1 = if s.gated { 2.0 * i } else { i };
    let flops = 2.0 * t * k * h * n1 + 2.0 * t * k * i * h + t * h * (2.0 * k - 1.0);
    let e_active = e * (1.0 - ((e - k.min(e)) / e).powf(t));
    let a_bpe = f64::from(dtype_bytes(&s.act_dtype).unwrap_or(2));
    let w_bpe = f64::from(s.weight_bits) / 8.0;
    let read = t * h * a_bpe + e_active * (n1 * h + h * i) * w_bpe;
    let written = t * h * a_bpe;
    let w_prec = dtype_precision(s.weight_dtype.split(' ').next().unwrap_or_default());
    let precision = match w_prec {
        Some(Precision::Fp8) => Precision::Fp8,
        _ => dtype_precision(&s.act_dtype).unwrap_or(Precision::Bf16),
    };
    let quantized = s.weight_bits < 16;
    let work = Work {
        class: if quantized { OpClass::QuantizedGemm } else { OpClass::Gemm },
        shape: format!(
            "T={} H={} I={} E={} k={} {}",
            s.tokens, s.hidden, s.inter, s.experts, s.topk,
            if s.gated { "gated" } else { "ungated" }
        ),
        flops,
        precision,
        unit: ExecUnit::Matrix,
        bytes_read: read,
        bytes_written: written,
        flops_formula: format!(
            "2*T*k*H*N1 + 2*T*k*I*H + T*H*(2k-1) = 2*{t}*{k}*{h}*{n1} + 2*{t}*{k}*{i}*{h} + {t}*{h}*{}",
            2.0 * k - 1.0
        ),
        bytes_formula: format!(
            "T*H*{a_bpe} (in) + E_active*(N1*H + H*I)*{w_bpe} (weights, E_active = {e_active:.2}) \
             + T*H*{a_bpe} (out)"
        ),
        assumptions: vec![
            "grouped GEMM over T·k token-expert pairs; routing uniform at random for the \
             number of distinct experts loaded (E_active)"
                .to_string(),
            "intermediate activations stay on chip (fused kernels)".to_string(),
        ],
    };
    let mut params = Params::default();
    for (key, v) in [
        ("tokens", s.tokens),
        ("hidden", s.hidden),
        ("intermediate", s.inter),
        ("experts", s.experts),
        ("topk", s.topk),
    ] {
        params.0.push((key, ParamValue::Int(i64::try_from(v).unwrap_or(i64::MAX))));
    }
    params.0.push(("gated", ParamValue::Bool(s.gated)));
    params.0.push((
        "dtypes",
        ParamValue::Dtypes(vec![Some(s.act_dtype.clone()), Some(s.weight_dtype.clone())]),
    ));
    OpModel { table: Table::Moe, params, flops, bytes: read + written, work, gemm: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(dims: &[&[i64]], types: &[&str]) -> OpArgs {
        OpArgs {
            input_dims: dims.iter().map(|d| Dims::Tensor(d.to_vec())).collect(),
            input_types: types.iter().map(|s| (*s).to_string()).collect(),
            ..OpArgs::default()
        }
    }

    #[test]
    fn mixtral_like_bf16_by_hand() {
        // T=4 tokens, H=8, I=16, E=8 experts, top-2, gated: N1 = 32.
        let a = args(
            &[&[4, 8], &[8, 32, 8], &[8, 8, 16], &[4, 2], &[4, 2]],
            &["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "float", "int"],
        );
        let s = fused_shape(&a).unwrap();
        assert_eq!(
            (s.tokens, s.hidden, s.inter, s.experts, s.topk, s.gated),
            (4, 8, 16, 8, 2, true)
        );
        let m = moe_model(&s);
        // 2·4·2·8·32 + 2·4·2·16·8 + 4·8·3 = 4096 + 2048 + 96.
        assert_eq!(m.flops, 6240.0);
        // E_active = 8·(1 − (6/8)^4) = 5.46875; weights (32·8 + 8·16)·2 B each.
        let e_active = 8.0 * (1.0 - 0.75f64.powi(4));
        assert!((m.bytes - (4.0 * 8.0 * 2.0 * 2.0 + e_active * 384.0 * 2.0)).abs() < 1e-9);
        assert_eq!(m.work.precision, Precision::Bf16);
        assert_eq!(m.table, Table::Moe);
    }

    #[test]
    fn packed_4bit_and_fp8() {
        // 4-bit weights: w1 [E, 2I, H/2] as bytes, w2 [E, H, I/2].
        let a = args(
            &[&[2, 64], &[4, 64, 32], &[4, 64, 16], &[2, 1]],
            &["c10::BFloat16", "unsigned char", "unsigned char", "float"],
        );
        let s = fused_shape(&a).unwrap();
        assert_eq!((s.inter, s.weight_bits, s.gated), (32, 4, true));
        assert_eq!(moe_model(&s).work.class, OpClass::QuantizedGemm);
        let a = args(
            &[&[2, 64], &[4, 64, 64], &[4, 64, 32], &[2, 1]],
            &["c10::BFloat16", "c10::Float8_e4m3fn", "c10::Float8_e4m3fn", "float"],
        );
        let s = fused_shape(&a).unwrap();
        assert_eq!((s.weight_bits, moe_model(&s).work.precision), (8, Precision::Fp8));
        assert!(fused_shape(&args(&[&[2, 64]], &["c10::BFloat16"])).is_err());
    }
}

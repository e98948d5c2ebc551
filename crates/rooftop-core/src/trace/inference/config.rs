//! What a Hugging Face model config (`rooftop trace --model-config config.json`) adds
//! to an inference trace: the sizes its ops do not record.
//!
//! - MoE layers: `vllm::moe_forward(hidden_states [T, H'], router_logits [T, E])` records
//!   the tokens and the experts but not the expert weights when the fused-experts op
//!   is not a recorded child (Triton or FlashInfer kernels launched from Python, a
//!   CUDA graph): the hidden size `H`, the expert width `I`, the experts `E` and top-k
//!   come from the config;
//! - attention ops whose query is recorded flattened (`[T, Hq·d]`): the head size from
//!   the config splits it into heads.
//!
//! The parallel degree `p` (tensor or expert parallel) is not in the config: it is the
//! config's query heads over the heads one attention call of the trace holds
//! (`Hq / Hq_local`). With tensor parallelism each rank computes every token-expert pair
//! at width `I/p`; with expert parallelism it computes the pairs of its `E/p` experts at
//! width `I`: under uniform routing both give each rank `1/p` of the FLOPs and of the
//! expert weights read, so the MoE model below is the same for both (an expectation:
//! the routing is not in the trace).

use super::super::model::{Dims, OpArgs, TraceModel};
use super::super::ops::OpModel;
use super::attention::is_paged_attention;
use super::moe::{moe_model, MoeShape};
use crate::model::ModelConfig;

/// The query heads one attention call holds (`query [T, Hq, d]`, or `[T, Hq·d]` split
/// by the config's head size).
fn local_heads(a: &OpArgs, cfg: &ModelConfig) -> Option<u64> {
    match a.input_dims.first()? {
        Dims::Tensor(d) if d.len() == 3 => u64::try_from(d[1]).ok(),
        Dims::Tensor(d) if d.len() == 2 && cfg.head_dim > 0 => {
            let w = u64::try_from(d[1]).ok()?;
            (w % cfg.head_dim == 0).then_some(w / cfg.head_dim)
        }
        _ => None,
    }
}

/// The tensor/expert-parallel degree the trace's attention shapes imply for `cfg`.
///
/// # Errors
/// When no attention op records its query heads, or they do not divide the config's.
pub(crate) fn parallel_degree(model: &TraceModel, cfg: &ModelConfig) -> Result<u64, String> {
    let local = model
        .ops
        .iter()
        .filter(|o| is_paged_attention(&o.name))
        .find_map(|o| local_heads(&o.args, cfg));
    match local {
        Some(h) if h > 0 && cfg.num_heads.is_multiple_of(h) => Ok(cfg.num_heads / h),
        Some(h) => Err(format!(
            "the trace's attention holds {h} query heads, which does not divide the config's {}",
            cfg.num_heads
        )),
        None if model.world_size == Some(1) => Ok(1),
        None => Err("the tensor/expert-parallel degree is not in the trace: no attention op \
                     records its query heads"
            .to_string()),
    }
}

fn tensor(a: &OpArgs, i: usize) -> Option<&[i64]> {
    match a.input_dims.get(i)? {
        Dims::Tensor(d) if !d.is_empty() => Some(d),
        _ => None,
    }
}

/// The MoE model of `moe_forward` call `op` with the sizes of `cfg`, split `parallel`
/// ways.
///
/// # Errors
/// When the config has no experts, the trace's shapes disagree with it, or the
/// parallel degree is unknown or does not divide the expert width.
#[allow(clippy::many_single_char_names)]
pub(crate) fn moe(
    model: &TraceModel,
    op: usize,
    cfg: &ModelConfig,
    parallel: &Result<u64, String>,
) -> Result<OpModel, String> {
    let o = model.ops.get(op).ok_or("no such op")?;
    let moe = cfg.moe.as_ref().ok_or_else(|| {
        format!("the model config ({}) describes no mixture of experts", cfg.source)
    })?;
    if &*o.name == "vllm::moe_forward_shared" && moe.shared_expert_intermediate_size.is_some() {
        return Err("shared experts are not modelled from the config".to_string());
    }
    let x = tensor(&o.args, 0).ok_or("argument 0 (hidden_states) has no recorded shape")?;
    let logits = tensor(&o.args, 1).ok_or("argument 1 (router_logits) has no recorded shape")?;
    if x.len() != 2 || logits.len() != 2 {
        return Err(format!(
            "expected hidden_states [T, H] and router_logits [T, E], got {x:?}, {logits:?}"
        ));
    }
    let tokens = u64::try_from(x[0]).map_err(|_| format!("T is {}", x[0]))?;
    let hp = u64::try_from(x[1]).unwrap_or(0);
    let e = u64::try_from(logits[1]).unwrap_or(0);
    if e != moe.experts {
        return Err(format!(
            "router_logits has {e} experts, the model config ({}) {}",
            cfg.source, moe.experts
        ));
    }
    if hp < cfg.hidden_size {
        return Err(format!(
            "hidden_states is {hp} wide, less than the config's hidden size {}",
            cfg.hidden_size
        ));
    }
    let p = parallel.clone()?;
    let width = moe.expert_intermediate_size;
    if p == 0 || width % p != 0 {
        return Err(format!("the expert width {width} does not split {p} ways"));
    }
    let act = o.args.input_types.first().cloned().unwrap_or_default();
    let bits = super::super::ops::dtype_bytes(&act).map_or(16, |b| b * 8);
    let s = MoeShape {
        tokens,
        hidden: cfg.hidden_size,
        inter: width / p,
        experts: e,
        topk: moe.experts_per_token,
        gated: true,
        act_dtype: act.clone(),
        weight_dtype: format!("{act} (assumed)"),
        weight_bits: bits,
    };
    let mut m = moe_model(&s);
    m.work.assumptions.push(format!(
        "sizes from the model config {} (H = {}, I = {width}, E = {e}, k = {}), split {p} ways \
         (tensor or expert parallel, from the attention heads)",
        cfg.source, cfg.hidden_size, moe.experts_per_token
    ));
    m.work.assumptions.push(format!(
        "the expert weights are not in the trace: taken in the activations' type ({act}); \
         quantised weights move fewer bytes"
    ));
    Ok(m)
}

/// Attention arguments with a flattened query, key and value (`[T, H·d]`) reshaped to
/// `[T, H, d]` with the config's head size; `None` when nothing needs reshaping.
pub fn unflatten_attention(name: &str, a: &OpArgs, cfg: &ModelConfig) -> Option<OpArgs> {
    if !name.contains("unified_attention") || cfg.head_dim == 0 {
        return None;
    }
    let d = i64::try_from(cfg.head_dim).ok()?;
    let mut out = a.clone();
    let mut changed = false;
    for i in 0..4.min(out.input_dims.len()) {
        if let Dims::Tensor(s) = &out.input_dims[i] {
            if s.len() == 2 && s[1] % d == 0 && s[1] > 0 {
                out.input_dims[i] = Dims::Tensor(vec![s[0], s[1] / d, d]);
                changed = true;
            }
        }
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::MoeConfig;
    use crate::trace::model::CpuOp;

    fn gpt_oss_20b() -> ModelConfig {
        // openai/gpt-oss-20b config.json: hidden_size 2880, intermediate_size 2880,
        // num_local_experts 32, num_experts_per_tok 4, 64 query heads, 8 KV heads of 64.
        ModelConfig {
            name: "gpt-oss-20b".to_string(),
            source: "config.json".to_string(),
            model_type: Some("gpt_oss".to_string()),
            hidden_size: 2880,
            intermediate_size: 2880,
            num_layers: 24,
            num_heads: 64,
            num_kv_heads: 8,
            head_dim: 64,
            vocab_size: 201_088,
            tie_word_embeddings: false,
            qkv_bias: true,
            moe: Some(MoeConfig {
                experts: 32,
                experts_per_token: 4,
                expert_intermediate_size: 2880,
                shared_expert_intermediate_size: None,
            }),
            sliding_window: Some(128),
            max_position_embeddings: Some(131_072),
            notes: Vec::new(),
        }
    }

    fn op(name: &str, dims: &[&[i64]]) -> CpuOp {
        CpuOp {
            name: name.into(),
            args: OpArgs {
                input_dims: dims.iter().map(|d| Dims::Tensor(d.to_vec())).collect(),
                input_types: vec!["c10::BFloat16".to_string(); dims.len()],
                ..OpArgs::default()
            }
            .into(),
            ..CpuOp::default()
        }
    }

    #[test]
    fn moe_forward_from_config_by_hand() {
        let cfg = gpt_oss_20b();
        // Tensor parallel 2: each rank's attention holds 32 of the 64 query heads.
        let model = TraceModel {
            ops: vec![
                op("vllm::unified_attention_with_output", &[&[16, 32, 64], &[16, 4, 64]]),
                op("vllm::moe_forward", &[&[16, 3072], &[16, 32]]),
            ],
            ..TraceModel::default()
        };
        let p = parallel_degree(&model, &cfg);
        assert_eq!(p, Ok(2));
        let m = moe(&model, 1, &cfg, &p).unwrap();
        // T=16, k=4, H=2880, I/p = 1440, gated N1 = 2880:
        // 2·16·4·2880·2880 + 2·16·4·1440·2880 + 16·2880·(2·4 − 1)
        // = 1_061_683_200 + 530_841_600 + 322_560.
        assert_eq!(m.flops, 1_592_847_360.0);
        // E_active = 32·(1 − (28/32)^16); weights (2880·2880 + 2880·1440)·2 B each;
        // activations 16·2880·2 in and out.
        let e_active = 32.0 * (1.0 - (28.0f64 / 32.0).powi(16));
        let want = 2.0 * 16.0 * 2880.0 * 2.0 + e_active * (2880.0 * 2880.0 + 2880.0 * 1440.0) * 2.0;
        assert!((m.bytes - want).abs() < 1e-3 * want.abs().max(1.0), "{} vs {want}", m.bytes);
        // Wrong expert count: refused with both numbers.
        let bad = TraceModel {
            ops: vec![op("vllm::moe_forward", &[&[16, 2880], &[16, 128]])],
            ..TraceModel::default()
        };
        let e = moe(&bad, 0, &cfg, &Ok(1)).unwrap_err();
        assert!(e.contains("128") && e.contains("32"), "{e}");
        // No attention op: the degree is unknown, and said so.
        assert!(parallel_degree(&bad, &cfg).is_err());
    }

    #[test]
    fn flattened_heads_are_split_by_the_head_size() {
        let cfg = gpt_oss_20b();
        let a = op("vllm::unified_attention_with_output", &[&[8, 4096], &[8, 512], &[8, 512]]);
        let u = unflatten_attention(&a.name, &a.args, &cfg).unwrap();
        assert_eq!(u.input_dims[0], Dims::Tensor(vec![8, 64, 64]));
        assert_eq!(u.input_dims[1], Dims::Tensor(vec![8, 8, 64]));
        let model = TraceModel { ops: vec![a], ..TraceModel::default() };
        assert_eq!(parallel_degree(&model, &cfg), Ok(1));
    }
}

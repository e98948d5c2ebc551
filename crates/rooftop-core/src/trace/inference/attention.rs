//! Paged attention of inference engines, from the op's shapes and its step's sums.
//!
//! Ops read: `vllm::unified_attention_with_output`, `vllm::unified_attention`
//! (`query [T, Hq, d]`, `key [T, Hkv, d]`, `value [T, Hkv, dv]`), `sglang` twins, and
//! `_C::paged_attention_v1` / `_v2` (`query` at argument 1 / 4, `num_kv_heads` as a
//! concrete input). The key lengths are not in an op's arguments (they live in the
//! engine's attention metadata): they come from the step annotation around the call
//! ([`super::steps`], detailed formats), which states for the step's prefill and decode
//! requests `Σsq`, `Σsk`, `Σsq²`, `Σsq·sk`. Every attention call of a step runs over the
//! whole batch, so each gets the step's sums; without them the call has no model.
//! Missing is missing: a group with requests whose sums are not stated, or a query dtype
//! whose element size or roof is not known, leaves the call unmodelled with the reason
//! (shown as "—"), never a key length of 0 or a guessed bf16.
//!
//! Model (TraceLens `InferenceAttention`; causal masking):
//! - (query, key) pairs: `Σsq·sk − (Σsq² − Σsq)/2` over both groups (a request attends
//!   to its `sk − sq` cached tokens and causally to its `sq` new ones);
//! - FLOPs: `2·Hq·(d + dv)·pairs`;
//! - bytes: queries and outputs `Σsq·Hq·(d + dv)`, cached keys and values
//!   `Σsk·Hkv·(d + dv)`, at the element size of the query.

use super::super::model::{Dims, OpArgs};
use super::super::ops::{dtype_bytes, dtype_precision, OpModel, ParamValue, Params, Table};
use super::steps::{Group, StepInfo};
use crate::ops::{OpClass, Work};
use crate::units::ExecUnit;

/// Where the query is, and where the kv heads are stated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// q, k, v at 0, 1, 2.
    Unified,
    /// `paged_attention_v1`: query at 1, `num_kv_heads` concrete at 4.
    PagedV1,
    /// `paged_attention_v2`: query at 4, `num_kv_heads` concrete at 7.
    PagedV2,
}

fn layout(name: &str) -> Option<Layout> {
    match name {
        "vllm::unified_attention_with_output"
        | "vllm::unified_attention"
        | "sglang::unified_attention_with_output" => Some(Layout::Unified),
        "_C::paged_attention_v1" | "_rocm_C::paged_attention_v1" => Some(Layout::PagedV1),
        "_C::paged_attention_v2" | "_rocm_C::paged_attention" => Some(Layout::PagedV2),
        _ => None,
    }
}

/// Whether `name` is a paged-attention op this module models.
pub fn is_paged_attention(name: &str) -> bool {
    layout(name).is_some()
}

/// Heads and head sizes: `(T, Hq, d, Hkv, dv, dtype)`.
fn heads(name: &str, a: &OpArgs) -> Result<(u64, u64, u64, u64, u64, String), String> {
    let t3 = |i: usize| -> Result<[u64; 3], String> {
        match a.input_dims.get(i) {
            Some(Dims::Tensor(d)) if d.len() == 3 && d.iter().all(|&x| x > 0) => {
                Ok([d[0] as u64, d[1] as u64, d[2] as u64])
            }
            other => Err(format!(
                "argument {i} of `{name}` is {other:?}, expected a [tokens, heads, head size] tensor"
            )),
        }
    };
    let lay = layout(name).ok_or_else(|| format!("`{name}` is not a paged-attention op"))?;
    let (q, hkv, dv) = match lay {
        Layout::Unified => {
            let (q, k, v) = (t3(0)?, t3(1)?, t3(2)?);
            if k[1] != v[1] || k[2] != q[2] {
                return Err(format!("key {k:?} and value {v:?} do not fit query {q:?}"));
            }
            (q, k[1], v[2])
        }
        Layout::PagedV1 | Layout::PagedV2 => {
            let (qi, ci) = if lay == Layout::PagedV1 { (1, 4) } else { (4, 7) };
            let q = t3(qi)?;
            let hkv: u64 = a
                .concrete_inputs
                .get(ci)
                .and_then(|s| s.trim().parse().ok())
                .filter(|&h: &u64| h > 0)
                .ok_or_else(|| format!("num_kv_heads (concrete input {ci}) is not recorded"))?;
            (q, hkv, q[2])
        }
    };
    let qi = match lay {
        Layout::Unified => 0,
        Layout::PagedV1 => 1,
        Layout::PagedV2 => 4,
    };
    let dtype = a.input_types.get(qi).cloned().unwrap_or_default();
    Ok((q[0], q[1], q[2], hkv, dv, dtype))
}

/// `(Σsk, Σsq², Σsq·sk)` of one group of the step; a group without requests adds nothing.
fn group_sums(g: &Group, which: &str, format: &str) -> Result<(f64, f64, f64), String> {
    match (g.sk, g.sqsq, g.sqsk) {
        (Some(sk), Some(sqsq), Some(sqsk)) => Ok((sk as f64, sqsq as f64, sqsk as f64)),
        _ if g.requests == 0 && g.sq == 0 => Ok((0.0, 0.0, 0.0)),
        _ => Err(format!(
            "the step annotation ({format}) does not state the key lengths of its {} {which} \
             requests (Σsk, Σsq², Σsq·sk), so the attention's (query, key) pairs are unknown",
            g.requests
        )),
    }
}

/// The model of one paged-attention call in a step with `step`'s sums.
///
/// # Errors
/// When the shapes do not fit, the step does not state its sums, or the query's dtype
/// has no known element size and roof.
// The formula's own letters (T, H, d) read best as they are written.
#[allow(clippy::many_single_char_names)]
pub(crate) fn attention_model(
    name: &str,
    a: &OpArgs,
    step: Option<&StepInfo>,
) -> Result<OpModel, String> {
    let (t, hq, d, hkv, dv, dtype) = heads(name, a)?;
    let step = step.filter(|s| s.has_sums()).ok_or_else(|| {
        "the key lengths are not in the op's arguments and no detailed step annotation \
         (vLLM `execute_N_context_…(sq…sk…)`, SGLang `step[… g_sqsk=…]`) states them"
            .to_string()
    })?;
    let (p, dq) = (&step.prefill, &step.decode);
    let (p_sk, p_sqsq, p_sqsk) = group_sums(p, "prefill", step.format)?;
    let (d_sk, d_sqsq, d_sqsk) = group_sums(dq, "decode", step.format)?;
    let sq = (p.sq + dq.sq) as f64;
    let sk = p_sk + d_sk;
    let sqsk = p_sqsk + d_sqsk;
    let sqsq = p_sqsq + d_sqsq;
    let pairs = sqsk - (sqsq - sq) / 2.0;
    let (hq_f, hkv_f, dd) = (hq as f64, hkv as f64, (d + dv) as f64);
    let flops = 2.0 * hq_f * dd * pairs;
    let unknown_dtype = || {
        if dtype.is_empty() {
            "the query's dtype is not recorded (record_shapes), so the bytes per element and \
             the roof are unknown"
                .to_string()
        } else {
            format!("the query's dtype `{dtype}` has no known element size and roof")
        }
    };
    let (Some(bytes_per_element), Some(precision)) = (dtype_bytes(&dtype), dtype_precision(&dtype))
    else {
        return Err(unknown_dtype());
    };
    let bpe = f64::from(bytes_per_element);
    let read = sq * hq_f * d as f64 * bpe + sk * hkv_f * dd * bpe;
    let written = sq * hq_f * dv as f64 * bpe;
    let work = Work {
        class: OpClass::Attention,
        shape: format!("T={t} Hq={hq} Hkv={hkv} d={d} Σsq={sq} Σsk={sk}"),
        flops,
        precision,
        unit: ExecUnit::Matrix,
        bytes_read: read,
        bytes_written: written,
        flops_formula: format!(
            "2*Hq*(d+dv)*(Σsq·sk − (Σsq² − Σsq)/2) = 2*{hq}*{}*({sqsk} − ({sqsq} − {sq})/2)",
            d + dv
        ),
        bytes_formula: format!(
            "Σsq*Hq*(d+dv)*{bpe} + Σsk*Hkv*(d+dv)*{bpe} = {sq}*{hq}*{}*{bpe} + {sk}*{hkv}*{}*{bpe}",
            d + dv,
            d + dv
        ),
        assumptions: vec![
            format!("key lengths from the step annotation ({})", step.format),
            "causal: each request attends to its cached tokens and causally to its new ones"
                .to_string(),
            "each K/V block read once per call".to_string(),
        ],
    };
    let mut params = Params::default();
    for (k, v) in [("tokens", t), ("heads_q", hq), ("heads_kv", hkv), ("head_dim", d)] {
        params.0.push((k, ParamValue::Int(i64::try_from(v).unwrap_or(i64::MAX))));
    }
    for (k, v) in [("sum_sq", sq), ("sum_sk", sk)] {
        params.0.push((k, ParamValue::Int(v as i64)));
    }
    params.0.push(("phase", ParamValue::Str(step.phase().as_str().to_string())));
    params.0.push(("dtypes", ParamValue::Dtypes(vec![Some(dtype)])));
    Ok(OpModel {
        table: Table::InferenceAttention,
        params,
        flops,
        bytes: read + written,
        work,
        gemm: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::inference::steps::parse_step;

    #[test]
    fn tracelens_vllm_decode_row() {
        // TraceLens tests/traces/inference/vllm_decode_full/perf_csvs/InferenceAttention_fwd.csv
        // (AMD-AGI/TraceLens, MIT): vllm::unified_attention_with_output with Input Dims
        // ((32, 64, 64), (32, 8, 64), (32, 8, 64), (32, 64, 64), ...), decode g_sq = 32,
        // g_sk = 55086: GFLOPS_first 0.902529024, Data Moved 108.08984375 MB (2^20).
        let a = OpArgs {
            input_dims: [&[32, 64, 64][..], &[32, 8, 64], &[32, 8, 64], &[32, 64, 64]]
                .iter()
                .map(|d| Dims::Tensor(d.to_vec()))
                .collect(),
            input_types: vec!["c10::BFloat16".to_string(); 4],
            ..OpArgs::default()
        };
        let step = parse_step(
            "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)",
        )
        .unwrap();
        let m = attention_model("vllm::unified_attention_with_output", &a, Some(&step)).unwrap();
        assert_eq!(m.flops, 0.902_529_024e9);
        assert_eq!(m.bytes, 108.089_843_75 * 1_048_576.0);
        assert!(attention_model("vllm::unified_attention_with_output", &a, None).is_err());
    }

    fn decode_args(dtype: &str) -> OpArgs {
        OpArgs {
            input_dims: [&[32, 64, 64][..], &[32, 8, 64], &[32, 8, 64]]
                .iter()
                .map(|d| Dims::Tensor(d.to_vec()))
                .collect(),
            input_types: vec![dtype.to_string(); 3],
            ..OpArgs::default()
        }
    }

    #[test]
    fn a_key_length_the_step_does_not_state_is_unknown_not_zero() {
        // SGLang's detailed decode step without `g_sk`: 64 decode requests whose key
        // lengths are not stated. Counting them as 0 would drop every cached key and value
        // from the bytes; the call is unmodelled instead, with the reason.
        let step =
            parse_step("step[DECODE bs=64 g_sq=64 g_sqsq=64 g_sqsk=131072]").expect("a step");
        let e = attention_model(
            "sglang::unified_attention_with_output",
            &decode_args("c10::BFloat16"),
            Some(&step),
        )
        .unwrap_err();
        assert!(e.contains("key lengths of its 64 decode requests"), "{e}");
        // The prefill group has no requests: its absent sums add nothing, and the stated
        // decode sums give the model (2·64·128·(131072 − (64 − 64)/2) FLOPs).
        let step = parse_step("step[DECODE bs=64 g_sq=64 g_sk=131072 g_sqsq=64 g_sqsk=131072]")
            .expect("a step");
        let m = attention_model(
            "sglang::unified_attention_with_output",
            &decode_args("c10::BFloat16"),
            Some(&step),
        )
        .unwrap();
        assert_eq!(m.flops, 2.0 * 64.0 * 128.0 * 131_072.0);
    }

    #[test]
    fn an_unknown_or_unrecorded_dtype_is_unknown_not_bf16() {
        let step = parse_step(
            "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)",
        )
        .expect("a step");
        let name = "vllm::unified_attention_with_output";
        let e =
            attention_model(name, &decode_args("c10::Float4_e2m1fn_x2"), Some(&step)).unwrap_err();
        assert!(e.contains("`c10::Float4_e2m1fn_x2` has no known element size"), "{e}");
        let e = attention_model(name, &decode_args(""), Some(&step)).unwrap_err();
        assert!(e.contains("dtype is not recorded"), "{e}");
        // A known dtype still models: fp32 doubles the bf16 bytes of the TraceLens row
        // (108.08984375 MiB, `tracelens_vllm_decode_row`).
        let m = attention_model(name, &decode_args("float"), Some(&step)).unwrap();
        assert_eq!(m.work.precision, crate::units::Precision::Fp32);
        assert_eq!(m.bytes, 2.0 * 108.089_843_75 * 1_048_576.0);
    }
}

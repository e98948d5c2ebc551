//! Attention ops (the `aten` SDPA forwards and backwards, `flash_attn`): TraceLens
//! `SDPA_fwd` / `SDPA_bwd`.

use super::args::{
    as_i64, bpe_of, custom_work, finish, mul, parse_bool, sum, to_u64, udim, Args, R,
};
use super::{
    dtype_precision, AttentionSpec, CausalMode, ExecUnit, Kind, OpClass, OpModel, ParamValue,
    Params, Pass, Precision, Table,
};

// --- SDPA ------------------------------------------------------------------------------

/// TraceLens `SDPA`: FLOPs `2*B*H_Q*N_Q*N_KV*(d_qk + d_v)` (the two matmuls; the softmax is
/// not counted); bytes `(Q + K + V + O)*bpe`. Causal masks count the exact unmasked pairs
/// (top-left for `aten::` SDPA, bottom-right for `flash_attn`), where TraceLens halves.
#[allow(clippy::many_single_char_names)]
pub(super) fn sdpa(kind: Kind, a: &Args) -> R<OpModel> {
    // Axis order of (B, H, N, d) in the recorded shapes, index of q.
    let (q0, idx, dropout_i, causal_i, flash, mode, bwd) = match kind {
        Kind::SdpaBhnd { dropout, causal, flash } => {
            (0, [0, 1, 2, 3], dropout, causal, flash, CausalMode::TopLeft, false)
        }
        Kind::SdpaBwd { dropout, causal, flash } => {
            (1, [0, 1, 2, 3], dropout, causal, flash, CausalMode::TopLeft, true)
        }
        Kind::FlashAttn { dropout, causal } => {
            (0, [0, 2, 1, 3], dropout, causal, true, CausalMode::BottomRight, false)
        }
        _ => return Err("not an attention op".to_string()),
    };
    let (q, k, v) = (a.dims(q0)?, a.dims(q0 + 1)?, a.dims(q0 + 2)?);
    if q.len() != 4 || k.len() != 4 || v.len() != 4 {
        return Err(format!("attention expects 4-D q, k, v; got {q:?}, {k:?}, {v:?}"));
    }
    let g = |s: &[i64], j: usize, w: &str| udim(s, idx[j], w);
    let (b, hq, nq, dqk) =
        (g(&q, 0, "B")?, g(&q, 1, "H_Q")?, g(&q, 2, "N_Q")?, g(&q, 3, "d_h_qk")?);
    let (bk, hkv, nkv, dk) = (g(&k, 0, "B")?, g(&k, 1, "H_KV")?, g(&k, 2, "N_KV")?, g(&k, 3, "d")?);
    let (bv, hv, nv, dv) = (g(&v, 0, "B")?, g(&v, 1, "H_V")?, g(&v, 2, "N_V")?, g(&v, 3, "d_h_v")?);
    if b != bk || b != bv || hkv != hv || nkv != nv || dqk != dk {
        return Err(format!("q, k, v shapes do not match: {q:?}, {k:?}, {v:?}"));
    }
    let dropout = a.concrete(dropout_i).and_then(|s| s.trim().parse::<f64>().ok()).unwrap_or(0.0);
    let causal = parse_bool(a.concrete(causal_i)).unwrap_or(false);
    let tq = a.dtype(q0)?;
    let tk = a.dtype(q0 + 1)?;
    let bpe = bpe_of(&tq)?;
    let mode = if causal { mode } else { CausalMode::None };
    let pairs =
        crate::ops::attention::unmasked_pairs(to_u64(nq, "N_Q")?, to_u64(nkv, "N_KV")?, mode);
    let flops = mul(&[2, b, hq, pairs, sum(&[dqk, dv])?])?;
    let precision = dtype_precision(&tq);
    let core = precision.and_then(|p| {
        let spec = AttentionSpec {
            batch: u64::try_from(b).ok()?,
            heads_q: u64::try_from(hq).ok()?,
            heads_kv: u64::try_from(hkv).ok()?,
            seq_q: u64::try_from(nq).ok()?,
            seq_kv: u64::try_from(nkv).ok()?,
            head_dim: u64::try_from(dqk).ok()?,
            head_dim_v: Some(u64::try_from(dv).ok()?),
            causal: mode,
            dtype: p,
            pass: if bwd { Pass::Backward } else { Pass::Forward },
        };
        spec.work().ok()
    });
    let read = mul(&[
        b,
        sum(&[mul(&[nq, hq, dqk])?, mul(&[nkv, hkv, dqk])?, mul(&[nkv, hkv, dv])?])?,
        bpe,
    ])?;
    let written = mul(&[b, nq, hq, dv, bpe])?;
    if bwd {
        // The backward pass is the core model's (five matmuls with the recompute of S,
        // the reads of O, dO and the logsumexp); see the module docs.
        let work = core.ok_or_else(|| format!("no backward attention model for dtype `{tq}`"))?;
        return Ok(finish(
            Table::SdpaBwd,
            sdpa_params(&[b, nq, hq, nkv, hkv, dqk, dv], dropout, causal, flash, tq, tk),
            work,
            None,
        ));
    }
    let work = match core {
        // The core model skips rows of Q/K/V a causal mask never uses; take it whenever
        // its FLOPs agree (it is the same count) and keep its exact bytes.
        Some(w) if w.flops == flops as f64 => w,
        _ => custom_work(
            OpClass::Attention,
            format!("B={b} H_Q={hq} H_KV={hkv} N_Q={nq} N_KV={nkv} d={dqk}/{dv}"),
            flops,
            format!("2*B*H_Q*pairs*(d_qk + d_v) = 2*{b}*{hq}*{pairs}*({dqk} + {dv})"),
            precision.unwrap_or(Precision::Fp32),
            if precision.is_none_or(|p| p == Precision::Fp32) {
                ExecUnit::Vector
            } else {
                ExecUnit::Matrix
            },
            read,
            written,
            format!("(Q + K + V)*{bpe} read + O*{bpe} written = {read} + {written} B"),
            vec!["the score matrix stays on chip (fused attention)".to_string()],
        ),
    };
    let p = sdpa_params(&[b, nq, hq, nkv, hkv, dqk, dv], dropout, causal, flash, tq, tk);
    Ok(finish(Table::SdpaFwd, p, work, None))
}

fn sdpa_params(
    dims: &[u128; 7],
    dropout: f64,
    causal: bool,
    flash: bool,
    tq: String,
    tk: String,
) -> Params {
    let mut p = Params::default();
    for (name, &d) in ["B", "N_Q", "H_Q", "N_KV", "H_KV", "d_h_qk", "d_h_v"].into_iter().zip(dims) {
        p.push(name, ParamValue::Int(as_i64(d)));
    }
    p.push("dropout", ParamValue::Float(dropout));
    p.push("causal", ParamValue::Bool(causal));
    p.push("flash_impl", ParamValue::Bool(flash));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(tq), Some(tk)]));
    p
}

//! Scaled dot-product attention, `O = softmax(Q·Kᵀ·scale + mask)·V`, as a fused
//! (FlashAttention-style) kernel: the Sq×Skv score matrix never reaches DRAM.
//!
//! FLOPs count the matmuls only (2 per multiply-add), as FlashAttention's
//! `benchmark_flash_attention.py` and TraceLens `SDPA.flops_func` do; the softmax's
//! exponentials are not counted. With `pairs` the unmasked (query, key) pairs per
//! (batch, head):
//! - forward: `2*B*Hq*pairs*D` (Q·Kᵀ) + `2*B*Hq*pairs*Dv` (P·V) = `4*B*Hq*Sq*Skv*D`
//!   without a mask and with `Dv = D`;
//! - backward: five matmuls — recompute S = Q·Kᵀ, dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K,
//!   dK = dSᵀ·Q — `2*B*Hq*pairs*(3*D + 2*Dv)`, 2.5× the forward when `Dv = D` (the
//!   FlashAttention-2 paper's accounting; TraceLens `flops_bwd_func` with `flash_impl`).
//!
//! Causal masks count the unmasked pairs exactly with a closed form (no loop), for both
//! alignments when Sq ≠ Skv: top-left (PyTorch SDPA `is_causal`: query i sees keys
//! j ≤ i) and bottom-right (FlashAttention ≥ 2.1: query i sees keys j ≤ i + Skv − Sq).
//!
//! Bytes (minimum DRAM traffic): forward reads Q, K, V (K and V with `heads_kv` heads for
//! GQA/MQA) and writes O; backward reads Q, K, V, O, dO and the fp32 logsumexp and
//! writes dQ, dK, dV. Rows of Q (and O, dO, logsumexp) whose query sees no key, and
//! rows of K/V that no query sees, are not read; outputs are written in full.

use super::count::{self, bpe, default_matmul_unit, dim, Terms};
use super::{OpClass, OpError, Work};
use crate::units::Precision;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// Which (query, key) pairs a causal mask keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum CausalMode {
    /// No mask: every query sees every key.
    #[default]
    None,
    /// Query i sees keys j ≤ i (PyTorch `scaled_dot_product_attention(is_causal=True)`,
    /// a `tril` of the Sq×Skv matrix).
    TopLeft,
    /// Query i sees keys j ≤ i + Skv − Sq (FlashAttention ≥ 2.1 `causal=True`: the last
    /// query sees every key; KV-cache decode).
    BottomRight,
}

impl CausalMode {
    fn label(self) -> &'static str {
        match self {
            CausalMode::None => "none",
            CausalMode::TopLeft => "top-left",
            CausalMode::BottomRight => "bottom-right",
        }
    }
}

/// Forward or backward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Pass {
    #[default]
    Forward,
    Backward,
}

/// A fused attention call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttentionSpec {
    /// Batch size B.
    pub batch: u64,
    /// Query heads Hq.
    pub heads_q: u64,
    /// Key/value heads Hkv (= Hq for MHA, 1 for MQA, a divisor of Hq for GQA).
    pub heads_kv: u64,
    /// Query length Sq (1 for single-token decode).
    pub seq_q: u64,
    /// Key/value length Skv (the KV-cache length in decode).
    pub seq_kv: u64,
    /// Head dimension D of Q and K.
    pub head_dim: u64,
    /// Head dimension Dv of V and O; `None` means `head_dim`.
    pub head_dim_v: Option<u64>,
    /// Causal mask and its alignment.
    pub causal: CausalMode,
    /// Storage precision of Q, K, V, O (and their gradients); the roof's precision.
    pub dtype: Precision,
    /// Forward or backward.
    pub pass: Pass,
}

/// `Σ_{t=lo}^{hi} clamp(t, 0, s)`, exactly (0 when `lo > hi`).
fn clamped_sum(lo: i128, hi: i128, s: u64) -> u128 {
    let s_i = i128::from(s);
    let s = u128::from(s);
    let mut total: u128 = 0;
    // t in [max(lo, 1), min(hi, s)] contributes t.
    let a = lo.max(1);
    let b = hi.min(s_i);
    if a <= b {
        let (a, b) = (a as u128, b as u128);
        let (sum_ends, n) = (a + b, b - a + 1);
        // One factor is even; halve it first so the product never exceeds the result.
        total += if sum_ends % 2 == 0 { (sum_ends / 2) * n } else { sum_ends * (n / 2) };
    }
    // t in [max(lo, s + 1), hi] contributes s.
    let c = lo.max(s_i + 1);
    if c <= hi {
        total += (hi - c + 1) as u128 * s;
    }
    total
}

/// Unmasked (query, key) pairs for one (batch, head): the closed form of
/// `Σ_{i<Sq} clamp(i + 1 + offset, 0, Skv)`, offset 0 (top-left) or Skv − Sq
/// (bottom-right). Never exceeds `Sq*Skv < 2^128`.
pub fn unmasked_pairs(seq_q: u64, seq_kv: u64, causal: CausalMode) -> u128 {
    let (sq, skv) = (u128::from(seq_q), u128::from(seq_kv));
    let offset: i128 = match causal {
        CausalMode::None => return sq * skv,
        CausalMode::TopLeft => 0,
        CausalMode::BottomRight => i128::from(seq_kv) - i128::from(seq_q),
    };
    clamped_sum(1 + offset, i128::from(seq_q) + offset, seq_kv)
}

/// (queries that see at least one key, keys seen by at least one query).
fn used_rows(seq_q: u64, seq_kv: u64, causal: CausalMode) -> (u64, u64) {
    match causal {
        CausalMode::None => (seq_q, seq_kv),
        // Every query sees key 0; the last query sees keys 0..=Sq-1.
        CausalMode::TopLeft => (seq_q, seq_q.min(seq_kv)),
        // The last query sees every key; queries i < Sq - Skv see none.
        CausalMode::BottomRight => (seq_q.min(seq_kv), seq_kv),
    }
}

impl AttentionSpec {
    /// The FLOPs and minimum DRAM bytes of this attention pass.
    // B, H, S, D are the names the formulas use.
    #[allow(clippy::many_single_char_names)]
    pub fn work(&self) -> Result<Work, OpError> {
        let b = dim("batch", self.batch)?;
        let hq = dim("heads_q", self.heads_q)?;
        let hkv = dim("heads_kv", self.heads_kv)?;
        let sq = dim("seq_q", self.seq_q)?;
        let skv = dim("seq_kv", self.seq_kv)?;
        let d = dim("head_dim", self.head_dim)?;
        let dv = dim("head_dim_v", self.head_dim_v.unwrap_or(self.head_dim))?;
        if hq % hkv != 0 {
            return Err(OpError::Invalid(format!(
                "heads_q ({}) must be a multiple of heads_kv ({}) for grouped-query attention",
                self.heads_q, self.heads_kv
            )));
        }
        let (bv, hqv, hkvv, sqv, skvv, dval) =
            (self.batch, self.heads_q, self.heads_kv, self.seq_q, self.seq_kv, self.head_dim);
        let dvv = self.head_dim_v.unwrap_or(dval);
        let x = self.dtype;
        let xb = u128::from(x.bits());
        let sx = bpe(x);

        let pairs = unmasked_pairs(sqv, skvv, self.causal);
        let pairs_sym = if self.causal == CausalMode::None { "Sq*Skv" } else { "pairs" };
        let pairs_num = if self.causal == CausalMode::None {
            format!("{sqv}*{skvv}")
        } else {
            pairs.to_string()
        };

        let mut flops = Terms::new();
        let mm = |label: &str,
                  t: &mut Terms,
                  hd_sym: &str,
                  hd: u128,
                  hd_num: u64|
         -> Result<(), OpError> {
            t.push(
                label,
                format!("2*B*Hq*{pairs_sym}*{hd_sym}"),
                format!("2*{bv}*{hqv}*{pairs_num}*{hd_num}"),
                count::mul("FLOPs", &[2, b, hq, pairs, hd])?,
            );
            Ok(())
        };
        match self.pass {
            Pass::Forward => {
                mm("Q·K^T", &mut flops, "D", d, dval)?;
                mm("P·V", &mut flops, "Dv", dv, dvv)?;
            }
            Pass::Backward => {
                mm("recompute Q·K^T", &mut flops, "D", d, dval)?;
                mm("dV = P^T·dO", &mut flops, "Dv", dv, dvv)?;
                mm("dP = dO·V^T", &mut flops, "Dv", dv, dvv)?;
                mm("dQ = dS·K", &mut flops, "D", d, dval)?;
                mm("dK = dS^T·Q", &mut flops, "D", d, dval)?;
            }
        }

        let (q_used, k_used) = used_rows(sqv, skvv, self.causal);
        let (qu, ku) = (u128::from(q_used), u128::from(k_used));
        let (sq_sym, sk_sym) =
            if self.causal == CausalMode::None { ("Sq", "Skv") } else { ("Sq_used", "Skv_used") };
        let mut read = Terms::new();
        let mut write = Terms::new();
        let q_term = |t: &mut Terms,
                      label: &str,
                      rows: u128,
                      rows_sym: &str,
                      rows_num: u64,
                      hd_sym: &str,
                      hd: u128,
                      hd_num: u64|
         -> Result<(), OpError> {
            t.push(
                label,
                format!("B*Hq*{rows_sym}*{hd_sym}*{sx}"),
                format!("{bv}*{hqv}*{rows_num}*{hd_num}*{sx}"),
                count::mul("bytes", &[b, hq, rows, hd, xb])?,
            );
            Ok(())
        };
        let kv_term = |t: &mut Terms,
                       label: &str,
                       rows: u128,
                       rows_sym: &str,
                       rows_num: u64,
                       hd_sym: &str,
                       hd: u128,
                       hd_num: u64|
         -> Result<(), OpError> {
            t.push(
                label,
                format!("B*Hkv*{rows_sym}*{hd_sym}*{sx}"),
                format!("{bv}*{hkvv}*{rows_num}*{hd_num}*{sx}"),
                count::mul("bytes", &[b, hkv, rows, hd, xb])?,
            );
            Ok(())
        };
        q_term(&mut read, "Q", qu, sq_sym, q_used, "D", d, dval)?;
        kv_term(&mut read, "K", ku, sk_sym, k_used, "D", d, dval)?;
        kv_term(&mut read, "V", ku, sk_sym, k_used, "Dv", dv, dvv)?;
        match self.pass {
            Pass::Forward => {
                q_term(&mut write, "O", sq, "Sq", sqv, "Dv", dv, dvv)?;
            }
            Pass::Backward => {
                q_term(&mut read, "O", qu, sq_sym, q_used, "Dv", dv, dvv)?;
                q_term(&mut read, "dO", qu, sq_sym, q_used, "Dv", dv, dvv)?;
                read.push(
                    "logsumexp",
                    format!("B*Hq*{sq_sym}*4"),
                    format!("{bv}*{hqv}*{q_used}*4"),
                    count::mul("bytes", &[b, hq, qu, 32])?,
                );
                q_term(&mut write, "dQ", sq, "Sq", sqv, "D", d, dval)?;
                kv_term(&mut write, "dK", skv, "Skv", skvv, "D", d, dval)?;
                kv_term(&mut write, "dV", skv, "Skv", skvv, "Dv", dv, dvv)?;
            }
        }

        let mut assumptions = vec![
            "fused kernel: the Sq×Skv scores and probabilities stay on chip; Q, K, V, O cross \
             DRAM once (re-reads of K/V tiles by different query blocks hit in L2)"
                .to_string(),
            "FLOPs are the matmuls only (2 per multiply-add); softmax exponentials are not counted"
                .to_string(),
        ];
        if self.heads_kv != self.heads_q {
            assumptions.push(format!(
                "grouped-query attention: {} query heads share each of {} K/V heads, which are read once",
                self.heads_q / self.heads_kv,
                self.heads_kv
            ));
        }
        match self.causal {
            CausalMode::None => {}
            mode => {
                assumptions.push(format!(
                    "causal mask aligned {}: {pairs} of {} (query, key) pairs per head are computed \
                     (closed form; fully masked tiles are skipped)",
                    mode.label(),
                    sq * skv
                ));
                if q_used != sqv || k_used != skvv {
                    assumptions.push(format!(
                        "only the {q_used} queries that see a key and the {k_used} keys seen by a \
                         query are read; outputs are written in full"
                    ));
                }
            }
        }
        match self.pass {
            Pass::Forward => assumptions.push(
                "inference form: a training forward also writes the fp32 logsumexp (B*Hq*Sq*4 B), \
                 not counted"
                    .to_string(),
            ),
            Pass::Backward => assumptions.push(
                "backward = 5 matmuls (S recomputed, dV, dP, dQ, dK): 2.5x the forward when Dv = D; \
                 reads Q, K, V, O, dO and the fp32 logsumexp, writes dQ, dK, dV; the dQ fp32 \
                 accumulator and the dO·O row-sum scratch of FlashAttention-2 are not counted"
                    .to_string(),
            ),
        }

        let mut shape = format!("B={bv} Hq={hqv} Hkv={hkvv} Sq={sqv} Skv={skvv} D={dval}");
        if dvv != dval {
            let _ = write!(shape, " Dv={dvv}");
        }
        let _ = write!(shape, " {x}");
        if self.causal != CausalMode::None {
            let _ = write!(shape, " causal={}", self.causal.label());
        }
        shape.push_str(match self.pass {
            Pass::Forward => " fwd",
            Pass::Backward => " bwd",
        });

        Ok(Work {
            class: OpClass::Attention,
            shape,
            flops: count::to_f64(flops.total("FLOPs")?),
            precision: x,
            unit: default_matmul_unit(x),
            bytes_read: count::bits_to_bytes(read.total("bytes read")?),
            bytes_written: count::bits_to_bytes(write.total("bytes written")?),
            flops_formula: flops.flops_formula("FLOPs")?,
            bytes_formula: count::rw_formula(&read, &write)?,
            assumptions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::ExecUnit;

    const MIB: f64 = 1_048_576.0;

    fn spec(b: u64, h: u64, sq: u64, skv: u64, d: u64) -> AttentionSpec {
        AttentionSpec {
            batch: b,
            heads_q: h,
            heads_kv: h,
            seq_q: sq,
            seq_kv: skv,
            head_dim: d,
            head_dim_v: None,
            causal: CausalMode::None,
            dtype: Precision::Bf16,
            pass: Pass::Forward,
        }
    }

    /// Brute force: count (i, j) with 0 <= i < sq, 0 <= j < skv allowed by the mask.
    fn brute(sq: u64, skv: u64, causal: CausalMode) -> u128 {
        let mut n = 0;
        for i in 0..i128::from(sq) {
            for j in 0..i128::from(skv) {
                let ok = match causal {
                    CausalMode::None => true,
                    CausalMode::TopLeft => j <= i,
                    CausalMode::BottomRight => j <= i + i128::from(skv) - i128::from(sq),
                };
                n += u128::from(ok);
            }
        }
        n
    }

    #[test]
    fn causal_pairs_match_brute_force() {
        for sq in 1..=24 {
            for skv in 1..=24 {
                for mode in [CausalMode::None, CausalMode::TopLeft, CausalMode::BottomRight] {
                    assert_eq!(
                        unmasked_pairs(sq, skv, mode),
                        brute(sq, skv, mode),
                        "sq={sq} skv={skv} {mode:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn causal_pairs_small_cases_by_hand() {
        // Sq = Skv = 4: both alignments keep the lower triangle, 4*5/2 = 10.
        assert_eq!(unmasked_pairs(4, 4, CausalMode::TopLeft), 10);
        assert_eq!(unmasked_pairs(4, 4, CausalMode::BottomRight), 10);
        // Sq=2, Skv=5. Top-left: query 0 sees {0}, query 1 sees {0,1}: 3.
        // Bottom-right: query 0 sees {0..=3}, query 1 sees {0..=4}: 4 + 5 = 9.
        assert_eq!(unmasked_pairs(2, 5, CausalMode::TopLeft), 3);
        assert_eq!(unmasked_pairs(2, 5, CausalMode::BottomRight), 9);
        // Sq=5, Skv=2. Top-left: 1 + 2 + 2 + 2 + 2 = 9. Bottom-right: queries 0..=2 see
        // nothing, query 3 sees {0}, query 4 sees {0,1}: 3.
        assert_eq!(unmasked_pairs(5, 2, CausalMode::TopLeft), 9);
        assert_eq!(unmasked_pairs(5, 2, CausalMode::BottomRight), 3);
        // Decode: one query against a 4096-token cache. Bottom-right sees all 4096 keys;
        // top-left sees only key 0.
        assert_eq!(unmasked_pairs(1, 4096, CausalMode::BottomRight), 4096);
        assert_eq!(unmasked_pairs(1, 4096, CausalMode::TopLeft), 1);
    }

    #[test]
    fn causal_pairs_do_not_overflow_at_u64_max() {
        let m = u128::from(u64::MAX);
        assert_eq!(unmasked_pairs(u64::MAX, u64::MAX, CausalMode::None), m * m);
        // S(S+1)/2 with S = 2^64 - 1 (odd, so (S+1)/2 = S/2 + 1).
        assert_eq!(unmasked_pairs(u64::MAX, u64::MAX, CausalMode::TopLeft), m * (m / 2 + 1));
        assert_eq!(unmasked_pairs(u64::MAX, 1, CausalMode::BottomRight), 1);
        assert_eq!(unmasked_pairs(1, u64::MAX, CausalMode::BottomRight), m);
    }

    #[test]
    fn forward_flops_and_bytes_by_hand() {
        // B=2 H=4 Sq=Skv=8 D=16 bf16: FLOPs 4*2*4*8*8*16 = 32,768;
        // bytes: Q, K, V read 3*2*4*8*16*2 = 6,144; O written 2*4*8*16*2 = 2,048.
        let w = spec(2, 4, 8, 8, 16).work().unwrap();
        assert_eq!(w.flops, 32_768.0);
        assert_eq!(w.bytes_read, 6_144.0);
        assert_eq!(w.bytes_written, 2_048.0);
        assert_eq!(w.unit, ExecUnit::Matrix);
        assert_eq!(w.shape, "B=2 Hq=4 Hkv=4 Sq=8 Skv=8 D=16 bf16 fwd");
    }

    #[test]
    fn gqa_and_value_head_dim() {
        // B=1 Hq=8 Hkv=2 Sq=Skv=4 D=16 Dv=8 fp16:
        // FLOPs 2*1*8*16*16 + 2*1*8*16*8 = 4,096 + 2,048 = 6,144.
        // read Q 1*8*4*16*2 = 1,024; K 1*2*4*16*2 = 256; V 1*2*4*8*2 = 128 -> 1,408.
        // write O 1*8*4*8*2 = 512.
        let w = AttentionSpec {
            heads_kv: 2,
            head_dim_v: Some(8),
            dtype: Precision::Fp16,
            ..spec(1, 8, 4, 4, 16)
        }
        .work()
        .unwrap();
        assert_eq!(w.flops, 6_144.0);
        assert_eq!(w.bytes_read, 1_408.0);
        assert_eq!(w.bytes_written, 512.0);
        let e = AttentionSpec { heads_kv: 3, ..spec(1, 8, 4, 4, 16) }.work().unwrap_err();
        assert!(matches!(e, OpError::Invalid(ref s) if s.contains("multiple of heads_kv")), "{e}");
    }

    #[test]
    fn backward_is_two_and_a_half_forward() {
        // Same shape as forward_flops_and_bytes_by_hand: 2.5 * 32,768 = 81,920.
        let w = AttentionSpec { pass: Pass::Backward, ..spec(2, 4, 8, 8, 16) }.work().unwrap();
        assert_eq!(w.flops, 81_920.0);
        // read Q, K, V, O, dO: 5*2*4*8*16*2 = 10,240 + logsumexp 2*4*8*4 = 256 -> 10,496
        assert_eq!(w.bytes_read, 10_496.0);
        // write dQ, dK, dV: 3*2,048 = 6,144
        assert_eq!(w.bytes_written, 6_144.0);
    }

    #[test]
    fn causal_decode_reads_only_what_is_seen() {
        // Decode, Sq=1, Skv=4096, B=1 H=32 D=128 bf16.
        let base = AttentionSpec { causal: CausalMode::BottomRight, ..spec(1, 32, 1, 4096, 128) };
        let w = base.work().unwrap();
        // bottom-right: the query sees all 4096 keys: 4*1*32*1*4096*128 = 67,108,864 FLOPs
        assert_eq!(w.flops, 67_108_864.0);
        // read Q 32*128*2 = 8,192 + K, V 2*32*4096*128*2 = 67,108,864
        assert_eq!(w.bytes_read, 67_117_056.0);
        // top-left: the query sees key 0 only: 4*32*1*128 = 16,384 FLOPs and reads one K/V row
        let w = AttentionSpec { causal: CausalMode::TopLeft, ..base }.work().unwrap();
        assert_eq!(w.flops, 16_384.0);
        assert_eq!(w.bytes_read, 8_192.0 + 2.0 * 32.0 * 128.0 * 2.0);
        assert!(w.assumptions.iter().any(|a| a.contains("top-left")));
    }

    #[test]
    fn causal_square_is_slightly_more_than_half() {
        // Sq = Skv = 197: 197*198/2 = 19,503 pairs, not 197^2/2 = 19,404.5 (TraceLens
        // halves the FLOPs when Sq == Skv and rejects causal with Sq != Skv).
        let w = AttentionSpec { causal: CausalMode::TopLeft, ..spec(4, 12, 197, 197, 64) }
            .work()
            .unwrap();
        assert_eq!(w.flops, 4.0 * 4.0 * 12.0 * 19_503.0 * 64.0);
        let full = spec(4, 12, 197, 197, 64).work().unwrap().flops;
        assert_eq!(w.flops / full, 198.0 / (2.0 * 197.0));
    }

    // TraceLens goldens (SDPA_fwd.csv, aten::_scaled_dot_product_flash_attention, not
    // causal, bf16): FLOPs 4*B*H*N*N*d, bytes (Q + K + V + O) elements * 2. We match.

    #[test]
    fn tracelens_falconsai_sdpa_fwd() {
        // tracelens_h100/Falconsai_nsfw_image_detection__1016002_perf_report_csvs/SDPA_fwd.csv
        // (same in tracelens_mi300): B=4 N_Q=N_KV=197 H_Q=H_KV=12 d=64 bf16,
        // GFLOPS_first=0.476884992, Data Moved (MB)_first=4.6171875
        let w = spec(4, 12, 197, 197, 64).work().unwrap();
        // 4*4*12*197*197*64 = 476,884,992
        assert_eq!(w.flops, 476_884_992.0);
        // 4 tensors * 4*12*197*64 * 2 = 4,841,472 B
        assert_eq!(w.bytes(), 4_841_472.0);
        assert_eq!(w.bytes() / MIB, 4.617_187_5);
    }

    #[test]
    fn tracelens_bert_sdpa_fwd() {
        // tracelens_h100/gaunernst_bert-small-uncased__1016001_perf_report_csvs/SDPA_fwd.csv
        // (same in tracelens_mi300): B=1 N=141 H=8 d=64 bf16,
        // GFLOPS_first=0.040716288, Data Moved (MB)_first=0.55078125
        let w = spec(1, 8, 141, 141, 64).work().unwrap();
        assert_eq!(w.flops, 40_716_288.0);
        assert_eq!(w.bytes() / MIB, 0.550_781_25);
    }
}

//! Worked figures in circulation that span several work models, recomputed with ours
//! (docs/reference/formulas.md discusses each). Where a figure does not follow from its
//! own formulas the test says so with the arithmetic; the models are not bent to match.

use super::attention::{AttentionSpec, CausalMode, Pass};
use super::elementwise::ElementwiseSpec;
use super::gemm::GemmSpec;
use super::norm::RmsNormSpec;
use super::quant::{QuantGemmSpec, WeightFormat};
use crate::units::Precision;

#[test]
fn decode_3bit_gemm_rates_at_42us() {
    // The decode-GEMM example of docs/reference/formulas.md#quantized-weights-q4_0-q8_0-int-g:
    // M=1 N=K=4096 3-bit g128, 0.042 ms, given in circulation as "1.63 TFLOPS, 285 GB/s".
    let w = QuantGemmSpec {
        m: 1,
        n: 4096,
        k: 4096,
        act_dtype: Precision::Fp16,
        format: WeightFormat::Affine {
            bits: 3,
            group_size: 128,
            scale_dtype: Precision::Fp16,
            zero_point: false,
        },
        out_dtype: None,
    }
    .work()
    .unwrap();
    let t = 42e-6;
    // 33,554,432 FLOP / 42 µs = 0.799 TFLOP/s, not 1.63 (which is 2.04× that).
    assert!((w.flops / t / 1e12 - 0.7989).abs() < 1e-4);
    // 6,569,984 B / 42 µs = 156 GB/s, not 285 (285 GB/s × 42 µs = 12.0 MB, which no
    // byte formula of that example produces for this shape).
    assert!((w.bytes() / t / 1e9 - 156.43).abs() < 0.01);
}

#[test]
fn llama2_7b_single_token_layer_bytes() {
    // A per-layer table in circulation (docs/reference/formulas.md#a-7b-models-bytes-per-token)
    // claims, per layer of a 7B model for one token: QKV projection
    // 184 MB read + 184 MB written, output projection 184 MB + 8 MB, 1.1 GB per layer and
    // 36 GB per token. Llama-2-7B (d = 4096, 32 heads × 128) in fp16 with a 4096-token
    // KV cache gives:
    let qkv = GemmSpec::new(1, 3 * 4096, 4096, Precision::Fp16).work().unwrap();
    // read 4096*12288*2 + 4096*2 = 100,671,488 B; write 12288*2 = 24,576 B (not 184 MB:
    // one token's Q, K and V are 12,288 values).
    assert_eq!(qkv.bytes_read, 100_671_488.0);
    assert_eq!(qkv.bytes_written, 24_576.0);
    let attn = AttentionSpec {
        batch: 1,
        heads_q: 32,
        heads_kv: 32,
        seq_q: 1,
        seq_kv: 4096,
        head_dim: 128,
        head_dim_v: None,
        causal: CausalMode::BottomRight,
        dtype: Precision::Fp16,
        pass: Pass::Forward,
    }
    .work()
    .unwrap();
    // Q 8,192 B + K and V caches 2*32*4096*128*2 = 67,108,864 B read; O 8,192 B written.
    assert_eq!(attn.bytes_read, 67_117_056.0);
    assert_eq!(attn.bytes_written, 8_192.0);
    let out = GemmSpec::new(1, 4096, 4096, Precision::Fp16).work().unwrap();
    assert_eq!(out.bytes_read, 33_562_624.0);
    assert_eq!(out.bytes_written, 8_192.0);
    // That table's write column (288 MB per layer, 9 GB per token) is ~4 orders of
    // magnitude too high for single-token decode, and its 36 GB per token is 2.7× the
    // whole fp16 model (~13.5 GB), so "1.8 TB/s at 50 tokens/s" does not follow.
    let writes = qkv.bytes_written + attn.bytes_written + out.bytes_written;
    assert!(writes < 50_000.0);
}

#[test]
fn fusing_two_memory_bound_kernels_is_not_always_2x() {
    // A rule of thumb in circulation: "Fusing two memory-bound kernels into one gives ~2x
    // speedup (halves memory traffic)" (docs/reference/formulas.md, "Diagnosis
    // thresholds"). Its own example, residual add + RMSNorm, N=4096 D=4096 bf16:
    let (n, d) = (4096u64, 4096u64);
    let add = ElementwiseSpec::binary(n * d, Precision::Bf16, 1.0).work().unwrap();
    let norm = RmsNormSpec { rows: n, cols: d, dtype: Precision::Bf16, weight_dtype: None }
        .work()
        .unwrap();
    let nd = (n * d) as f64 * 2.0;
    // Unfused: add reads x, r and writes h (3 ND); norm reads h + weight, writes y (2 ND).
    let unfused = add.bytes() + norm.bytes();
    assert_eq!(unfused, 5.0 * nd + d as f64 * 2.0);
    // Fused: read x, r and the weight, write h (the next residual) and y: 4 ND.
    let fused = 4.0 * nd + d as f64 * 2.0;
    // 1.25×, not 2×: the fusion saves only the re-read of h.
    assert!((unfused / fused - 1.25).abs() < 1e-4);
}

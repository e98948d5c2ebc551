//! Whole-step checks with the arithmetic written out: a tiny config op by op, Llama-2-7B
//! (issue 9's check), Mixtral's active experts, Q4_0 dequant fusion, prefill FLOPs.

#![allow(clippy::unwrap_used)]

use super::budget::{budget, ModelReport};
use super::config::{ModelConfig, RawConfig};
use super::presets;
use super::step::{expected_active_experts, Phase, Role, StepOptions, WeightScheme};
use crate::device::{Catalog, DeviceSpec};
use crate::ops::quant::WeightFormat;
use crate::units::Precision;

fn h100() -> DeviceSpec {
    Catalog::builtin().get("h100-sxm").unwrap().clone()
}

fn preset(id: &str) -> ModelConfig {
    let p = presets::find(id).unwrap();
    let raw: RawConfig = serde_json::from_str(p.json).unwrap();
    ModelConfig::from_raw(&raw, &format!("preset {}", p.id), Some(p.name)).unwrap()
}

fn tiny() -> ModelConfig {
    let raw: RawConfig = serde_json::from_str(
        r#"{"hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100,
        "tie_word_embeddings": false}"#,
    )
    .unwrap();
    ModelConfig::from_raw(&raw, "tiny.json", None).unwrap()
}

fn decode(weights: WeightScheme, batch: u64, context: u64) -> StepOptions {
    StepOptions {
        phase: Phase::Decode,
        batch,
        context,
        tokens: 0,
        weights,
        kv_dtype: weights.act_dtype(),
    }
}

const BF16: WeightScheme = WeightScheme::Dense(Precision::Bf16);

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

fn op(r: &ModelReport, role: Role) -> &super::budget::OpBudget {
    r.ops.iter().find(|o| o.op.role == role).unwrap()
}

#[test]
fn tiny_decode_step_op_by_op() {
    // H=64 I=160 L=2 Hq=4 Hkv=2 D=16 V=100, bf16 (2 B), batch 1, context 8.
    let r = budget(&tiny(), &decode(BF16, 1, 8), &h100(), None).unwrap();
    let bytes = |role| op(&r, role).op.work.bytes();
    // attn norm: read x 64*2 + weight 64*2 = 256, write 128.
    assert_eq!(bytes(Role::AttnNorm), 384.0);
    // q: read A 1*64*2 = 128 + W 64*64*2 = 8192, write 64*2 = 128.
    assert_eq!(bytes(Role::QProj), 8448.0);
    // k: N = Hkv*D = 32: 128 + 64*32*2 = 4096, write 64.
    assert_eq!(bytes(Role::KProj), 4288.0);
    // rotary: E = (4+2)*16 = 96: read 96*2 + cos/sin 16*2 = 224, write 192.
    assert_eq!(bytes(Role::Rotary), 416.0);
    // KV write: 2*2*16 = 64 elements read and written.
    assert_eq!(bytes(Role::KvWrite), 256.0);
    // attention: Q 4*16*2 = 128, K and V 2*8*16*2 = 512 each, O 128.
    assert_eq!(bytes(Role::Attention), 1280.0);
    // gate: 128 + 64*160*2 = 20608 read, 160*2 = 320 written.
    assert_eq!(bytes(Role::Gate), 20928.0);
    // SiLU·mul: read 2*160*2 = 640, write 320.
    assert_eq!(bytes(Role::SiluMul), 960.0);
    // down: read 160*2 + 160*64*2 = 20800, write 128.
    assert_eq!(bytes(Role::Down), 20928.0);
    // Per layer: 384 (norm) + 8448 (q) + 4288*2 (k, v) + 416 + 256 + 1280 + 8448 (o)
    // + 384 (add) + 384 (norm) + 20928*2 (gate, up) + 960 + 20928 (down) + 384 (add)
    // = 92704; 2 layers = 185408. Embedding 128 + 128, final norm 384,
    // LM head 128 + 64*100*2 + 100*2 = 13128. Total 199176.
    assert_eq!(r.totals.bytes, 199_176.0);
    // FLOPs per layer: norms 2*(4*64 + 2) = 516, q 2*64*64 = 8192, k and v 2*32*64 = 4096
    // each, rotary 96*3 = 288, attention 4*4*8*16 = 2048, o 8192, adds 2*64 = 128,
    // gate/up/down 3*2*160*64 = 61440, SiLU·mul 160*5 = 800: 89796. Two layers 179592,
    // final norm 258, LM head 2*100*64 = 12800: 192650.
    assert_eq!(r.totals.flops, 192_650.0);
    // Every op is memory-bound on an H100, so the floor is bytes / 3.35 TB/s.
    assert!(r.ops.iter().all(|o| o.bound == crate::roofline::Bound::Memory));
    assert!(close(r.totals.floor_us, 199_176.0 / 3.35e12 * 1e6, 1e-9));
    assert!(close(r.throughput.tokens_per_s.unwrap(), 3.35e12 / 199_176.0, 1e-9));
    // KV cache: 2*L*Hkv*D*context*2 B = 2*2*2*16*8*2 = 2048 B.
    assert_eq!(r.throughput.kv_cache_bytes, 2048.0);

    // Fusions (bytes per step): QKV saves two reads of the 128-B activations per layer
    // (2*2*128 = 512); residual+norm one 128-B read per pair, 2*L = 4 pairs (512); gate+up
    // one activation read per layer (256); with the SiLU·mul epilogue also
    // 4*160*2 = 1280 per layer (2*(128 + 1280) = 2816).
    let saved = |name: &str| r.fusions.iter().find(|f| f.name == name).unwrap().bytes_saved;
    assert_eq!(saved("QKV as one GEMM"), 512.0);
    assert_eq!(saved("residual add + RMSNorm"), 512.0);
    assert_eq!(saved("gate+up as one GEMM"), 256.0);
    assert_eq!(saved("gate+up GEMM + SiLU·mul epilogue"), 2816.0);
    // All: 512 + 512 + 2816 = 3840 B; every op memory-bound, so the floor drops by 3840/BW.
    let all = r.fusions.last().unwrap();
    assert_eq!(all.bytes_saved, 3840.0);
    assert!(close(r.throughput.fused_step_floor_us, (199_176.0 - 3840.0) / 3.35e12 * 1e6, 1e-9));
}

#[test]
fn llama_2_7b_decode_matches_the_issue_check() {
    let cfg = preset("llama-7b");
    // Per layer: 4*4096*4096 = 67,108,864 (Q, K, V, O) + 3*4096*11008 = 135,266,304 (MLP)
    // + 2*4096 (norms) = 202,383,360; 32 layers = 6,476,267,520; embedding and LM head
    // 2*32000*4096 = 262,144,000; final norm 4096: 6,738,415,616.
    assert_eq!(cfg.params().total, 6_738_415_616);
    let r = budget(&cfg, &decode(BF16, 1, 1), &h100(), Some(50.0)).unwrap();
    // bf16: 2 B each = 13,476,831,232 B = 13.5 GB; 3.35e12 / 13.4768e9 = 248.58 tokens/s.
    assert_eq!(r.throughput.weight_storage_bytes, 13_476_831_232.0);
    let w = r.throughput.weights_only_tokens_per_s.unwrap();
    assert!(w > 248.5 && w < 248.6, "{w}");
    // The step itself does not read the embedding table (one 8 kB row is gathered), so it
    // moves less than the weights. Per layer (context 1): norms and adds 4*24,576; Q, K,
    // V, O 4*(8192 + 33,554,432 + 8192) = 134,283,264; rotary 33,024; KV write 32,768;
    // attention 32,768; gate, up, down 3*(8192 or 22,016 + 90,177,536 + 22,016 or 8192)
    // = 270,623,232; SiLU·mul 66,048: 405,169,408. 32 layers = 12,965,421,056; embedding
    // 16,384, final norm 24,576, LM head 8192 + 262,144,000 + 64,000: 13,227,678,208 B.
    assert_eq!(r.totals.bytes, 13_227_678_208.0);
    let tps = r.throughput.tokens_per_s.unwrap();
    // 3.35e12 / 13.2277e9 = 253.3 tokens/s.
    assert!(close(tps, 3.35e12 / 13_227_678_208.0, 1e-9), "{tps}");
    // 50 tokens/s needs 13.23 GB * 50 = 661 GB/s as listed.
    let t = r.target.unwrap();
    assert!(close(t.bandwidth_needed_gbs, 13_227_678_208.0 * 50.0 / 1e9, 1e-12));
    assert!(t.reachable);
}

#[test]
fn llama_2_7b_kv_at_4096_and_fp8_cache() {
    let cfg = preset("llama-7b");
    let mut o = decode(BF16, 1, 4096);
    let r = budget(&cfg, &o, &h100(), None).unwrap();
    // KV cache: 2*32 layers*32 heads*128*4096 positions*2 B = 2,147,483,648 B.
    assert_eq!(r.throughput.kv_cache_bytes, 2_147_483_648.0);
    assert_eq!(r.totals.kv_read_bytes, 2_147_483_648.0);
    // Attention per layer: Q 8192 + K, V 32*4096*128*2 = 33,554,432 each + O 8192.
    assert_eq!(op(&r, Role::Attention).op.work.bytes(), 67_125_248.0);
    o.kv_dtype = Precision::Fp8;
    let r8 = budget(&cfg, &o, &h100(), None).unwrap();
    // fp8 halves K and V: 8192 + 2*16,777,216 + 8192.
    assert_eq!(op(&r8, Role::Attention).op.work.bytes(), 33_570_816.0);
    // KV write: reads 2*32*128*2 = 16,384 B, writes 8192 B.
    assert_eq!(op(&r8, Role::KvWrite).op.work.bytes(), 24_576.0);
}

#[test]
fn mixtral_reads_only_active_experts() {
    let cfg = preset("mixtral-8x7b");
    let p = cfg.params();
    // Layer: attention 4096*(4096 + 1024 + 1024 + 4096) = 41,943,040; one expert
    // 3*4096*14336 = 176,160,768; router 4096*8 = 32,768; norms 8192.
    // All 8 experts: 1,451,270,144 per layer; 32 layers + 262,144,000 + 4096.
    assert_eq!(p.total, 46_702_792_704);
    // 2 active: 394,305,536 per layer -> 12,879,925,248.
    assert_eq!(p.active_per_token, 12_879_925_248);
    let r = budget(&cfg, &decode(BF16, 1, 1), &h100(), None).unwrap();
    // Weight bytes read per token: per layer attention 83,886,080 + router 65,536 +
    // 2 experts 704,643,072 = 788,594,688; 32 layers 25,235,030,016 + LM head
    // 262,144,000 = 25,497,174,016 B (all 8 experts would add 32*6*352,321,536 B).
    assert_eq!(r.totals.weight_bytes, 25_497_174_016.0);
    // Expert down at batch 1: 2 routed rows, 2 experts' weights 2*14336*4096*2.
    let down = op(&r, Role::ExpertDown);
    assert_eq!(down.op.weight_bytes, 234_881_024.0);
    assert_eq!(down.op.work.bytes_read, 2.0 * 14336.0 * 2.0 + 234_881_024.0);
    // Two tokens: 8*(1 - (6/8)^2) = 3.5 experts expected.
    assert_eq!(expected_active_experts(8, 2, 2), 3.5);
    let r2 = budget(&cfg, &decode(BF16, 2, 1), &h100(), None).unwrap();
    assert_eq!(op(&r2, Role::ExpertDown).op.weight_bytes, 3.5 * 117_440_512.0);
}

#[test]
fn q4_0_weights_and_dequant_fusion() {
    let cfg = preset("llama-7b");
    let s = WeightScheme::Quant(WeightFormat::Q4_0);
    let r = budget(&cfg, &decode(s, 1, 1), &h100(), None).unwrap();
    // q proj: Q4_0 is 18 B per 32 weights: 4096*4096*18/32 = 9,437,184 B of weights,
    // plus fp16 activations 8192 B and output 8192 B.
    let q = op(&r, Role::QProj);
    assert_eq!(q.op.weight_bytes, 9_437_184.0);
    assert_eq!(q.op.work.bytes(), 9_437_184.0 + 8192.0 + 8192.0);
    // Unfused dequant writes and reads every weight as fp16: 4 B per weight more.
    // Per layer 4*4096*4096 + 3*4096*11008 = 202,375,168 weights * 4 = 809,500,672;
    // 32 layers 25,904,021,504; LM head (Q4_0 too) 32000*4096*4 = 524,288,000.
    let dq = &r.fusions[0];
    assert_eq!(dq.name, "dequant fused into matmul");
    assert_eq!(dq.bytes_saved, 26_428_309_504.0);
    // Unfused/fused traffic of the projections: 4 B vs 0.5625 B per weight (+ the
    // activations): about (4.5625/0.5625) = 8.1x, not the
    // "~17x" of docs/reference/formulas.md#fusing-dequantization-into-the-matmul.
    let ratio = dq.traffic_ratio.unwrap();
    assert!(ratio > 8.0 && ratio < 8.2, "{ratio}");
}

#[test]
fn prefill_flops_and_ttft() {
    let cfg = preset("llama-7b");
    let o = StepOptions {
        phase: Phase::Prefill,
        batch: 1,
        context: 0,
        tokens: 2048,
        weights: BF16,
        kv_dtype: Precision::Bf16,
    };
    let r = budget(&cfg, &o, &h100(), None).unwrap();
    // Projections: 2*2048*(4*4096*4096 + 3*4096*11008) = 828,928,688,128 per layer.
    let proj: f64 = r
        .ops
        .iter()
        .filter(|b| {
            matches!(
                b.op.role,
                Role::QProj
                    | Role::KProj
                    | Role::VProj
                    | Role::OProj
                    | Role::Gate
                    | Role::Up
                    | Role::Down
            )
        })
        .map(|b| b.op.work.flops)
        .sum();
    assert_eq!(proj, 828_928_688_128.0);
    // Causal attention: pairs 2048*2049/2 = 2,098,176; 4*32*pairs*128 = 34,376,515,584.
    assert_eq!(op(&r, Role::Attention).op.work.flops, 34_376_515_584.0);
    // The projections alone need 32*828.9 GFLOP / 989.4 TFLOP/s = 26.81 ms.
    let floor_ms = r.throughput.ttft_floor_us.unwrap() / 1e3;
    assert!(floor_ms > 32.0 * 828_928_688_128.0 / 989.4e12 * 1e3, "{floor_ms}");
    assert!(r.throughput.tokens_per_s.is_none());
}

#[test]
fn sliding_window_limits_decode_attention() {
    let cfg = preset("mistral-7b");
    let r = budget(&cfg, &decode(BF16, 1, 8192), &h100(), None).unwrap();
    // Window 4096: K and V 8*4096*128*2 = 8,388,608 B each, Q and O 32*128*2 = 8192.
    assert_eq!(op(&r, Role::Attention).op.work.bytes(), 2.0 * 8_388_608.0 + 2.0 * 8192.0);
}

#[test]
fn presets_match_published_sizes() {
    // Llama-3-8B: layer 4096*(4096+1024+1024+4096) + 3*4096*14336 + 8192 = 218,112,000;
    // 32 layers + 2*128256*4096 + 4096.
    assert_eq!(preset("llama-3-8b").params().total, 8_030_261_248);
    // Mistral-7B: same layer, vocab 32000.
    assert_eq!(preset("mistral-7b").params().total, 7_241_732_096);
    // Qwen2-7B: layer 2*3584*3584 + 2*3584*512 + biases (3584 + 2*512) + 3*3584*18944
    // + 2*3584 = 233,057,792; 28 layers + 2*152064*3584 + 3584.
    let q = preset("qwen2-7b");
    assert!(q.qkv_bias);
    assert_eq!(q.params().total, 7_615_616_512);
    assert_eq!(q.sliding_window, None); // use_sliding_window: false
    for p in presets::PRESETS {
        assert!(presets::find(p.id).is_some());
    }
    assert_eq!(presets::find("Llama-2-7B").unwrap().id, "llama-7b");
}

#[test]
fn weight_scheme_names() {
    assert_eq!("q4_0".parse::<WeightScheme>(), Ok(WeightScheme::Quant(WeightFormat::Q4_0)));
    assert_eq!(
        "int4-g128".parse::<WeightScheme>(),
        Ok(WeightScheme::Quant(WeightFormat::Affine {
            bits: 4,
            group_size: 128,
            scale_dtype: Precision::Fp16,
            zero_point: false
        }))
    );
    assert_eq!("FP8".parse::<WeightScheme>(), Ok(WeightScheme::W8A8(Precision::Fp8)));
    assert!("int4".parse::<WeightScheme>().is_err());
    assert!("int9-g32".parse::<WeightScheme>().is_err());
    assert!("int4-g0".parse::<WeightScheme>().is_err());
    // int4-g128: 4 + 16/128 = 4.125 bits per weight.
    assert_eq!("int4-g128".parse::<WeightScheme>().unwrap().bits_per_weight(), 4.125);
}

#[test]
fn bad_options_are_errors() {
    let e = budget(&tiny(), &decode(BF16, 0, 1), &h100(), None).unwrap_err();
    assert_eq!(e.to_string(), "the batch must be at least 1");
    let e = budget(&tiny(), &decode(BF16, 1, 0), &h100(), None).unwrap_err();
    assert_eq!(e.to_string(), "the context must be at least 1");
    assert!(budget(&tiny(), &decode(BF16, 1, 1), &h100(), Some(-1.0)).is_err());
    // Q4_0 needs K to be a multiple of 32: H = 64 is, but a 48-wide model is not.
    let raw: RawConfig = serde_json::from_str(
        r#"{"hidden_size": 48, "intermediate_size": 96, "num_hidden_layers": 1,
        "num_attention_heads": 3, "vocab_size": 10}"#,
    )
    .unwrap();
    let c = ModelConfig::from_raw(&raw, "odd.json", None).unwrap();
    let e = budget(&c, &decode(WeightScheme::Quant(WeightFormat::Q4_0), 1, 1), &h100(), None)
        .unwrap_err();
    assert!(
        e.to_string().starts_with("embedding") || e.to_string().contains("multiple of 32"),
        "{e}"
    );
}

//! The inference sections on the hand-built vLLM MoE trace
//! (`tests/fixtures/kineto/handmade/vllm_moe_b200.json`, written by the script beside it,
//! whose every duration and shape the arithmetic below uses).

#![allow(clippy::unwrap_used, clippy::float_cmp, clippy::many_single_char_names)]

use rooftop_core::device::Catalog;
use rooftop_core::trace::gaps::critical_path::CpOptions;
use rooftop_core::trace::inference::steps::Phase;
use rooftop_core::trace::ops::{categorize_op, Category, ParamValue};
use rooftop_core::trace::report::{analyze, TraceOptions, TraceReport};
use rooftop_core::trace::TraceModel;
use rooftop_ingest::kineto::{read_path, ReadOptions};
use std::path::PathBuf;

fn load() -> TraceModel {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/kineto/handmade/vllm_moe_b200.json");
    read_path(&p, &ReadOptions::default(), &mut |_, _| {}).unwrap()
}

fn report(what_if: &[&str]) -> TraceReport {
    let cat = Catalog::builtin();
    let opts = TraceOptions {
        critical_path: CpOptions {
            what_if: what_if.iter().map(|w| w.parse().unwrap()).collect(),
            ..CpOptions::default()
        },
        ..TraceOptions::default()
    };
    analyze(&load(), cat.lookup("b200").ok(), &opts)
}

fn int(row: &rooftop_core::trace::tables::OpRow, key: &str) -> i64 {
    match row.params.get(key) {
        Some(ParamValue::Int(v)) => *v,
        other => panic!("{key}: {other:?}"),
    }
}

#[test]
fn custom_allreduce_is_communication() {
    let r = report(&[]);
    // Two prefill all-reduces of 25 µs and six graph-replayed ones of 8 µs.
    assert_eq!(r.inference.custom_allreduce_kernels, 8);
    assert!((r.inference.custom_allreduce_us - 98.0).abs() < 1e-9);
    assert!((r.timeline.all.communication.time_ms - 0.098).abs() < 1e-12);
    assert_eq!(r.inference.engine.as_deref(), Some("vLLM"));
    assert_eq!(categorize_op("vllm::moe_forward", None), Category::Moe);
    assert_eq!(categorize_op("_C::dynamic_per_token_scaled_fp8_quant", None), Category::Quant);
}

#[test]
fn steps_by_phase() {
    let r = report(&[]);
    assert_eq!(r.inference.step_format.as_deref(), Some("vllm_detailed"));
    let p = &r.inference.phases;
    assert_eq!(p.len(), 2);
    assert_eq!((p[0].phase, p[0].steps, p[0].tokens, p[0].requests), (Phase::Prefill, 1, 512, 2));
    assert_eq!((p[1].phase, p[1].steps, p[1].tokens, p[1].requests), (Phase::Decode, 3, 6, 6));
    // A replay: per layer 2 + 6 + 9 (quant, GEMM, attention) + 2 + 2 + 18 + 12 (routing,
    // align, two fused-MoE) + 8 (all-reduce) = 59 µs, two layers 118 µs; the step also runs
    // a 1.5 µs input copy and a 4 µs argmax outside the graph.
    let graphed = 118.0 / (118.0 + 1.5 + 4.0) * 100.0;
    assert!((p[1].graphed_percent - graphed).abs() < 1e-9, "{}", p[1].graphed_percent);
    assert_eq!(p[0].graphed_percent, 0.0);
}

#[test]
fn moe_attention_and_quant_models() {
    let r = report(&[]);
    let moe = &r.categories["MoE"];
    let prefill =
        moe.iter().find(|x| x.name == "vllm::moe_forward" && int(x, "tokens") == 512).unwrap();
    assert_eq!(
        (
            int(prefill, "hidden"),
            int(prefill, "intermediate"),
            int(prefill, "experts"),
            int(prefill, "topk")
        ),
        (3072, 2880, 32, 4)
    );
    assert_eq!(prefill.params.get("gated"), Some(&ParamValue::Bool(true)));
    // 2·T·k·H·2I + 2·T·k·I·H + T·H·(2k − 1).
    let (t, k, h, i) = (512.0, 4.0, 3072.0, 2880.0);
    let flops = 2.0 * t * k * h * 2.0 * i + 2.0 * t * k * i * h + t * h * 7.0;
    assert_eq!(prefill.flops, Some(flops));
    // All 32 experts are hit by 2048 choices: E_active = 32·(1 − (28/32)^512) ≈ 32;
    // FP8 weights (2·I·H + H·I) bytes each; BF16 input and output.
    let e_active = 32.0 * (1.0 - (28.0f64 / 32.0).powf(512.0));
    let bytes = 2.0 * t * h * 2.0 + e_active * (2.0 * i * h + h * i);
    assert!((prefill.bytes.unwrap() - bytes).abs() < 1e-3);
    assert!(prefill.roofline_attainment_pct.is_some());
    // Its subtree: routing 3 + align 2 + fused-MoE 75 + 55 µs, per layer, two layers.
    assert_eq!(prefill.kernel_time_us.sum, 270.0);

    let attn = &r.categories["InferenceAttention"];
    let a = attn.iter().find(|x| int(x, "tokens") == 512).unwrap();
    // Prefill of 2 × 256 tokens, causal: pairs = Σsq·sk − (Σsq² − Σsq)/2 = 131072 − 65280.
    assert_eq!(a.flops, Some(2.0 * 64.0 * 128.0 * 65792.0));
    assert_eq!(a.params.get("phase"), Some(&ParamValue::Str("prefill".into())));

    let q = &r.categories["Quant"];
    let qp = q.iter().find(|x| int(x, "elements") == 512 * 2880).unwrap();
    // BF16 in (2 B), FP8 out (1 B), 512 float scales.
    assert_eq!(qp.bytes, Some(512.0 * 2880.0 * 3.0 + 512.0 * 4.0));
}

#[test]
fn graphs_syncs_memory_modules() {
    let r = report(&[]);
    let g = &r.graphs;
    assert_eq!((g.launches, g.graph_events, g.captures), (3, 48, 1));
    assert_eq!(g.graphs.len(), 1);
    let gr = &g.graphs[0];
    assert_eq!((gr.kernels, gr.replays, gr.captured), (16, 3, true));
    assert!((gr.gpu_us - 354.0).abs() < 1e-9);
    assert_eq!(gr.top_kernels[0].name, "fused_moe_kernel");
    assert_eq!(gr.top_kernels[0].captured_by.as_deref(), Some("vllm::outplace_fused_experts"));
    assert_eq!(g.windows.len(), 1);

    let s = &r.syncs;
    let stream = s.rows.iter().find(|x| x.call == "cudaStreamSynchronize").unwrap();
    assert_eq!((stream.count, stream.op.as_deref()), (3, Some("vllm::sample_sync")));
    let copy = s.rows.iter().find(|x| x.call == "cudaMemcpyAsync").unwrap();
    assert_eq!(copy.top_op.as_deref(), Some("aten::item"));
    assert_eq!(s.pageable.len(), 1);

    let m = &r.memory.devices[0];
    assert_eq!(m.device_type, "cuda");
    assert_eq!(m.peak_allocated_bytes, 1_073_741_824 + 4_194_304);
    assert_eq!(m.before_trace_bytes, 1_073_741_824);

    let root = &r.modules.nodes[0];
    assert_eq!(root.path, "GptOssForCausalLM_0");
    let children: Vec<&str> =
        r.modules.nodes.iter().filter(|n| n.depth == 1).map(|n| n.name.as_str()).collect();
    assert_eq!(children.len(), 2);
    assert!(children.iter().all(|c| c.starts_with("GptOssDecoderLayer_")));

    // Graph-internal gaps (1 µs between replayed kernels) are `graph`, not idle causes:
    // 15 gaps per replay, 3 replays.
    let d = &r.idle.devices[0];
    let graph = d.categories.iter().find(|c| c.category.as_str() == "graph").unwrap();
    assert_eq!(graph.gaps.count, 45);
}

#[test]
fn critical_path_of_the_last_decode_step() {
    let r = report(&["vllm::moe_forward=0.5"]);
    let cp = r.critical_path.as_ref().unwrap();
    assert!(cp.window.annotation.as_deref().unwrap().starts_with("execute_2_context_0"));
    assert_eq!(cp.window.basis, "the last engine step annotation");
    // The replay's kernels are credited to the ops that captured them.
    assert_eq!(cp.by_op[0].name, "vllm::outplace_fused_experts");
    let w = &cp.what_if[0];
    // Routing (2), align (2) and the fused-MoE kernels (18 + 12) of both layers halve.
    assert!(w.matched_events >= 8);
    assert!(w.saving_us > 0.0 && w.length_us < w.baseline_us);
}

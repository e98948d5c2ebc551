//! End-to-end tests of what a new user meets in `rooftop trace`: how much of a real
//! trace's kernel time the work models cover (the issue's bar: ≥ 95% on every real
//! fixture that recorded shapes), a trace without shapes said once with its fix,
//! runtime calls never shown as ops, communication in the ops table, bad input and
//! flags refused with exit code 2, point-to-point transfers matched across ranks, and a
//! directory of unrelated traces refused.

#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use serde_json::{json, Value};
use std::path::PathBuf;

fn rooftop() -> Command {
    Command::cargo_bin("rooftop").expect("the rooftop binary is built by cargo test")
}

fn fixture(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/kineto")
        .join(rel)
        .display()
        .to_string()
}

/// A fresh, empty scratch directory and its path. The directory is removed when the
/// guard drops, at the end of the test whether it passed or failed: bind the guard to
/// a name (`_x_guard`), not `_`, which would drop it at once.
fn tempdir(tag: &str) -> (tempfile::TempDir, PathBuf) {
    let d =
        tempfile::Builder::new().prefix(&format!("rooftop-cli-models-{tag}-")).tempdir().unwrap();
    let p = d.path().to_path_buf();
    (d, p)
}

fn json_of(args: &[&str]) -> Value {
    let out = rooftop().arg("trace").args(args).args(["--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

/// Runs `rooftop trace ARGS`, expecting exit 2; returns stderr.
fn fails(args: &[&str]) -> String {
    let out = rooftop().arg("trace").args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The real traces with recorded shapes (TraceLens's H100 and MI300X BERT and ViT, its
/// MI300X `torch.compile` trace, HTA's MI250 training step).
const WITH_SHAPES: &[&str] = &[
    "tracelens_h100/gaunernst_bert-small-uncased__1016001.json.gz",
    "tracelens_h100/Falconsai_nsfw_image_detection__1016002.json.gz",
    "tracelens_mi300/gaunernst_bert-small-uncased__1016001.json.gz",
    "tracelens_mi300/Falconsai_nsfw_image_detection__1016002.json.gz",
    "tracelens_mi300_inductor_triton.json.gz",
    "hta_mi250_minitoy_train.json.gz",
];

#[test]
fn work_models_cover_95_percent_of_real_traces_with_shapes() {
    for f in WITH_SHAPES {
        let v = json_of(&[&fixture(f), "--device", "h100-sxm"]);
        let c = &v["model_coverage"];
        let pct = c["percent"].as_f64().unwrap();
        assert!(pct >= 95.0, "{f}: {pct}% covered; uncovered {}", c["uncovered"]);
        assert_eq!(c["shapes_recorded"], true, "{f}");
        // Every uncovered row says why.
        for u in c["uncovered"].as_array().unwrap() {
            assert!(!u["reason"].as_str().unwrap().is_empty(), "{f}: {u}");
        }
    }
    // The ViT's `aten::cat` (TensorList of bf16, its kernel copies OpaqueType<2u>) and
    // BERT's embeddings have rows with bytes.
    let v = json_of(&[&fixture(WITH_SHAPES[1])]);
    let cat = &v["categories"]["DataMovement"][0];
    assert_eq!(cat["name"], "aten::cat");
    // (4·1·768 + 4·196·768) elements of 2 bytes, read and written.
    assert_eq!(cat["bytes"], 2.0 * 605_184.0 * 2.0);
    let v = json_of(&[&fixture(WITH_SHAPES[0])]);
    assert_eq!(v["categories"]["Embedding"].as_array().unwrap().len(), 3);
    // The Triton kernels of the compiled region are classified by kind.
    let v = json_of(&[&fixture(WITH_SHAPES[4])]);
    let kinds: Vec<&str> = v["categories"]["Triton"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["params"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.iter().filter(|k| **k == "pointwise").count(), 2, "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "reduction").count(), 2, "{kinds:?}");
}

/// PyTorch 2.11 records the AdamW `_foreach_*` lists as `[]`; their sizes come from the
/// backward pass's AccumulateGrad shapes, checked against the kernels' blocks. The model
/// of `scripts/gpu/kineto_capture.py` (D = 512, 4 encoder layers with 4·D feed-forward,
/// vocabulary 8192, a tied-free head) has, by hand:
/// embedding 8192·512; per layer in_proj 3·512·512 + 3·512, out_proj 512·512 + 512,
/// linear1 512·2048 + 2048, linear2 2048·512 + 512, two LayerNorms 2·(512 + 512); head
/// 512·8192 + 8192: 21,006,336 parameters in 51 tensors, Σ⌈numel / 65,536⌉ = 353
/// blocks (64 + 4·56 + 65), the grid its kernels launched (320 + 33).
#[test]
fn optimizer_lists_recorded_without_shapes_are_recovered_from_the_backward_pass() {
    let layer = 3 * 512 * 512
        + 3 * 512
        + 512 * 512
        + 512
        + 512 * 2048
        + 2048
        + 2048 * 512
        + 512
        + 2 * (512 + 512);
    let params = f64::from(8192 * 512 + 4 * layer + 512 * 8192 + 8192);
    assert_eq!(params, 21_006_336.0);
    let v = json_of(&[&fixture("h200/eager.trace.json.gz")]);
    let rows = v["categories"]["Elementwise"].as_array().unwrap();
    let row = |n: &str| rows.iter().find(|r| r["name"] == n).unwrap_or_else(|| panic!("{n}"));
    // `_foreach_mul_(exp_avg, beta1)`: one FLOP per element, one f32 list read and written.
    assert_eq!(row("aten::_foreach_mul_")["flops"].as_f64(), Some(params));
    assert_eq!(row("aten::_foreach_mul_")["bytes"].as_f64(), Some(params * 4.0 * 2.0));
    // `_foreach_addcmul_(exp_avg_sq, grad, grad, 1 − beta2)`: three lists read, one written.
    assert_eq!(row("aten::_foreach_addcmul_")["bytes"].as_f64(), Some(params * 4.0 * 4.0));
    let c = &v["model_coverage"];
    assert!(c["percent"].as_f64().unwrap() >= 95.0, "{c}");
}

#[test]
fn a_trace_without_shapes_says_so_once_with_the_fix() {
    let alexnet = fixture("hta_a100_alexnet.json.gz");
    let v = json_of(&[&alexnet]);
    assert_eq!(v["model_coverage"]["shapes_recorded"], false);
    for section in ["summary", "gemm", "conv", "categories"] {
        let out = rooftop().args(["trace", &alexnet, "--section", section]).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.matches("shapes: not recorded").count(), 1, "{section}:\n{text}");
        assert!(text.contains("record_shapes=True"), "{section}");
        assert!(!text.contains("No ops of this kind"), "{section}:\n{text}");
    }
    // The GEMM section names the op the ops table lists.
    let out = rooftop().args(["trace", &alexnet, "--section", "gemm"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("aten::addmm"), "{text}");
}

#[test]
fn runtime_calls_are_never_ops_and_communication_is_in_the_ops_table() {
    for f in [
        "hta_a100_alexnet.json.gz",
        "handmade/vllm_moe_b200.json",
        "handmade/nesting_graph.json",
        "tracelens_mi300_inductor_triton.json.gz",
    ] {
        let v = json_of(&[&fixture(f)]);
        for op in v["ops_summary"]["ops"].as_array().unwrap() {
            let name = op["name"].as_str().unwrap();
            assert!(
                !(name.starts_with("cuda") || name.starts_with("hip") || name.starts_with("cu")),
                "{f}: runtime call `{name}` listed as an op"
            );
        }
    }
    // The B200 trace's symmetric-memory all-reduce (the decode replays included) is in
    // the ops table under its op, and in the categories as Comm.
    let v = json_of(&[&fixture("handmade/vllm_moe_b200.json")]);
    let ops = v["ops_summary"]["ops"].as_array().unwrap();
    let ar = ops.iter().find(|o| o["name"] == "vllm::all_reduce").unwrap();
    assert_eq!(ar["category"], "Comm");
    // Prefill 2 × 25 µs + 3 decode replays × 2 layers × 8 µs (the fixture's script).
    assert!((ar["direct_kernel_time_ms"].as_f64().unwrap() - 0.098).abs() < 1e-9, "{ar}");
    let cats = v["ops_summary"]["by_category"].as_array().unwrap();
    assert!(cats.iter().any(|c| c["category"] == "Comm"));
    assert!(ops.iter().all(|o| o["name"] != "(no op)"), "every replayed kernel has its op");
}

#[test]
fn bad_input_and_flags_exit_2() {
    let (_d_guard, d) = tempdir("bad");
    let arr = d.join("array.json");
    std::fs::write(&arr, "[1, 2, 3]").unwrap();
    let empty = d.join("empty.json");
    std::fs::write(&empty, r#"{"traceEvents": []}"#).unwrap();
    for p in [&arr, &empty] {
        let e = fails(&[p.to_str().unwrap()]);
        assert!(e.contains("holds no trace events"), "{e}");
        assert!(e.contains(p.file_name().unwrap().to_str().unwrap()), "{e}");
    }
    let bert = fixture(WITH_SHAPES[0]);
    let e = fails(&[&bert, "--top", "0"]);
    assert!(e.contains("--top"), "{e}");
    let e = fails(&[&bert, "--section", "critical-path", "--what-if", "aten::nonexist=0.5"]);
    assert!(e.contains("matches no op") && e.contains("closest op names"), "{e}");
    // What-if with a section that does not show it: refused, not silently ignored.
    let e = fails(&[&bert, "--what-if", "aten::addmm=0.5"]);
    assert!(e.contains("--section critical-path"), "{e}");
    // Where it is shown, it is applied.
    let v = json_of(&[&bert, "--what-if", "aten::addmm=0.5"]);
    let w = &v["critical_path"]["what_if"][0];
    assert!(w["matched_events"].as_u64().unwrap() > 0, "{w}");
}

#[test]
fn a_directory_of_unrelated_traces_is_refused() {
    let (_d_guard, d) = tempdir("mixed");
    std::fs::copy(fixture(WITH_SHAPES[0]), d.join("a.json.gz")).unwrap();
    std::fs::copy(fixture(WITH_SHAPES[3]), d.join("b.json.gz")).unwrap();
    let e = fails(&[d.to_str().unwrap()]);
    assert!(e.contains("not one job"), "{e}");
    assert!(e.contains("H100") && e.contains("MI300X"), "{e}");
}

/// A two-rank trace pair whose only communication is NCCL send/recv (an all-to-all
/// built from point-to-point calls): rank 0 sends to rank 1 and receives from it, three
/// times each; rank 1 posts each of its calls 40 µs after rank 0.
fn p2p_rank(rank: i64, late_us: f64) -> Value {
    let peer = 1 - rank;
    let mut events = Vec::new();
    let mut corr = 0;
    for step in 0..3 {
        for (i, coll) in ["send", "recv"].iter().enumerate() {
            corr += 1;
            // Rank 0 sends first, rank 1 receives first: the pairs line up.
            let slot = if rank == 0 { i } else { 1 - i };
            let ts = 1000.0 + f64::from(step) * 500.0 + slot as f64 * 200.0 + late_us;
            let dur = 150.0 - late_us;
            let mut args = json!({
                "device": 0, "stream": 20, "correlation": corr,
                "Collective name": coll, "In msg nelems": 1_048_576, "Out msg nelems": 1_048_576,
                "Group size": 2, "dtype": "BFloat16", "Process Group Name": "0",
                "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1]",
            });
            let key = if *coll == "send" { "Dst Rank" } else { "Src Rank" };
            args[key] = json!(peer);
            events.push(json!({"ph": "X", "cat": "cpu_op", "name": format!("nccl:{coll}"),
                "pid": 1, "tid": 1, "ts": ts - 10.0, "dur": 8.0, "args": {"External id": corr}}));
            events.push(json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC",
                "pid": 1, "tid": 1, "ts": ts - 8.0, "dur": 4.0, "args": {"correlation": corr}}));
            events.push(json!({"ph": "X", "cat": "kernel",
                "name": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
                "pid": 0, "tid": 20, "ts": ts, "dur": dur, "args": args}));
        }
    }
    json!({
        "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132}],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
        "baseTimeNanoseconds": 1_700_000_000_000_000_000_i64,
        "traceEvents": events,
    })
}

#[test]
fn point_to_point_transfers_are_matched_across_ranks() {
    let (_d_guard, d) = tempdir("p2p");
    for (r, late) in [(0, 0.0), (1, 40.0)] {
        std::fs::write(d.join(format!("rank{r}.json")), p2p_rank(r, late).to_string()).unwrap();
    }
    let out = rooftop().args(["trace", d.to_str().unwrap(), "--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &v["cross_rank"];
    let rows = c["collectives"]["rows"].as_array().unwrap();
    let p2p: Vec<&Value> = rows.iter().filter(|r| r["kind"] == "send_recv").collect();
    // 0→1 and 1→0, three transfers each.
    let count: u64 = p2p.iter().map(|r| r["count"].as_u64().unwrap()).sum();
    assert_eq!(count, 6, "{rows:?}");
    // Each transfer: rank 1 starts 40 µs late and ends with rank 0, so the transfer
    // time (the shorter kernel) is 110 µs, the start skew 40 µs.
    for r in &p2p {
        assert_eq!(r["transfer_mean_us"], 110.0, "{r}");
        assert_eq!(r["start_skew_mean_us"], 40.0, "{r}");
        // 1 MiB of bf16 = 2_097_152 bytes in 110 µs = 19.07 GB/s, bus = algorithm.
        let bw = r["algbw_gbs"].as_f64().unwrap();
        assert!((bw - 2_097_152.0 / 110e-6 / 1e9).abs() < 1e-9, "{r}");
        assert_eq!(r["busbw_gbs"], r["algbw_gbs"]);
    }
    // Rank 1 started last every time: it caused rank 0's 6 × 40 µs of waiting.
    let s = &c["stragglers"][0];
    assert_eq!(s["rank"], 1, "{s}");
    assert!((s["wait_caused_ms"].as_f64().unwrap() - 0.240).abs() < 1e-9, "{s}");
    let kinds: Vec<&str> =
        c["warnings"].as_array().unwrap().iter().map(|w| w["kind"].as_str().unwrap()).collect();
    assert!(!kinds.iter().any(|k| k.starts_with("point_to_point")), "{kinds:?}");
}

/// openai/gpt-oss-20b's `config.json` (Hugging Face): the sizes of the hand-built B200
/// trace's MoE layers (hidden 2880, 32 experts of width 2880, top-4, 64 query heads).
const GPT_OSS_20B: &str = r#"{
  "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss",
  "hidden_size": 2880, "intermediate_size": 2880, "num_hidden_layers": 24,
  "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
  "num_local_experts": 32, "num_experts_per_tok": 4, "experts_per_token": 4,
  "vocab_size": 201088, "sliding_window": 128, "tie_word_embeddings": false
}"#;

#[test]
fn moe_layers_without_their_experts_op_take_the_sizes_from_the_model_config() {
    // The B200 trace with its fused-experts ops renamed to an op rooftop does not know
    // (as when the experts run as Triton kernels launched from Python): the layer's
    // kernels are then only under `vllm::moe_forward`, whose arguments hold the tokens
    // and the router logits, not the weights.
    let (_d_guard, d) = tempdir("moecfg");
    let text = std::fs::read_to_string(fixture("handmade/vllm_moe_b200.json")).unwrap();
    let trace = d.join("moe.json");
    std::fs::write(&trace, text.replace("vllm::outplace_fused_experts", "my::experts")).unwrap();
    let cfg = d.join("config.json");
    std::fs::write(&cfg, GPT_OSS_20B).unwrap();
    let t = trace.to_str().unwrap();
    let moe_rows = |v: &Value| -> Vec<Value> {
        v["categories"]["MoE"].as_array().cloned().unwrap_or_default()
    };
    // Without the config: no numbers, and the reason names the flag.
    let v = json_of(&[t]);
    assert!(moe_rows(&v).is_empty());
    let un = v["model_coverage"]["uncovered"].as_array().unwrap();
    let moe = un.iter().find(|u| u["op"] == "vllm::moe_forward").unwrap();
    assert!(moe["reason"].as_str().unwrap().contains("--model-config"), "{moe}");
    // With it: the prefill layers (512 tokens) get FLOPs by hand:
    // 2·T·k·H·2I + 2·T·k·I·H + T·H·(2k − 1), T = 512, k = 4, H = I = 2880, split 64/64 = 1
    // way (the trace's attention holds all 64 query heads).
    let v = json_of(&[t, "--model-config", cfg.to_str().unwrap()]);
    let rows = moe_rows(&v);
    let prefill = rows.iter().find(|r| r["params"]["tokens"] == 512).unwrap();
    let want = 2.0 * 512.0 * 4.0 * 2880.0 * 5760.0
        + 2.0 * 512.0 * 4.0 * 2880.0 * 2880.0
        + 512.0 * 2880.0 * 7.0;
    assert_eq!(prefill["flops"].as_f64().unwrap(), want);
    assert!(prefill["bytes"].as_f64().unwrap() > 0.0);
    assert!(v["model_coverage"]["percent"].as_f64().unwrap() >= 95.0, "{}", v["model_coverage"]);
    // The Perfetto export gives the layers' kernels the MoE rows only with the config,
    // as the tables do.
    let moe_kernels = |config: &[&str]| -> usize {
        let out = rooftop().args(["trace", t, "--format", "perfetto"]).args(config).output();
        let v: Value = serde_json::from_slice(&out.unwrap().stdout).expect("valid JSON");
        let events = v["traceEvents"].as_array().unwrap().iter();
        events.filter(|e| e["args"]["table"] == "MoE").count()
    };
    assert_eq!(moe_kernels(&[]), 0);
    assert!(moe_kernels(&["--model-config", cfg.to_str().unwrap()]) > 0);
    // A config that does not fit the trace is refused, with both numbers.
    let bad = d.join("bad.json");
    std::fs::write(
        &bad,
        GPT_OSS_20B.replace("\"num_local_experts\": 32", "\"num_local_experts\": 128"),
    )
    .unwrap();
    let v = json_of(&[t, "--model-config", bad.to_str().unwrap()]);
    let un = v["model_coverage"]["uncovered"].as_array().unwrap();
    let moe = un.iter().find(|u| u["op"] == "vllm::moe_forward").unwrap();
    let why = moe["reason"].as_str().unwrap();
    assert!(why.contains("32") && why.contains("128"), "{why}");
    // A config file that is not one: exit 2.
    let e = fails(&[t, "--model-config", "/nonexistent/config.json"]);
    assert!(e.contains("--model-config"), "{e}");
}

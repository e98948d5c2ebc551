//! End-to-end tests of `rooftop model`: issue 9's Llama-2-7B check, a hand-counted tiny
//! config, active experts only for a mixture of experts, every output format, and bad
//! configs and flags (exit code 2, one sentence naming the file and the field).

#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use std::path::PathBuf;

fn rooftop() -> Command {
    Command::cargo_bin("rooftop").expect("the rooftop binary is built by cargo test")
}

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/model")
        .join(name)
        .display()
        .to_string()
}

fn json(args: &[&str]) -> Value {
    let out = rooftop().arg("model").args(args).args(["--format", "json"]).output().unwrap();
    assert!(out.status.success(), "failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

fn num(v: &Value, path: &[&str]) -> f64 {
    let mut x = v;
    for k in path {
        x = &x[*k];
    }
    x.as_f64().unwrap_or_else(|| panic!("{path:?} is not a number"))
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

/// Issue 9: Llama-2-7B has ≈ 6.7e9 parameters → ≈ 13.5 GB in bf16 → ≤ 248 tokens/s at
/// 3.35 TB/s on an H100 SXM at batch 1, ignoring KV.
#[test]
fn llama_2_7b_decode_on_h100() {
    let v = json(&["--preset", "llama-7b", "--device", "h100-sxm", "--context", "1"]);
    // 32 * (4*4096*4096 + 3*4096*11008 + 2*4096) + 2*32000*4096 + 4096.
    assert_eq!(num(&v, &["params", "total"]), 6_738_415_616.0);
    // * 2 B = 13,476,831,232 B; 3.35e12 / 13,476,831,232 = 248.58 tokens/s.
    assert_eq!(num(&v, &["throughput", "weight_storage_bytes"]), 13_476_831_232.0);
    let w = num(&v, &["throughput", "weights_only_tokens_per_s"]);
    assert!(w > 248.5 && w < 248.6, "{w}");
    // The step reads one 8 kB embedding row, not the 262 MB table: 13,227,678,208 B
    // (hand count in rooftop-core model::tests), so the op-by-op floor is a little above
    // the weights-only bound: 3.35e12 / 13,227,678,208 = 253.3 tokens/s.
    assert_eq!(num(&v, &["totals", "bytes"]), 13_227_678_208.0);
    assert!(close(num(&v, &["throughput", "tokens_per_s"]), 3.35e12 / 13_227_678_208.0, 1e-9));
    assert_eq!(v["ops"].as_array().unwrap().len(), 18);
    assert!(v["assumptions"].as_array().unwrap().len() >= 5);
}

/// The tiny fixture, every op counted by hand (see rooftop-core `model::tests`):
/// 199,176 B and 192,650 FLOP per decode step at context 8.
#[test]
fn tiny_config_by_hand() {
    let v = json(&["--config", &fixture("tiny.json"), "--device", "h100-sxm", "--context", "8"]);
    assert_eq!(num(&v, &["totals", "bytes"]), 199_176.0);
    assert_eq!(num(&v, &["totals", "flops"]), 192_650.0);
    assert!(close(num(&v, &["totals", "floor_us"]), 199_176.0 / 3.35e12 * 1e6, 1e-9));
    assert_eq!(v["model"]["name"], fixture("tiny.json"));
    // 50 tokens/s: 199,176 B * 50 = 9.96 MB/s as listed.
    let v = json(&[
        "--config",
        &fixture("tiny.json"),
        "--device",
        "h100-sxm",
        "--context",
        "8",
        "--target-tokens-per-s",
        "50",
    ]);
    assert!(close(num(&v, &["target", "bandwidth_needed_gbs"]), 199_176.0 * 50.0 / 1e9, 1e-12));
}

/// A mixture of experts reads the weights of the experts a token is routed to only.
#[test]
fn moe_reads_only_active_experts() {
    let v =
        json(&["--config", &fixture("tiny_moe.json"), "--device", "h100-sxm", "--context", "1"]);
    // Per layer, bf16: attention (64*64 + 64*32 + 64*32 + 64*64)*2 = 24,576 B; router
    // 64*4*2 = 512 B; 2 of 4 experts 2*3*64*160*2 = 122,880 B: 147,968 B. 2 layers
    // 295,936 + LM head 100*64*2 = 12,800: 308,736 B (all 4 experts: 554,496 B).
    assert_eq!(num(&v, &["totals", "weight_bytes"]), 308_736.0);
    // Parameters: layer 12,288 + 4*30,720 + 256 + 128 = 135,552; total 2 layers + 2*6,400
    // + 64; active: 2 experts instead of 4 per layer.
    assert_eq!(num(&v, &["params", "total"]), 2.0 * 135_552.0 + 12_800.0 + 64.0);
    assert_eq!(
        num(&v, &["params", "active_per_token"]),
        2.0 * (135_552.0 - 2.0 * 30_720.0) + 12_800.0 + 64.0
    );
}

#[test]
fn head_dim_given_and_tied_embeddings() {
    // Gemma-style: 2 heads of 32 (64 != hidden 48), tied embeddings by default.
    let v = json(&["--config", &fixture("tiny_gemma.json"), "--device", "h100-sxm"]);
    // q 48*64 + k, v 48*32 each + o 64*48 = 9216; MLP 3*48*96 = 13,824; norms 96;
    // embedding 10*48 = 480 (no separate LM head); final norm 48.
    assert_eq!(num(&v, &["params", "total"]), 9216.0 + 13_824.0 + 96.0 + 480.0 + 48.0);
    assert_eq!(v["model"]["tie_word_embeddings"], true);
}

#[test]
fn issue_examples_run() {
    rooftop()
        .args(["model", "--preset", "llama-7b", "--device", "m4-max", "--weights", "q4_0"])
        .args(["--kv-dtype", "fp16", "--context", "4096", "--batch", "1"])
        .assert()
        .success()
        .stdout(predicate::str::contains("decode floor"))
        .stdout(predicate::str::contains("dequant fused into matmul"));
    let v = json(&[
        "--preset",
        "llama-7b",
        "--device",
        "mi300x",
        "--weights",
        "bf16",
        "--phase",
        "prefill",
        "--tokens",
        "2048",
    ]);
    // The projections alone: 32 * 2*2048*202,375,168 FLOP at 1307.4 TFLOP/s = 20.3 ms.
    let ttft = num(&v, &["throughput", "ttft_floor_us"]);
    assert!(ttft > 32.0 * 2.0 * 2048.0 * 202_375_168.0 / 1307.4e12 * 1e6, "{ttft}");
    assert!(v["throughput"]["tokens_per_s"].is_null());
    // Mixtral's 93.4 GB of bf16 weights fit the H200's 141 GB (not the H100's 80 GB).
    rooftop()
        .args(["model", "--preset", "mixtral-8x7b", "--device", "h200-sxm"])
        .args(["--target-tokens-per-s", "50"])
        .assert()
        .success()
        .stdout(predicate::str::contains("target 50.0 tokens/s"));
}

/// A config of Llama-2-70B's shape (the public config.json: hidden 8192, intermediate
/// 28672, 80 layers, 64 heads, 8 KV heads, vocabulary 32000), and the scratch directory
/// that holds it: removed when that guard drops, so bind it to a name, not `_`.
fn llama_70b_config() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::Builder::new().prefix("rooftop-model-cfg-").tempdir().unwrap();
    let path = dir.path().join("l70.json");
    std::fs::write(
        &path,
        r#"{"model_type": "llama", "hidden_size": 8192, "intermediate_size": 28672,
            "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
            "vocab_size": 32000, "tie_word_embeddings": false}"#,
    )
    .unwrap();
    (dir, path)
}

/// Parameters by hand: per layer q 8192x8192 + k,v 2 x 8192x1024 + o 8192x8192 +
/// MLP 3 x 8192x28672 + 2 norms x 8192 = 67,108,864 + 16,777,216 + 67,108,864 +
/// 704,643,072 + 16,384 = 855,654,400; x 80 = 68,452,352,000; embedding and LM head
/// 2 x 32000 x 8192 = 524,288,000; final norm 8192: 68,976,648,192 parameters, x 2 bytes
/// = 138 GB of bf16 weights > the H100's 80 GB: two H100s (138 / 80 = 1.72, rounded up)
/// with tensor parallelism, and no tokens/s.
#[test]
fn a_70b_model_does_not_fit_one_h100() {
    let (_cfg_guard, cfg) = llama_70b_config();
    let out = rooftop()
        .args(["model", "--config", cfg.to_str().unwrap(), "--device", "h100-sxm"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "no tokens/s as if it fitted");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not fit on h100-sxm"), "{err}");
    assert!(err.contains("138 GB of weights"), "{err}");
    assert!(err.contains("needs 2 of them with tensor parallelism"), "{err}");
}

/// KV cache at a 10,000,000-position context, by hand: 80 layers x 8 KV heads x 2 x 128
/// x 10^7 x 2 bytes = 3.28 TB, plus 138 GB of weights: 3.41 TB / 80 GB = 42.7, so 43
/// H100s. At 2^64-1 positions the KV cache's element count overflows 64 bits: refused.
#[test]
fn huge_contexts_are_refused_or_sized() {
    let (_cfg_guard, cfg) = llama_70b_config();
    let run = |ctx: &str| {
        rooftop()
            .args(["model", "--config", cfg.to_str().unwrap(), "--device", "h100-sxm"])
            .args(["--context", ctx])
            .output()
            .unwrap()
    };
    let out = run("10000000");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("3.28 TB of KV cache"), "{err}");
    assert!(err.contains("needs 43 of them"), "{err}");
    let out = run("18446744073709551615");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not fit 64-bit arithmetic"), "{err}");
    assert!(out.stdout.is_empty());
}

/// The title names a config file once: "l70.json", not "l70.json (l70.json)".
#[test]
fn a_config_file_is_named_once_in_the_title() {
    let (_cfg_guard, cfg) = llama_70b_config();
    let out = rooftop()
        .args(["model", "--config", cfg.to_str().unwrap(), "--device", "h200-sxm"])
        .args(["--context", "1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap_or_default();
    let name_count = first.matches("l70.json").count();
    assert_eq!(name_count, 1, "{first}");
}

#[test]
fn every_format() {
    let base = ["model", "--preset", "qwen2-7b", "--device", "h100-sxm", "--weights", "int4-g128"];
    let out = rooftop().args(base).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "line wider than 100 columns: {line}");
    }
    assert!(text.contains("assumptions:"));
    let md = rooftop().args(base).args(["--format", "md"]).output().unwrap();
    let md = String::from_utf8(md.stdout).unwrap();
    assert!(md.starts_with("## rooftop model"));
    assert!(md.contains("| op | × | shape |"));
    let csv_out = rooftop().args(base).args(["--format", "csv"]).output().unwrap();
    let mut rd = csv::Reader::from_reader(csv_out.stdout.as_slice());
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    // 18 ops + the total row.
    assert_eq!(rows.len(), 19);
    assert_eq!(&rows[18][0], "step");
}

#[test]
fn bad_configs_name_the_field() {
    let cases = [
        ("missing_layers.json", "`num_hidden_layers` is missing"),
        ("zero_heads.json", "`num_attention_heads` must be at least 1, got 0"),
        (
            "heads_not_dividing.json",
            "`num_attention_heads` (33) does not divide `hidden_size` (4096)",
        ),
        ("kv_heads_not_dividing.json", "`num_key_value_heads` (3) must divide"),
        ("wrong_type.json", "`hidden_size` must be a positive integer, got \"4096\""),
        ("truncated.json", "is not a valid config.json"),
    ];
    for (file, msg) in cases {
        let path = fixture(file);
        rooftop()
            .args(["model", "--config", &path, "--device", "h100-sxm"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(msg))
            .stderr(predicate::str::contains(path.as_str()));
    }
    rooftop()
        .args(["model", "--config", "/nonexistent/config.json", "--device", "h100-sxm"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot read the model config"));
    // Written here: a float where a count belongs is shown as the float it is; an array
    // is not read as the fields in order.
    let dir = tempfile::Builder::new().prefix("rooftop-model-").tempdir().unwrap();
    for (text, msg) in [
        (
            r#"{"hidden_size": 4096.0, "num_hidden_layers": 2}"#,
            "`hidden_size` must be a positive integer, got 4096.0",
        ),
        ("\n  [1, 2]", "expected a JSON object `{...}` (a Hugging Face config.json), found `[` at line 2, column 3"),
        ("", "the file is empty"),
    ] {
        let path = dir.path().join("config.json");
        std::fs::write(&path, text).unwrap();
        rooftop()
            .args(["model", "--config"])
            .arg(&path)
            .args(["--device", "h100-sxm"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(msg));
    }
}

#[test]
fn bad_flags_are_input_errors() {
    let cases: [(&[&str], &str); 6] = [
        (&["--preset", "gpt-5", "--device", "h100-sxm"], "is not a built-in model"),
        (&["--preset", "llama-7b", "--device", "h100-sxm", "--weights", "int4"], "--weights"),
        (&["--preset", "llama-7b", "--device", "h100-sxm", "--tokens", "8"], "--tokens applies"),
        (
            &[
                "--preset",
                "llama-7b",
                "--device",
                "h100-sxm",
                "--phase",
                "prefill",
                "--context",
                "8",
            ],
            "--context applies",
        ),
        (&["--preset", "llama-7b", "--device", "h100-sxm", "--batch", "0"], "--batch"),
        (&["--preset", "llama-7b", "--device", "m4-max", "--weights", "fp8"], "no fp8"),
    ];
    for (args, msg) in cases {
        rooftop().arg("model").args(args).assert().code(2).stderr(predicate::str::contains(msg));
    }
}

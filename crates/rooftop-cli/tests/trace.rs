//! End-to-end tests of `rooftop trace`: every fixture runs in every format, the device
//! choice, per-rank directories, and bad input (exit code 2 with the position).

#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
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
        tempfile::Builder::new().prefix(&format!("rooftop-cli-trace-{tag}-")).tempdir().unwrap();
    let p = d.path().to_path_buf();
    (d, p)
}

const FIXTURES: &[&str] = &[
    "hta_a100_alexnet.json.gz",
    "hta_a100_cupti_flop_counters.json.gz",
    "hta_mi250_minitoy_train.json.gz",
    "hta_tiny_plain.json",
    "tracelens_mi300_inductor_triton.json.gz",
    "tracelens_h100/Falconsai_nsfw_image_detection__1016002.json.gz",
    "tracelens_h100/gaunernst_bert-small-uncased__1016001.json.gz",
    "tracelens_mi300/Falconsai_nsfw_image_detection__1016002.json.gz",
    "tracelens_mi300/gaunernst_bert-small-uncased__1016001.json.gz",
    "handmade/nesting_graph.json",
    "handmade/legacy_2021.json",
];

fn json(args: &[&str]) -> Value {
    let out = rooftop().arg("trace").args(args).args(["--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

#[test]
fn every_fixture_runs_in_every_format() {
    for f in FIXTURES {
        let path = fixture(f);
        let v = json(&[&path]);
        for key in [
            "device",
            "window",
            "timeline",
            "ops_summary",
            "categories",
            "kernels",
            "findings",
            "warnings",
        ] {
            assert!(v.get(key).is_some(), "{f}: no `{key}` in the JSON");
        }
        for fmt in ["table", "md"] {
            rooftop()
                .args(["trace", &path, "--format", fmt, "--section", "all"])
                .assert()
                .success()
                .stdout(predicate::str::is_empty().not());
        }
    }
}

#[test]
fn device_comes_from_the_trace_or_the_flag() {
    let h100 = fixture("tracelens_h100/gaunernst_bert-small-uncased__1016001.json.gz");
    let v = json(&[&h100]);
    assert_eq!(v["device"]["catalog_id"], "h100-sxm");
    assert_eq!(v["device"]["trace_name"], "NVIDIA H100 80GB HBM3");
    let v = json(&[&h100, "--device", "mi300x"]);
    assert_eq!(v["device"]["catalog_id"], "mi300x");
    // The A100 40 GB board name (`NVIDIA A100-PG509-200`) is the 40 GB part, not the 80.
    let v = json(&[&fixture("hta_a100_alexnet.json.gz")]);
    assert_eq!(v["device"]["catalog_id"], "a100-sxm-40gb");
    rooftop()
        .args(["trace", &h100, "--device", "no-such-gpu"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown device"));
}

#[test]
fn table_summary_and_sections() {
    let h100 = fixture("tracelens_h100/Falconsai_nsfw_image_detection__1016002.json.gz");
    rooftop().args(["trace", &h100]).assert().success().stdout(
        predicate::str::contains("GPU timeline").and(predicate::str::contains("aten::addmm")),
    );
    rooftop()
        .args(["trace", &h100, "--section", "gemm", "--top", "3"])
        .assert()
        .success()
        .stdout(predicate::str::contains("GEMM"));
    rooftop()
        .args(["trace", &h100, "--section", "nonsense"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown section"));
}

#[test]
fn csv_writes_one_file_per_table() {
    let h100 = fixture("tracelens_h100/Falconsai_nsfw_image_detection__1016002.json.gz");
    let (_dir_guard, dir) = tempdir("csv");
    let out = dir.join("report");
    rooftop()
        .args(["trace", &h100, "--format", "csv", "-o", out.to_str().unwrap()])
        .assert()
        .success();
    for f in
        ["gpu_timeline.csv", "ops_summary.csv", "GEMM.csv", "kernel_summary.csv", "findings.csv"]
    {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    // One table on standard output.
    rooftop()
        .args(["trace", &h100, "--format", "csv", "--section", "gemm"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("name,"));
    // Several tables need a directory.
    rooftop()
        .args(["trace", &h100, "--format", "csv"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("-o DIR"));
}

#[test]
fn a_directory_gives_one_report_per_rank_and_a_cross_rank_table() {
    let (_dir_guard, dir) = tempdir("ranks");
    std::fs::copy(fixture("hta_tiny_plain.json"), dir.join("worker0.json")).unwrap();
    std::fs::copy(
        fixture("tracelens_h100/gaunernst_bert-small-uncased__1016001.json.gz"),
        dir.join("worker1.pt.trace.json.gz"),
    )
    .unwrap();
    let d = dir.to_str().unwrap();
    rooftop().args(["trace", d]).assert().success().stdout(
        predicate::str::contains("== rank 0 (worker0.json) ==")
            .and(predicate::str::contains("Across ranks")),
    );
    let out = rooftop().args(["trace", d, "--format", "json"]).output().unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ranks"].as_array().unwrap().len(), 2);
    assert_eq!(v["ranks"][0]["rank"], 0);
    assert!(v["cross_rank"]["ranks"].is_array(), "{}", v["cross_rank"]);
    let csv = dir.join("csv-out");
    rooftop().args(["trace", d, "--format", "csv", "-o", csv.to_str().unwrap()]).assert().success();
    assert!(csv.join("cross_rank.csv").is_file());
    assert!(csv.join("worker0").join("gpu_timeline.csv").is_file());

    // A bad rank: the others are still reported, the exit code is 2. In
    // `{"traceEvents": [ {"ph": }` the `}` where a value belongs is byte 25.
    std::fs::write(dir.join("worker2.json"), b"{\"traceEvents\": [ {\"ph\": }").unwrap();
    rooftop()
        .args(["trace", d])
        .assert()
        .code(2)
        .stdout(predicate::str::contains("Across ranks"))
        .stderr(predicate::str::contains(
            "worker2.json: invalid trace JSON at byte 25 (line 1, column 26)",
        ));

    let (_empty_guard, empty) = tempdir("empty");
    rooftop()
        .args(["trace", empty.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no traces in this directory"));
}

#[test]
fn bad_input_exits_2_with_the_position() {
    let (_dir_guard, dir) = tempdir("bad");
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p.display().to_string()
    };
    // Invalid JSON: line 2 starts at byte 18 (`{"traceEvents": [` is 17 bytes, then
    // `\n`); in ` {"ph": "X" "cat"` the `"` where a comma belongs is index 12: byte 30,
    // line 2, column 13.
    let p = write("invalid.json", b"{\"traceEvents\": [\n {\"ph\": \"X\" \"cat\": 1}]}");
    rooftop().args(["trace", &p]).assert().code(2).stderr(
        predicate::str::contains("invalid.json: invalid trace JSON at byte 30 (line 2, column 13)")
            .and(predicate::str::contains("expected `,` or `}`")),
    );
    let p = write("no_events.json", b"{\"schemaVersion\": 1}");
    rooftop()
        .args(["trace", &p])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no `traceEvents`"));
    let gz = std::fs::read(fixture("hta_mi250_minitoy_train.json.gz")).unwrap();
    let p = write("cut.json.gz", &gz[..gz.len() / 2]);
    rooftop()
        .args(["trace", &p])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cut.json.gz: the gzip stream is truncated or corrupt"));
    let p = write("empty.json", b"");
    rooftop()
        .args(["trace", &p])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("byte 0 (line 1, column 1)"));
    rooftop()
        .args(["trace", "/nonexistent/trace.json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot read /nonexistent/trace.json"));
    // Tolerated problems are warnings in the report, not errors.
    let p = write(
        "warn.json",
        br#"{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": -1}]}"#,
    );
    let v = json(&[&p]);
    let kinds: Vec<&str> =
        v["warnings"].as_array().unwrap().iter().filter_map(|w| w["kind"].as_str()).collect();
    assert!(
        kinds.contains(&"negative_duration") && kinds.contains(&"missing_device_properties"),
        "{kinds:?}"
    );
}

//! End-to-end tests of the time between the kernels in `rooftop trace`: the JSON contract
//! of `critical_path`, `--what-if`, `--cp-window`, the new sections in every format, the
//! HTML step timeline and the Perfetto critical-path track, and bad input (exit code 2).

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

const VLLM: &str = "handmade/vllm_moe_b200.json";
const ALEXNET: &str = "hta_a100_alexnet.json.gz";
const ALEX_STEP: &str = "[param|pytorch.model.alex_net|0|0|0|measure|forward]";

fn json(args: &[&str]) -> Value {
    let out = rooftop().arg("trace").args(args).args(["--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

#[test]
fn critical_path_json_contract() {
    let a = fixture(ALEXNET);
    let v = json(&[&a, "--cp-window", ALEX_STEP, "--cp-instance", "1"]);
    let cp = &v["critical_path"];
    // HTA 0.5.0's critical path of this window (tests/oracles/hta_numbers.json).
    assert!((cp["length_us"].as_f64().unwrap() - 35834.0).abs() < 0.01);
    let events = cp["events"].as_array().unwrap();
    assert!(!events.is_empty());
    for e in events {
        assert!(e["name"].is_string() && e["ts"].is_f64(), "{e}");
    }
    // The trace's own timestamps (µs): inside the trace, after the window's start.
    let start = cp["window"]["start_us"].as_f64().unwrap();
    assert!(events[0]["ts"].as_f64().unwrap() >= start);
    for key in ["idle", "launch", "syncs", "graphs", "modules", "memory", "inference"] {
        assert!(v.get(key).is_some(), "no `{key}`");
    }
}

#[test]
fn what_if_reports_the_new_length() {
    let a = fixture(ALEXNET);
    let v = json(&[
        &a,
        "--cp-window",
        ALEX_STEP,
        "--cp-instance",
        "1",
        "--what-if",
        "cudaMalloc=0",
        "--what-if",
        "aten::conv2d=0.5",
    ]);
    let w = v["critical_path"]["what_if"].as_array().unwrap();
    assert_eq!(w.len(), 2);
    // The four cudaMalloc calls on the path weigh 31.5 ms of its 35.8 ms (HTA's
    // breakdown): free, the path is at most 35.8 − 31.5 ms plus what was hidden behind.
    let saving = w[0]["saving_us"].as_f64().unwrap();
    assert!(saving > 25_000.0 && saving <= 31_525.0, "{saving}");
    assert!(w[1]["length_us"].as_f64().unwrap() < w[1]["baseline_us"].as_f64().unwrap());
}

#[test]
fn sections_in_every_format() {
    let p = fixture(VLLM);
    for section in
        ["idle", "launch", "syncs", "graphs", "critical-path", "modules", "memory", "inference"]
    {
        for format in ["table", "md"] {
            rooftop()
                .args(["trace", &p, "--section", section, "--format", format])
                .assert()
                .success()
                .stdout(predicate::str::is_empty().not());
        }
        let tmp =
            tempfile::Builder::new().prefix(&format!("rooftop-gaps-{section}-")).tempdir().unwrap();
        let out = rooftop()
            .args(["trace", &p, "--section", section, "--format", "csv", "-o"])
            .arg(tmp.path().join("csv"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{section}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let out = rooftop().args(["trace", &p, "--section", "idle"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("host wait") && text.contains("graph"));
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "wider than 100 columns: {line}");
    }
}

#[test]
fn html_has_the_step_timeline_and_perfetto_the_path_track() {
    let p = fixture(VLLM);
    let out = rooftop().args(["trace", &p, "--format", "html"]).output().unwrap();
    assert!(out.status.success());
    let html = String::from_utf8(out.stdout).unwrap();
    assert!(html.contains("step timeline with the critical path"));
    assert!(html.contains("on the critical path"));
    assert!(html.contains("memory over time"));
    let out = rooftop().args(["trace", &p, "--format", "perfetto"]).output().unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let track: Vec<&Value> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "critical_path")
        .collect();
    assert!(!track.is_empty());
    let names = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["name"] == "process_name" && e["args"]["name"] == "critical path");
    assert!(names);
}

#[test]
fn bad_gap_options_exit_2() {
    let p = fixture(VLLM);
    rooftop().args(["trace", &p, "--cp-window", "no such step"]).assert().code(2).stderr(
        predicate::str::contains("--cp-window").and(predicate::str::contains("no such step")),
    );
    rooftop()
        .args(["trace", &p, "--cp-window", "execute_", "--cp-instance", "9"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("instance 9"));
    for bad in ["aten::mm", "aten::mm=x", "=0.5", "aten::mm=-1"] {
        rooftop().args(["trace", &p, "--what-if", bad]).assert().code(2);
    }
}

/// One cause, one name: the idle tables (terminal, Markdown, HTML), the gaps table's
/// cause column and the `trace.gpu_idle` finding all say `host wait`, `kernel wait`,
/// `other`, `graph` (the JSON keys `host_wait`, ... with blanks), in that order, and
/// write no time as `0`, never `0 s`. The handmade nesting trace has no kernel wait
/// (its JSON `kernel_wait` is 0).
#[test]
fn idle_causes_have_one_name_everywhere() {
    let p = fixture("handmade/nesting_graph.json");
    let v = json(&[&p]);
    let dev = &v["idle"]["devices"][0];
    let keys: Vec<&str> = dev["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["category"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["host_wait", "kernel_wait", "other", "graph"]);
    assert_eq!(dev["categories"][1]["idle_us"].as_f64(), Some(0.0));
    let idle = v["findings"].as_array().unwrap().iter().find(|f| f["id"] == "trace.gpu_idle");
    let evidence = idle.unwrap()["evidence"].as_str().unwrap();
    let at: Vec<usize> = ["host wait ", ", kernel wait 0 (0%), ", ", other ", ", graph "]
        .iter()
        .map(|w| evidence.find(w).unwrap_or_else(|| panic!("no `{w}` in: {evidence}")))
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{evidence}");
    for old in ["dependency wait", "inside graph", " 0 s"] {
        assert!(!evidence.contains(old), "{evidence}");
    }
    let header = "host wait   kernel wait   other";
    for format in ["table", "md", "html"] {
        let out = rooftop().args(["trace", &p, "--section", "idle", "--format", format]).output();
        let text = String::from_utf8(out.unwrap().stdout).unwrap();
        if format == "table" {
            assert!(text.contains(header), "{text}");
            assert!(text.contains("│ 0        host wait "), "{text}");
        }
        assert!(text.contains("kernel wait") && !text.contains("kernel_wait"), "{format}");
        assert!(!text.contains("host_wait") && !text.contains(" 0 s "), "{format}");
    }
}

//! `rooftop bench --spec`: the example specs (examples/kernels/) through the mock backend,
//! which checks the spec machinery (parsing, buffers, scalars, launches, checks,
//! exports, comparisons) with simulated times; bad specs and bad flags.

#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use std::path::PathBuf;

fn examples() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/kernels/kernels.toml")
        .display()
        .to_string()
}

/// `rooftop bench --backend mock --spec <examples> --no-ceilings` with short timing.
fn mock(args: &[&str]) -> Command {
    let mut c = Command::cargo_bin("rooftop").unwrap();
    c.args(["bench", "--backend", "mock", "--spec", &examples(), "--no-ceilings"])
        .args(["--min-time", "0.001", "--warmup-time", "0", "--min-runs", "3"])
        .args(args);
    c
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn every_example_kernel_at_every_size_is_checked_and_timed() {
    let out = mock(&["--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json_of(&out);
    assert_eq!(v["backend"]["simulated"], true);
    let rs = v["results"].as_array().unwrap();
    let kernels: Vec<&str> = rs.iter().map(|r| r["kernel"].as_str().unwrap()).collect();
    assert_eq!(
        kernels,
        [
            "sgemm_naive",
            "sgemm_naive",
            "sgemm_tiled",
            "sgemm_tiled",
            "int4_matvec",
            "int4_matvec",
            "swiglu",
            "swiglu",
            "swiglu_files",
            "swiglu_files"
        ]
    );
    for r in rs {
        assert_eq!(r["check"]["passed"], true, "{r}");
        assert!(r["median_s"].as_f64().unwrap() > 0.0);
        assert!(r["flops"].as_f64().unwrap() > 0.0);
        assert!(r["implementation"]["label"].as_str().unwrap().contains("mock of"));
    }
    // sgemm_naive at M=200 N=72 K=100: 2 M N K FLOPs, grid from the spec's expressions.
    let r = &rs[1];
    assert_eq!(r["config"]["sizes"]["M"], 200);
    assert_eq!(r["flops"].as_f64().unwrap(), 2.0 * 200.0 * 72.0 * 100.0);
    assert_eq!(r["config"]["launch"]["grid"], serde_json::json!([5, 13, 1]));
    assert_eq!(r["config"]["launch"]["block"], serde_json::json!([16, 16, 1]));
    // int4_matvec at N=1024 K=4096 uses the suite's int4 g128 model.
    assert_eq!(rs[5]["config"]["weights"], "4-bit g128");
}

#[test]
fn single_config_autotune_and_export() {
    let tmp = tempfile::Builder::new().prefix("rooftop-cli-spec-").tempdir().unwrap();
    let dir = tmp.path();
    let json = dir.join("q4.json");
    let out = mock(&[
        "--kernel",
        "int4_matvec",
        "--single-config",
        "4096,4096",
        "--autotune",
        "--export-json",
        json.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rs = v["results"].as_array().unwrap();
    assert_eq!(rs.len(), 3, "one result per block of the spec");
    let mut grids: Vec<(u64, u64)> = rs
        .iter()
        .map(|r| {
            let l = &r["config"]["launch"];
            (l["block"][0].as_u64().unwrap(), l["grid"][0].as_u64().unwrap())
        })
        .collect();
    grids.sort_unstable();
    assert_eq!(grids, [(64, 64), (128, 32), (256, 16)]);
    assert!(rs.iter().all(|r| r["config"]["sizes"]["N"] == 4096));
}

#[test]
fn compare_says_which_is_faster_with_uncertainty() {
    let out = mock(&["--compare", "sgemm_naive,sgemm_tiled"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Comparison\n  M=128 N=128 K=128 fp32\n"), "{text}");
    assert!(text.contains("times faster than"), "{text}");
    assert!(text.contains("(mean ± σ of"), "{text}");
    // Machine formats keep their schema; the summary goes to stderr.
    let out = mock(&["--compare", "sgemm_naive,sgemm_tiled", "--format", "json"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(json_of(&out)["results"].as_array().unwrap().len(), 4);
    assert!(String::from_utf8_lossy(&out.stderr).contains("times faster than"));
}

#[test]
fn out_of_bounds_writes_and_wrong_results_fail_and_are_not_timed() {
    let out = mock(&["--kernel", "sgemm_tiled", "--format", "json"])
        .env("ROOFTOP_MOCK_OOB", "sgemm_tiled")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v = json_of(&out);
    for r in v["results"].as_array().unwrap() {
        assert_eq!(r["check"]["passed"], false);
        assert!(r["median_s"].is_null());
        let f = r["check"]["first_failure"].as_str().unwrap();
        assert!(f.contains("wrote past the end of output `C`"), "{f}");
    }
    mock(&["--kernel", "int4_matvec"])
        .env("ROOFTOP_MOCK_WRONG", "int4_matvec")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "2 results failed their check against the reference (not timed)",
        ));
}

#[test]
fn bad_specs_and_flags_are_one_clear_error() {
    let tmp = tempfile::Builder::new().prefix("rooftop-cli-bad-spec-").tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("k.cu"), "// empty").unwrap();
    let spec = dir.join("kernels.toml");
    std::fs::write(
        &spec,
        r#"[[kernel]]
name    = "k1"
source  = "k.cu"
work    = { op = "gemm", m = "M", n = "N", k = "K" }
sizes   = [ { M = 64, N = 64, K = 32 } ]
grid    = [ "ceil(N / 16)", "ceil(Q / 16)", 1 ]
block   = [ 16, 16, 1 ]
buffers = [
  { name = "A", dtype = "f32", len = "M*K" },
  { name = "B", dtype = "f32", len = "K*N" },
  { name = "C", dtype = "f32", len = "M*N", output = true },
]
"#,
    )
    .unwrap();
    let mut c = Command::cargo_bin("rooftop").unwrap();
    c.args(["bench", "--backend", "mock", "--no-ceilings", "--spec", spec.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "{}:6:29: kernel `k1`, grid[1] = \"ceil(Q / 16)\": unknown variable `Q`",
            spec.display()
        )));

    // Sources need a backend that compiles them.
    let mut c = Command::cargo_bin("rooftop").unwrap();
    c.args(["bench", "--backend", "cpu", "--no-ceilings", "--spec", &examples()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("the cpu backend could not load any source"));

    mock(&["--sizes", "1M"]).assert().code(2).stderr(predicate::str::contains("--sizes"));
    mock(&["--compare", "sgemm_naive,nope"]).assert().code(2).stderr(predicate::str::contains(
        "no kernel `nope` in the spec (it has sgemm_naive, sgemm_tiled, int4_matvec, swiglu, \
         swiglu_files)",
    ));
    mock(&["--compare", "sgemm_naive,int4_matvec"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("must be the same"));
    mock(&["--kernel", "sgemm_naive", "--single-config", "1,2"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("takes 3 size values (M,N,K), got 2"));
    let mut c = Command::cargo_bin("rooftop").unwrap();
    c.args(["bench", "--backend", "mock", "--compare", "a,b"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--spec"));
}

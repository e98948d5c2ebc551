//! End-to-end tests of `rooftop diff`: exit codes (0 ok, 1 regression above
//! `--fail-above`, 2 bad input), on mock bench exports (deterministic: two runs give the
//! same samples) and on trace exports of the fixtures.

#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn rooftop() -> Command {
    Command::cargo_bin("rooftop").expect("the rooftop binary is built by cargo test")
}

/// A fresh, empty scratch directory and its path. The directory is removed when the
/// guard drops, at the end of the test whether it passed or failed: bind the guard to
/// a name (`_x_guard`), not `_`, which would drop it at once.
fn tempdir(tag: &str) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::Builder::new().prefix(&format!("rooftop-cli-diff-{tag}-")).tempdir().unwrap();
    let p = d.path().to_path_buf();
    (d, p)
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

/// A mock bench export of triad (63 samples, see tests/bench.rs) in `dir`.
fn bench_export(dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    let o = rooftop()
        .args([
            "bench",
            "--backend",
            "mock",
            "--kernel",
            "triad",
            "--no-ceilings",
            "--format",
            "json",
            "-o",
            &p(&out),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

/// `src` with every time of result 0 multiplied by `factor` and its rates divided by it
/// (a slower or faster run).
fn scaled(src: &Path, dst: &Path, factor: f64) {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(src).unwrap()).unwrap();
    let r = &mut v["results"][0];
    for t in r["times_s"].as_array_mut().unwrap() {
        *t = Value::from(t.as_f64().unwrap() * factor);
    }
    for k in ["median_s", "mean_s", "min_s", "max_s"] {
        r[k] = Value::from(r[k].as_f64().unwrap() * factor);
    }
    // Same work in more time: lower rates and attainment.
    for k in ["achieved_gbs", "achieved_gflops", "attainment_pct"] {
        r[k] = Value::from(r[k].as_f64().unwrap() / factor);
    }
    std::fs::write(dst, serde_json::to_string(&v).unwrap()).unwrap();
}

fn diff(args: &[&str]) -> std::process::Output {
    rooftop().arg("diff").args(args).output().unwrap()
}

/// `rooftop trace INPUT --format FORMAT -o OUT`, which must succeed; `OUT`.
fn trace_to(input: &Path, format: &str, out: PathBuf) -> PathBuf {
    let o =
        rooftop().args(["trace", &p(input), "--format", format, "-o", &p(&out)]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

#[test]
fn identical_mock_runs_do_not_regress() {
    let (_d_guard, d) = tempdir("same");
    let a = bench_export(&d, "a.json");
    let b = bench_export(&d, "b.json");
    let out = diff(&[&p(&a), &p(&b), "--fail-above", "1%"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1 row unchanged") && text.contains("OK: nothing regressed"), "{text}");
}

#[test]
fn a_slower_run_fails_the_gate_above_its_threshold_only() {
    let (_d_guard, d) = tempdir("slow");
    let a = bench_export(&d, "a.json");
    let slow = d.join("slow.json");
    scaled(&a, &slow, 1.2);
    // +20%: fails a 5% gate (exit 1, report printed first) ...
    let out = diff(&[&p(&a), &p(&slow), "--fail-above", "5%"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Regressions (1)") && text.contains("+20.0%") && text.contains("FAIL"),
        "{text}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("regressed by more than 5%"));
    // ... but not a 25% one, nor a run without a gate.
    assert_eq!(diff(&[&p(&a), &p(&slow), "--fail-above", "25"]).status.code(), Some(0));
    assert_eq!(diff(&[&p(&a), &p(&slow)]).status.code(), Some(0));
    // The other way round it is an improvement; by attainment too.
    let out = diff(&[
        &p(&slow),
        &p(&a),
        "--fail-above",
        "5%",
        "--metric",
        "attainment",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rows"][0]["status"], "improvement");
    assert_eq!(v["rows"][0]["test"]["name"], "mann-whitney-u");
    assert!((v["rows"][0]["change_pct"].as_f64().unwrap() - 20.0).abs() < 0.01);
    // Markdown for the PR comment, CSV for a spreadsheet.
    let out = diff(&[&p(&a), &p(&slow), "--fail-above", "5%", "--format", "md"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("**FAIL:"));
    let out = diff(&[&p(&a), &p(&slow), "--format", "csv"]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("section,name,shape,status"));
}

#[test]
fn trace_exports_compare_by_op_and_kernel() {
    let (_dir_guard, dir) = tempdir("trace");
    let fx = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../../tests/fixtures/kineto/tracelens_h100/gaunernst_bert-small-uncased__1016001.json.gz",
    );
    let base = dir.join("a.json");
    let o =
        rooftop().args(["trace", &p(&fx), "--format", "json", "-o", &p(&base)]).output().unwrap();
    assert!(o.status.success());
    let out = diff(&[&p(&base), &p(&base), "--fail-above", "1%", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "trace");
    let rows = v["rows"].as_array().unwrap();
    assert!(rows.iter().any(|r| r["section"] == "op GEMM"));
    assert!(rows.iter().any(|r| r["section"] == "kernel"));
    assert!(rows.iter().all(|r| r["status"] != "regression" && r["status"] != "added"));
    assert_eq!(v["total"]["change_pct"], 0.0);
    // The same trace against another model's: ops added and removed, no crash.
    let fx2 = fx.with_file_name("Falconsai_nsfw_image_detection__1016002.json.gz");
    let other = dir.join("b.json");
    let o =
        rooftop().args(["trace", &p(&fx2), "--format", "json", "-o", &p(&other)]).output().unwrap();
    assert!(o.status.success());
    let out = diff(&[&p(&base), &p(&other)]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Added (") && text.contains("Removed ("), "{text}");
}

#[test]
fn bad_input_exits_2_with_the_reason() {
    let (_d_guard, d) = tempdir("bad");
    let junk = d.join("junk.json");
    std::fs::write(&junk, "{\n \"a\": [1, 2,\n").unwrap();
    let other = d.join("other.json");
    std::fs::write(&other, "{\"hello\": 1}").unwrap();
    let analyze = d.join("analyze.json");
    let o = rooftop()
        .args([
            "analyze",
            "copy",
            "--elements",
            "1000000",
            "-d",
            "h100-sxm",
            "--time-us",
            "5",
            "--format",
            "json",
            "-o",
            &p(&analyze),
        ])
        .output()
        .unwrap();
    assert!(o.status.success());
    let trace = d.join("trace.json");
    let fx = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/kineto/hta_tiny_plain.json");
    assert!(rooftop()
        .args(["trace", &p(&fx), "--format", "json", "-o", &p(&trace)])
        .output()
        .unwrap()
        .status
        .success());
    for (args, says) in [
        (vec![p(&d.join("missing.json")), p(&junk)], "cannot read"),
        (vec![p(&junk), p(&junk)], "not JSON"),
        (vec![p(&other), p(&other)], "not a rooftop export"),
        (vec![p(&analyze), p(&trace)], "compare exports of one kind"),
        (vec![p(&analyze), p(&analyze), "--fail-above".into(), "five".into()], "not a percentage"),
        (vec![p(&analyze), p(&analyze), "--metric".into(), "speed".into()], "unknown metric"),
    ] {
        let out = rooftop().arg("diff").args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // Analyze exports compare too (no spread: the change alone decides).
    let out = diff(&[&p(&analyze), &p(&analyze), "--fail-above", "1%"]);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn counters_exports_compare_by_kernel() {
    let (_d_guard, d) = tempdir("counters");
    let base = d.join("base.json");
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/rocprof/rocprof_compute_vcopy_MI200");
    let o = rooftop()
        .args(["counters", &p(&fixture), "--format", "json", "-o", &p(&base)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The same profile against itself: nothing changes.
    let same = diff(&[&p(&base), &p(&base), "--fail-above", "1%"]);
    assert_eq!(same.status.code(), Some(0), "{}", String::from_utf8_lossy(&same.stdout));
    // Every dispatch 25% slower: vcopy's three dispatches share one launch shape, so the
    // Mann-Whitney test runs on their durations, which overlap (15.5-20.5 µs before,
    // 19.4-25.6 µs after): not significant, the kernel is unchanged. The total, a sum of
    // means without a test, moves 25% and fails the gate.
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    for key in ["dispatches", "kernels"] {
        for r in v[key].as_array_mut().unwrap() {
            if let Some(t) = r["duration_ns"].as_f64() {
                r["duration_ns"] = Value::from(t * 1.25);
            }
        }
    }
    let slow = d.join("slow.json");
    std::fs::write(&slow, serde_json::to_string(&v).unwrap()).unwrap();
    let out = diff(&[&p(&base), &p(&slow), "--fail-above", "10%", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["kind"], "counters");
    let row = &j["rows"][0];
    assert!((row["change_pct"].as_f64().unwrap() - 25.0).abs() < 1e-9, "{row}");
    assert_eq!(row["status"], "unchanged", "{row}");
    assert_eq!(row["test"]["name"], "mann-whitney-u", "{row}");
}

#[test]
fn an_export_with_a_field_removed_exits_2_naming_the_field() {
    let (_d_guard, d) = tempdir("field");
    let a = bench_export(&d, "a.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    // Without `check.passed` the result is neither passed nor failed: not a 0, not "passed".
    v["results"][0]["check"].as_object_mut().unwrap().remove("passed");
    let cut = d.join("cut.json");
    std::fs::write(&cut, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    for args in [[p(&a), p(&cut)], [p(&cut), p(&a)]] {
        let out = diff(&[&args[0], &args[1], "--fail-above", "1%"]);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("{}: field `results[0].check.passed` is missing", p(&cut))),
            "{err}"
        );
        assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    }
    // A mistyped field is named the same way.
    v["results"][0]["check"]["passed"] = Value::from(true);
    v["results"][0]["median_s"] = Value::from("fast");
    std::fs::write(&cut, serde_json::to_string(&v).unwrap()).unwrap();
    let out = diff(&[&p(&a), &p(&cut)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("field `results[0].median_s` is not valid: invalid type"), "{err}");
}

/// Exports judged on different devices (here the mock's own and one whose `device.id` is
/// edited to `mi300x`, as an export made with `--device mi300x` says) compare hardware as
/// well as code: `diff` warns, naming both devices; the same device gives no warning.
#[test]
fn exports_of_different_devices_warn() {
    let (_dir_guard, dir) = tempdir("devices");
    let a = bench_export(&dir, "a.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    assert_eq!(v["device"]["id"], "mock");
    v["device"]["id"] = Value::from("mi300x");
    let b = dir.join("b.json");
    std::fs::write(&b, serde_json::to_string(&v).unwrap()).unwrap();
    let out = diff(&[&p(&a), &p(&b)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("different devices"), "{err}");
    assert!(err.contains("on mock") && err.contains("on mi300x"), "{err}");
    let out = diff(&[&p(&a), &p(&a)]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("different devices"));
}

/// Exports of different work (the triad against copy) share no row: without a gate the
/// diff warns; with one it exits 2 instead of passing a gate that compared nothing.
#[test]
fn a_gate_over_exports_with_no_row_in_common_fails_as_bad_input() {
    let (_d_guard, d) = tempdir("nomatch");
    let a = bench_export(&d, "a.json");
    let mut export: Value = serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    export["results"][0]["kernel"] = Value::from("copy");
    let b = d.join("b.json");
    std::fs::write(&b, serde_json::to_string(&export).unwrap()).unwrap();
    let out = diff(&[&p(&a), &p(&b)]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("warning: no row of") && err.contains("(1 removed, 1 added)"), "{err}");
    let out = diff(&[&p(&a), &p(&b), "--fail-above", "5%"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("they look like reports of different work"), "{err}");
    // The article before the kind reads right.
    let analyze = d.join("an.json");
    let o = rooftop()
        .args(["analyze", "copy", "--elements", "1000", "--device", "h100-sxm"])
        .args(["--format", "json", "-o", &p(&analyze)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = diff(&[&p(&a), &p(&analyze)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is a bench export but") && err.contains("is an analyze export"), "{err}");
}

/// `rooftop analyze --format json` of a 4096×256×256 bf16 GEMM on the H100 timed at
/// `time_us`, written to `dir/name`.
fn analyze_export(dir: &Path, name: &str, time_us: &str) -> PathBuf {
    let out = dir.join(name);
    let o = rooftop()
        .args(["analyze", "gemm", "--m", "4096", "--n", "256", "--k", "256", "--dtype", "bf16"])
        .args(["--device", "h100-sxm", "--time-us", time_us, "--format", "json", "-o", &p(&out)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

/// JSON and CSV name the values after their unit (µs for times, as the analyze export
/// holds them: 0.0002 s would have read 0.00019999999999999998 in seconds), and a change
/// of millions of percent prints with three digits.
#[test]
fn diff_values_carry_their_unit_and_are_what_was_read() {
    let (_d_guard, d) = tempdir("units");
    let base = analyze_export(&d, "base.json", "200");
    let new = analyze_export(&d, "new.json", "200.3");
    let out = diff(&[&p(&base), &p(&new), "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema_version"], 2);
    assert_eq!(
        (&v["rows"][0]["base_us"], &v["rows"][0]["new_us"]),
        (&Value::from(200.0), &Value::from(200.3))
    );
    assert_eq!(
        (&v["total"]["base_us"], &v["total"]["new_us"]),
        (&Value::from(200.0), &Value::from(200.3))
    );
    assert!(v["rows"][0].get("base").is_none());
    let out = diff(&[&p(&base), &p(&new), "--format", "csv"]);
    let csv = String::from_utf8(out.stdout).unwrap();
    assert!(
        csv.starts_with("section,name,shape,status,metric,base_us,new_us,change_pct,"),
        "{csv}"
    );
    assert!(csv.contains(",time,200,200.3,"), "{csv}");
    // 1 µs → 287,116.53 µs: +28,711,553% = +28.7M%.
    let fast = analyze_export(&d, "fast.json", "1");
    let slow = analyze_export(&d, "slow.json", "287116.53");
    let out = diff(&[&p(&fast), &p(&slow)]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("+28.7M%") && !text.contains("28711553"), "{text}");
}

/// `diff` reads no device: a `--device-file`, even one that does not exist, is not read,
/// and a warning says it has no effect; the comparison runs as without it.
#[test]
fn a_device_file_is_not_read_and_said_to_have_no_effect() {
    let (_guard, dir) = tempdir("devfile");
    let a = bench_export(&dir, "a.json");
    let b = bench_export(&dir, "b.json");
    let missing = dir.join("none.toml");
    let o = diff(&[&p(&a), &p(&b), "--device-file", &p(&missing)]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("warning: --device-file has no effect on `diff`"), "{err}");
}

/// The bert-small H100 trace fixture, inflated, with every GPU kernel's `dur` times
/// `factor`, written to `dst`.
fn slowed_trace(dst: &Path, factor: f64) -> PathBuf {
    let fx = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../../tests/fixtures/kineto/tracelens_h100/gaunernst_bert-small-uncased__1016001.json.gz",
    );
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(&fx).unwrap()),
        &mut text,
    )
    .unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    for e in v["traceEvents"].as_array_mut().unwrap() {
        if e["cat"] == "kernel" {
            e["dur"] = Value::from(e["dur"].as_f64().unwrap() * factor);
        }
    }
    std::fs::write(dst, serde_json::to_string(&v).unwrap()).unwrap();
    fx
}

/// Two traces compare as `rooftop trace --format json` exports of them do: the same
/// rows, whichever side is a trace and whichever an export; a trace whose kernels all
/// take 30% longer (hand arithmetic: every `dur` times 1.3) regresses by 30% per kernel
/// and per op that launched them, and fails a 10% gate.
#[test]
fn traces_compare_as_their_exports_do() {
    let (_dir_guard, dir) = tempdir("traces");
    let slow = dir.join("slow.json");
    let fx = slowed_trace(&slow, 1.3);
    let fx_json = trace_to(&fx, "json", dir.join("a.json"));
    let slow_json = trace_to(&slow, "json", dir.join("b.json"));
    let rows = |args: &[&str]| {
        let out = diff(&[args, &["--format", "json", "--fail-above", "10%"]].concat());
        assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["kind"], "trace");
        v["rows"].clone()
    };
    let from_traces = rows(&[&p(&fx), &p(&slow)]);
    assert_eq!(from_traces, rows(&[&p(&fx_json), &p(&slow_json)]));
    assert_eq!(from_traces, rows(&[&p(&fx), &p(&slow_json)]));
    // Ops' rows are their kernels' time too; a copy (not a kernel) is unchanged.
    let rows = from_traces.as_array().unwrap();
    assert!(rows.iter().any(|r| r["section"] == "kernel"));
    assert!(rows.iter().any(|r| r["section"] == "op GEMM"));
    for r in rows {
        let pct = r["change_pct"].as_f64().unwrap();
        match r["status"].as_str() {
            Some("regression") => assert!((pct - 30.0).abs() < 0.1, "{r}"),
            _ => assert!(r["section"] != "kernel" && pct == 0.0, "{r}"),
        }
    }
    // A trace against itself: nothing changed, the gate passes.
    let same = diff(&[&p(&fx), &p(&fx), "--fail-above", "1%"]);
    assert_eq!(same.status.code(), Some(0), "{}", String::from_utf8_lossy(&same.stderr));
}

/// `--device` judges traces on that device (attainment needs one); for two exports it is
/// said to have no effect. A file that is neither a trace nor an export names both.
#[test]
fn traces_take_a_device_and_other_json_is_named() {
    let (_dir_guard, dir) = tempdir("tracedev");
    let fx = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/kineto/hta_tiny_plain.json");
    let out = diff(&[&p(&fx), &p(&fx), "-d", "h100-sxm", "--metric", "attainment"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let unknown = diff(&[&p(&fx), &p(&fx), "-d", "no-such-gpu"]);
    assert_eq!(unknown.status.code(), Some(2));
    let a = bench_export(&dir, "a.json");
    let out = diff(&[&p(&a), &p(&a), "-d", "h100-sxm"]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--device has no effect on `diff` of two exports"), "{err}");
    let other = dir.join("other.json");
    std::fs::write(&other, "{\"hello\": 1}").unwrap();
    let out = diff(&[&p(&fx), &p(&other)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a rooftop export, nor a trace"), "{err}");
    assert!(err.contains("other.json"), "{err}");
}

/// A directory of ranks compares as its `rooftop trace DIR --format json` export does.
#[test]
fn directories_of_ranks_compare_as_their_exports_do() {
    let (_dir_guard, dir) = tempdir("rankdirs");
    let ranks = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/kineto/ranks");
    let export = trace_to(&ranks, "json", dir.join("ranks.json"));
    let json = |args: &[&str]| {
        let out = diff(&[args, &["--format", "json", "--fail-above", "1%"]].concat());
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let from_dir = json(&[&p(&ranks), &p(&ranks)]);
    assert_eq!(from_dir["kind"], "trace_ranks");
    assert!(!from_dir["rows"].as_array().unwrap().is_empty());
    assert_eq!(from_dir["rows"], json(&[&p(&ranks), &p(&export)])["rows"]);
    // Rank tables keep no per-rank report: named, exit 2.
    let tables = trace_to(&ranks, "parquet", dir.join("tables"));
    let out = diff(&[&p(&tables), &p(&ranks)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds rank tables"));
}

/// A trace whose `traceEvents` come after 2 MB of metadata (past what the first bytes
/// show) is still analysed as a trace: the export's reader finds the key and hands it
/// back.
#[test]
fn a_trace_with_long_metadata_is_still_a_trace() {
    let (_dir_guard, dir) = tempdir("latetrace");
    let fx = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/kineto/hta_tiny_plain.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&fx).unwrap()).unwrap();
    let events = v["traceEvents"].take();
    let mut late = serde_json::Map::new();
    late.insert("notes".into(), Value::from("x".repeat(2 << 20)));
    late.insert("traceEvents".into(), events);
    let path = dir.join("late.json");
    std::fs::write(&path, serde_json::to_string(&Value::Object(late)).unwrap()).unwrap();
    let out = diff(&[&p(&fx), &p(&path), "--format", "json", "--fail-above", "1%"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "trace");
    assert!(!v["rows"].as_array().unwrap().is_empty());
}

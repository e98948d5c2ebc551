#![allow(clippy::unwrap_used)]

use super::*;
use serde_json::json;

/// A bench export with one result per `(kernel, samples)`.
fn bench(results: &[(&str, Vec<f64>)]) -> String {
    let rs: Vec<Value> = results
        .iter()
        .map(|(k, t)| {
            let mut s = t.clone();
            s.sort_by(f64::total_cmp);
            let median = s[s.len() / 2];
            json!({
                "kernel": k,
                "implementation": {"id": "rooftop", "builtin": false},
                "config": {"label": "n=1024 fp32", "launch_label": "default"},
                "check": {"passed": true},
                "times_s": t,
                "median_s": median,
                "attainment_pct": 0.001 / median * 100.0,
                "achieved_gflops": 1.0 / median,
                "achieved_gbs": 2.0 / median,
            })
        })
        .collect();
    json!({"schema_version": 1, "backend": {"backend": "mock"}, "results": rs}).to_string()
}

/// 20 samples around `center` with ±1% spread.
fn samples(center: f64) -> Vec<f64> {
    (0..20).map(|i| center * (1.0 + 0.01 * (f64::from(i % 5) - 2.0) / 2.0)).collect()
}

fn run(base: &str, new: &str, o: &Options) -> Diff {
    compare(&load(base, "base.json").unwrap(), &load(new, "new.json").unwrap(), o).unwrap()
}

#[test]
fn a_ten_percent_slowdown_is_a_significant_regression() {
    let base = bench(&[("triad", samples(1e-3)), ("copy", samples(2e-3))]);
    let new = bench(&[("triad", samples(1.1e-3)), ("copy", samples(2e-3))]);
    let d = run(&base, &new, &Options { fail_above_pct: Some(5.0), ..Options::default() });
    let triad = d.rows.iter().find(|r| r.name == "triad").unwrap();
    assert_eq!(triad.status, Status::Regression);
    // Medians 1.0 ms → 1.1 ms: +10% (hand arithmetic).
    assert!((triad.change_pct.unwrap() - 10.0).abs() < 1e-9);
    let t = triad.test.unwrap();
    assert_eq!(t.name, "mann-whitney-u");
    assert!(t.p_value < 1e-6, "{}", t.p_value);
    assert!(triad.fails_gate);
    let copy = d.rows.iter().find(|r| r.name == "copy").unwrap();
    assert_eq!(copy.status, Status::Unchanged);
    // The total, 3.0 ms → 3.1 ms (+3.3%), is under the 5% gate.
    assert_eq!(d.failing().len(), 1);
}

#[test]
fn the_gate_threshold_and_the_total() {
    let base = bench(&[("triad", samples(1e-3)), ("copy", samples(2e-3))]);
    let new = bench(&[("triad", samples(1.1e-3)), ("copy", samples(2e-3))]);
    let d = run(&base, &new, &Options { fail_above_pct: Some(15.0), ..Options::default() });
    assert!(d.failing().is_empty());
    // Total: sum of medians 3.0 ms → 3.1 ms = +3.33%.
    let t = d.total.as_ref().unwrap();
    assert!((t.change_pct.unwrap() - 100.0 / 30.0).abs() < 1e-9);
    assert_eq!(t.status, Status::Regression);
    assert!(render::verdict(&d).starts_with("OK"));
}

#[test]
fn a_change_within_noise_is_not_a_regression() {
    // Same distribution, shifted by 0.2%: above a 0.1% minimum change but the samples
    // (spread ±1%) cannot tell it apart.
    let base = bench(&[("triad", samples(1e-3))]);
    let mut shifted = samples(1.002e-3);
    shifted.reverse();
    let new = bench(&[("triad", shifted)]);
    let d = run(
        &base,
        &new,
        &Options { min_change_pct: 0.1, fail_above_pct: Some(0.1), ..Options::default() },
    );
    let r = &d.rows[0];
    assert_eq!(r.status, Status::Unchanged);
    assert!(r.test.unwrap().p_value > 0.05);
    assert!(d.rows.iter().all(|r| !r.fails_gate));
}

#[test]
fn attainment_is_higher_is_better() {
    let base = bench(&[("triad", samples(1e-3))]);
    let new = bench(&[("triad", samples(0.8e-3))]);
    let d = run(
        &base,
        &new,
        &Options { metric: Metric::Attainment, fail_above_pct: Some(5.0), ..Options::default() },
    );
    let r = &d.rows[0];
    // Attainment 100% → 125%: an improvement of +25%.
    assert_eq!(r.status, Status::Improvement);
    assert!((r.change_pct.unwrap() - 25.0).abs() < 1e-9);
    assert!(d.total.is_none());
}

#[test]
fn added_removed_and_normalised_names() {
    let base = bench(&[("gemm_64x64<float>", samples(1e-3)), ("old", samples(1e-3))]);
    let new = bench(&[("gemm_128x64<half>", samples(1e-3)), ("fresh", samples(1e-3))]);
    let d = run(&base, &new, &Options::default());
    let g = d.rows.iter().find(|r| r.name.starts_with("gemm")).unwrap();
    assert_eq!(g.matched_by, "normalised");
    assert_eq!(g.base_name.as_deref(), Some("gemm_64x64<float>"));
    assert_eq!(d.count(Status::Added), 1);
    assert_eq!(d.count(Status::Removed), 1);
    assert_eq!(normalise("void at::native::kernel<4, float>(int, float*)"), "at::native::kernel");
    assert_eq!(normalise("sm90_gemm_tilesize64x128"), "sm#_gemm_tilesize#x#");
}

fn trace(mean_us: f64, std_us: f64, count: u64, window_ms: f64) -> String {
    json!({
        "schema_version": 1,
        "timeline": {},
        "window": {"duration_ms": window_ms},
        "categories": {"GEMM": [{
            "name": "aten::mm",
            "params": {"M": 128, "N": 256, "K": 512, "stride_A": [512, 1]},
            "count": count,
            "kernel_time_us": {"mean": mean_us, "std": std_us, "min": 0, "max": 0, "median": mean_us, "sum": mean_us * count as f64},
            "roofline_attainment_pct": 50.0,
            "achieved_tflops": {"mean": 1.0},
            "achieved_tbs": {"mean": 0.5}
        }]},
        "kernels": [{"name": "void gemm<128>(int)", "parent_op": "aten::mm", "stream": 7, "count": count, "mean_us": mean_us, "std_us": std_us}]
    })
    .to_string()
}

#[test]
fn trace_rows_use_welch_and_the_window_total() {
    let d = run(
        &trace(100.0, 2.0, 50, 10.0),
        &trace(110.0, 2.0, 50, 11.0),
        &Options { fail_above_pct: Some(5.0), ..Options::default() },
    );
    let op = d.rows.iter().find(|r| r.section == "op GEMM").unwrap();
    assert_eq!(op.shape, "K=512 M=128 N=256");
    assert_eq!(op.status, Status::Regression);
    assert_eq!(op.test.unwrap().name, "welch-t");
    assert!(op.test.unwrap().p_value < 1e-10);
    assert!((op.change_pct.unwrap() - 10.0).abs() < 1e-9);
    let k = d.rows.iter().find(|r| r.section == "kernel").unwrap();
    assert_eq!(k.status, Status::Regression);
    let t = d.total.as_ref().unwrap();
    assert_eq!((t.base, t.new), (Some(0.01), Some(0.011)));
    assert!(t.fails_gate);
    // Widely spread calls: the same 10% is noise.
    let d = run(&trace(100.0, 80.0, 4, 10.0), &trace(110.0, 80.0, 4, 10.0), &Options::default());
    assert_eq!(d.rows[0].status, Status::Unchanged);
}

#[test]
fn bad_inputs_say_what_and_where() {
    let e = load("{\n  \"a\": 1,\n  oops\n}", "x.json").unwrap_err();
    assert!(matches!(e, DiffError::NotJson { line: 3, .. }), "{e}");
    let e = load("{\"hello\": 1}", "x.json").unwrap_err();
    assert!(e.to_string().contains("not a rooftop export"));
    let e = load("{\"backend\": {}, \"results\": [{\"kernel\": 3}]}", "x.json").unwrap_err();
    assert!(e.to_string().contains("results[0].kernel"), "{e}");
    let b = load(&bench(&[("t", samples(1.0))]), "b.json").unwrap();
    let t = load(&trace(1.0, 0.1, 2, 1.0), "t.json").unwrap();
    assert!(matches!(compare(&b, &t, &Options::default()), Err(DiffError::KindMismatch { .. })));
    assert_eq!(parse_pct("5%"), Ok(5.0));
    assert_eq!(parse_pct(" 2.5 "), Ok(2.5));
    assert!(parse_pct("-1").is_err() && parse_pct("five").is_err());
    assert_eq!("attainment".parse::<Metric>(), Ok(Metric::Attainment));
}

#[test]
fn renderers_agree() {
    let base = bench(&[("triad", samples(1e-3)), ("gone", samples(1e-3))]);
    let new = bench(&[("triad", samples(1.1e-3))]);
    let d = run(&base, &new, &Options { fail_above_pct: Some(5.0), ..Options::default() });
    let t = render::table(&d);
    assert!(
        t.contains("Regressions (1)") && t.contains("FAIL") && t.contains("Removed (1)"),
        "{t}"
    );
    assert!(t.lines().all(|l| l.chars().count() <= 100), "{t}");
    let md = render::markdown(&d);
    assert!(md.contains("**FAIL: 1 row(s) and the total regressed by more than 5%"), "{md}");
    let csv = render::csv(&d);
    assert_eq!(csv.lines().count(), 1 + d.rows.len() + 1);
    let j: Value = serde_json::from_str(&render::json(&d)).unwrap();
    assert_eq!(j["failing"], 2);
    assert_eq!(j["rows"][0]["status"], "regression");
    let h = render::html(&d);
    assert!(h.contains("Regressions (1)") && h.contains("class=\"sortable\""));
}

#![allow(clippy::unwrap_used)]

use super::*;
use serde_json::json;

/// A bench export with one result per `(kernel, samples)`: complete records, as `rooftop
/// bench` writes them (the reader requires every field).
fn bench(results: &[(&str, Vec<f64>)]) -> String {
    use rooftop_core::schema::bench::{
        BackendInfo, CaseTime, CheckResult, Config, DeviceRecord, Implementation, Launch,
        ResultRecord, RunTime, TimingRecord, Tolerance, SCHEMA_VERSION,
    };
    let rs: Vec<ResultRecord> = results
        .iter()
        .map(|(k, t)| {
            let mut s = t.clone();
            s.sort_by(f64::total_cmp);
            let median = s[s.len() / 2];
            ResultRecord {
                kernel: (*k).to_string(),
                implementation: Implementation {
                    id: "rooftop".into(),
                    builtin: false,
                    label: "rooftop".into(),
                },
                config: Config {
                    sizes: [("n".to_string(), 1024)].into_iter().collect(),
                    dtype: "fp32".into(),
                    weights: None,
                    variant: None,
                    launch: Launch::default(),
                    launch_label: "default".into(),
                    label: "n=1024 fp32".into(),
                },
                check: CheckResult {
                    passed: true,
                    max_abs_error: 0.0,
                    max_rel_error: 0.0,
                    tolerance: Tolerance::EXACT,
                    elements: 1024,
                    first_failure: None,
                },
                times_s: t.clone(),
                iters_per_sample: 1,
                warmup_runs: 3,
                cache: None,
                median_s: Some(median),
                mean_s: None,
                stddev_s: None,
                min_s: None,
                max_s: None,
                flops: 1e6,
                bytes: 2e6,
                flops_formula: String::new(),
                bytes_formula: String::new(),
                arithmetic_intensity: Some(0.5),
                achieved_gbs: Some(2.0 / median),
                achieved_gflops: Some(1.0 / median),
                measured_ceiling: None,
                pct_of_measured_ceiling: None,
                residency: None,
                ceiling_note: None,
                roof: None,
                theoretical_peak: None,
                pct_of_theoretical_peak: None,
                floor_s: 1e-5,
                bound: rooftop_core::roofline::Bound::Memory,
                attainment_pct: Some(0.001 / median * 100.0),
                speedup_vs_builtin: None,
                ns_per_access: None,
                findings: Vec::new(),
                warnings: Vec::new(),
                interrupted: false,
                launches: Vec::new(),
                time_spent: CaseTime::default(),
            }
        })
        .collect();
    let report = BenchReport {
        schema_version: SCHEMA_VERSION,
        tool: "rooftop".into(),
        backend: BackendInfo {
            backend: "mock".into(),
            device_name: "mock".into(),
            timer: "simulated".into(),
            parallelism: 1,
            simulated: true,
            notes: Vec::new(),
        },
        device: DeviceRecord { id: "mock".into(), name: "mock".into(), roofs: Vec::new() },
        ceilings: None,
        timing: TimingRecord {
            warmup_runs: 3,
            warmup_time_s: 0.0,
            min_runs: 10,
            max_runs: 100,
            min_time_s: 0.0,
            min_sample_s: 0.0,
            cache: rooftop_core::schema::bench::CacheState::Warm,
            timer: "simulated".into(),
        },
        results: rs,
        warnings: Vec::new(),
        interrupted: false,
        time_spent: RunTime::default(),
    };
    serde_json::to_string(&report).unwrap()
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
            "achieved_tflops": {"mean": 1.0, "median": 1.0, "std": null, "min": 1.0, "max": 1.0},
            "achieved_tbs": {"mean": 0.5, "median": 0.5, "std": null, "min": 0.5, "max": 0.5}
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
    // The windows, 10 ms and 11 ms, in µs.
    assert_eq!((t.base, t.new), (Some(10_000.0), Some(11_000.0)));
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
    // A trace is named as one, wherever its events are.
    let e = load("{\"meta\": {}, \"traceEvents\": []}", "t.json").unwrap_err();
    assert_eq!(e, DiffError::Trace { origin: "t.json".into() });
    // Fields are checked in the file's order: the first bad one is named.
    let e = load("{\"results\": [{\"kernel\": 3}], \"backend\": {}}", "x.json").unwrap_err();
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
    assert!(md.contains("**FAIL: 1 row and the total regressed by more than 5%"), "{md}");
    let csv = render::csv(&d).unwrap();
    assert_eq!(csv.lines().count(), 1 + d.rows.len() + 1);
    let j: Value = serde_json::from_str(&render::json(&d)).unwrap();
    assert_eq!(j["failing"], 2);
    assert_eq!(j["rows"][0]["status"], "regression");
    let h = render::html(&d);
    assert!(h.contains("Regressions (1)") && h.contains("class=\"sortable\""));
}

#[test]
fn a_missing_or_mistyped_field_is_named_never_defaulted() {
    let good = bench(&[("t", samples(1.0))]);
    let edit = |f: &dyn Fn(&mut Value)| {
        let mut v: Value = serde_json::from_str(&good).unwrap();
        f(&mut v);
        load(&v.to_string(), "b.json").unwrap_err().to_string()
    };
    // A check without `passed` is not a passed check.
    let e = edit(&|v| {
        v["results"][0]["check"].as_object_mut().unwrap().remove("passed");
    });
    assert!(
        e.starts_with("b.json: field `results[0].check.passed` is missing (line 1, column"),
        "{e}"
    );
    // A missing median is not a missing measurement (`null` would be).
    let e = edit(&|v| {
        v["results"][0].as_object_mut().unwrap().remove("median_s");
    });
    assert!(e.starts_with("b.json: field `results[0].median_s` is missing"), "{e}");
    let e = edit(&|v| v["results"][0]["times_s"] = Value::from("fast"));
    assert!(e.starts_with("b.json: field `results[0].times_s` is not valid: invalid type"), "{e}");
    // The same for trace rows.
    let mut t: Value = serde_json::from_str(&trace(1.0, 0.1, 2, 1.0)).unwrap();
    t["kernels"][0].as_object_mut().unwrap().remove("std_us");
    let e = load(&t.to_string(), "t.json").unwrap_err().to_string();
    assert!(e.starts_with("t.json: field `kernels[0].std_us` is missing"), "{e}");
}

/// An analyze export (`rooftop analyze --format json` of several GEMMs): one `M×256×256`
/// bf16 GEMM on an H100 per `(m, time_ns)`.
fn analyze_export(runs: &[(u64, u64)]) -> String {
    use rooftop_core::analysis::{analyze, KernelRequest};
    use rooftop_core::ops::gemm::GemmSpec;
    use rooftop_core::units::Precision;
    let h100 = rooftop_core::device::Catalog::builtin().lookup("h100-sxm").unwrap();
    let records: Vec<AnalysisRecord> = runs
        .iter()
        .map(|&(m, ns)| {
            let mut req =
                KernelRequest::new(GemmSpec::new(m, 256, 256, Precision::Bf16).work().unwrap());
            req.time_ns = Some(ns);
            AnalysisRecord::from_analysis(&analyze(h100, &req).unwrap())
        })
        .collect();
    serde_json::to_string(&records).unwrap()
}

#[test]
fn json_and_csv_name_the_values_after_the_unit_and_keep_them_as_read() {
    // Times 150 µs and 50 µs, then 100.1 µs and 100.3 µs, as the exports write them.
    let base = analyze_export(&[(128, 150_000), (256, 50_000)]);
    let new = analyze_export(&[(128, 100_100), (256, 100_300)]);
    let d = run(&base, &new, &Options::default());
    let j: Value = serde_json::from_str(&render::json(&d)).unwrap();
    assert_eq!(j["schema_version"], 2);
    let rows = j["rows"].as_array().unwrap();
    let by_base = |us: f64| rows.iter().find(|r| r["base_us"] == us).unwrap();
    assert_eq!(by_base(150.0)["new_us"], 100.1);
    assert_eq!(by_base(50.0)["new_us"], 100.3);
    assert!(rows.iter().all(|r| r.get("base").is_none() && r.get("new").is_none()));
    // The total: 150 + 50 = 200 µs and 100.1 + 100.3 = 200.4 µs (the f64 sum would be
    // 200.39999999999998).
    assert_eq!(j["total"]["base_us"], 200.0);
    assert_eq!(j["total"]["new_us"], 200.4);
    // Top-level `base` and `new` are the files.
    assert_eq!((j["base"].as_str(), j["new"].as_str()), (Some("base.json"), Some("new.json")));

    let csv = render::csv(&d).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(header.contains(",metric,base_us,new_us,change_pct,"), "{header}");
    assert!(csv.lines().last().unwrap().starts_with("total,total,"), "{csv}");
    assert!(csv.contains(",time,200,200.4,"), "{csv}");

    // Bench medians in seconds, 1 ms and 1.1 ms, are 1000 µs and 1100 µs.
    let d = run(
        &bench(&[("triad", samples(1e-3))]),
        &bench(&[("triad", samples(1.1e-3))]),
        &Options::default(),
    );
    assert_eq!((d.rows[0].base, d.rows[0].new), (Some(1000.0), Some(1100.0)));
    // Each metric names its unit: achieved 1/median GFLOP/s = 1000 GFLOP/s = 1 TFLOP/s.
    let o = Options { metric: Metric::Flops, ..Options::default() };
    let d = run(&bench(&[("triad", samples(1e-3))]), &bench(&[("triad", samples(1e-3))]), &o);
    let j: Value = serde_json::from_str(&render::json(&d)).unwrap();
    assert_eq!(j["rows"][0]["base_tflops"], 1.0);
    for (m, unit) in [(Metric::Attainment, "pct"), (Metric::Bandwidth, "gbs")] {
        let d = run(
            &bench(&[("triad", samples(1e-3))]),
            &bench(&[("triad", samples(1e-3))]),
            &Options { metric: m, ..Options::default() },
        );
        let csv = render::csv(&d).unwrap();
        assert!(
            csv.starts_with(&format!("section,name,shape,status,metric,base_{unit},new_{unit},"))
        );
    }
}

#[test]
fn a_huge_change_shows_three_digits() {
    // 1 µs → 287,116.53 µs: (287116.53 − 1) / 1 × 100 = +28,711,553% = +28.7M%.
    let d = run(
        &analyze_export(&[(128, 1_000)]),
        &analyze_export(&[(128, 287_116_530)]),
        &Options::default(),
    );
    assert!((d.rows[0].change_pct.unwrap() - 28_711_553.0).abs() < 1e-3);
    let t = render::table(&d);
    assert!(t.contains("+28.7M%") && !t.contains("28711553"), "{t}");
    assert!(render::markdown(&d).contains("| +28.7M% |"));
    assert!(render::html(&d).contains("+28.7M%"));
    // JSON keeps the full precision.
    let j: Value = serde_json::from_str(&render::json(&d)).unwrap();
    assert!((j["rows"][0]["change_pct"].as_f64().unwrap() - 28_711_553.0).abs() < 1e-3);
}

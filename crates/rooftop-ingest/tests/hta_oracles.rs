//! Rooftop's trace-gap analyses against Holistic Trace Analysis on the same fixtures.
//!
//! The oracle numbers are HTA's own output, written by `tests/oracles/hta_oracles.py`
//! (HTA 0.5.0, timestamps not rounded, see that script) into
//! `tests/oracles/hta_numbers.json`; HTA is not run here. Tolerances:
//! - idle time per stream and category: 0.01 µs (HTA rounds its table to 2 decimals);
//! - launch statistics per launch (by correlation id): 1 ns (both read the trace's
//!   microseconds exactly; HTA in float64);
//! - queue length per stream: the count exactly, mean/median/max within 1e-9;
//! - critical path: length within 0.01 µs and each `bound_by` share within 0.01 µs.
//!
//! Definitional differences are asserted, not hidden: our idle breakdown groups by
//! (device, stream) (HTA by stream; one GPU per trace here), and our launch statistics
//! count every linked launch call (HTA four CUDA names; the comparison is over HTA's).

#![allow(clippy::unwrap_used, clippy::float_cmp)]

use rooftop_core::trace::gaps::critical_path::{critical_path, CpOptions};
use rooftop_core::trace::gaps::idle::{idle_breakdown, CONSECUTIVE_KERNEL_DELAY_NS};
use rooftop_core::trace::gaps::launch::{launch_rows, launch_stats};
use rooftop_core::trace::TraceModel;
use rooftop_ingest::kineto::{read_path, ReadOptions};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn oracle() -> Value {
    let text = std::fs::read_to_string(root().join("tests/oracles/hta_numbers.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn load(fixture: &str) -> TraceModel {
    let path = root().join("tests/fixtures/kineto").join(fixture);
    read_path(&path, &ReadOptions::default(), &mut |_, _| {})
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn traces() -> Vec<(String, Value)> {
    let o = oracle();
    o["traces"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

#[test]
fn idle_breakdown_matches_hta() {
    for (fixture, t) in traces() {
        let m = load(&fixture);
        let ours = idle_breakdown(&m, CONSECUTIVE_KERNEL_DELAY_NS);
        for row in t["idle"].as_array().unwrap() {
            let stream = row["stream"].as_i64().unwrap();
            let cat = row["category"].as_str().unwrap();
            let s = ours
                .streams
                .iter()
                .find(|s| s.stream == stream)
                .unwrap_or_else(|| panic!("{fixture}: no stream {stream}"));
            let mine = s.categories.iter().find(|c| c.category.as_str() == cat).unwrap();
            assert!(
                (mine.idle_us - f(&row["idle_us"])).abs() <= 0.01,
                "{fixture} stream {stream} {cat}: ours {} µs, HTA {} µs",
                mine.idle_us,
                f(&row["idle_us"])
            );
        }
        // Interval statistics (count, min, median, max) per category.
        for st in t["idle_intervals"].as_array().unwrap() {
            let stream = st["stream"].as_i64().unwrap();
            let cat = st["category"].as_str().unwrap();
            let s = ours.streams.iter().find(|s| s.stream == stream).unwrap();
            let c = s.categories.iter().find(|c| c.category.as_str() == cat).unwrap();
            assert_eq!(c.gaps.count, st["count"].as_u64().unwrap(), "{fixture} {stream} {cat}");
            if c.gaps.count > 0 {
                for (ours, key) in [
                    (c.gaps.min_us, "min_us"),
                    (c.gaps.p50_us, "median_us"),
                    (c.gaps.max_us, "max_us"),
                ] {
                    assert!(
                        (ours - f(&st[key])).abs() <= 0.01,
                        "{fixture} {stream} {cat} {key}: ours {ours}, HTA {}",
                        f(&st[key])
                    );
                }
            }
        }
        // No graph launches in these traces: no gap is filed under `graph`.
        assert!(ours.streams.iter().all(|s| s.categories[3].gaps.count == 0));
    }
}

#[test]
fn launch_statistics_match_hta() {
    let hta_names =
        ["cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync"];
    for (fixture, t) in traces() {
        let m = load(&fixture);
        let rows = launch_rows(&m);
        let by_corr: HashMap<i64, _> = rows
            .iter()
            .filter(|r| hta_names.contains(&r.launcher.as_str()))
            .filter_map(|r| r.correlation.map(|c| (c, r)))
            .collect();
        let hta = t["launch"].as_array().unwrap();
        assert_eq!(by_corr.len(), hta.len(), "{fixture}: launches HTA counts");
        for h in hta {
            let c = h["correlation"].as_i64().unwrap();
            let r = by_corr.get(&c).unwrap_or_else(|| panic!("{fixture}: no launch {c}"));
            for (ours, key) in [
                (r.cpu_duration_us, "cpu_duration_us"),
                (r.gpu_duration_us, "gpu_duration_us"),
                (r.launch_delay_us, "launch_delay_us"),
            ] {
                assert!(
                    (ours - f(&h[key])).abs() <= 1e-3,
                    "{fixture} correlation {c} {key}: ours {ours}, HTA {}",
                    f(&h[key])
                );
            }
        }
        // Where HTA's launch calls are all the trace has, the queue lengths agree.
        let only_hta_launches = rows.iter().all(|r| {
            matches!(
                r.launcher.as_str(),
                "cudaLaunchKernel"
                    | "cudaLaunchKernelExC"
                    | "cuLaunchKernel"
                    | "cudaMemcpyAsync"
                    | "cudaMemsetAsync"
                    | "hipLaunchKernel"
                    | "hipExtModuleLaunchKernel"
                    | "hipMemcpyWithStream"
            )
        });
        if !only_hta_launches {
            continue;
        }
        let stats = launch_stats(&m);
        for q in t["queue_length"].as_array().unwrap() {
            let stream = q["stream"].as_i64().unwrap();
            let ours = stats.queues.iter().find(|x| x.stream == stream).unwrap();
            assert_eq!(ours.changes, q["count"].as_u64().unwrap(), "{fixture} stream {stream}");
            assert!((ours.mean - f(&q["mean"])).abs() < 1e-9, "{fixture} {stream} mean");
            assert!((ours.median - f(&q["median"])).abs() < 1e-9, "{fixture} {stream} median");
            assert_eq!(ours.max as f64, f(&q["max"]), "{fixture} {stream} max");
        }
    }
}

#[test]
fn critical_path_matches_hta() {
    for (fixture, t) in traces() {
        let cp = &t["critical_path"];
        if cp.is_null() || !cp["ok"].as_bool().unwrap_or(false) {
            continue;
        }
        let m = load(&fixture);
        let opts = CpOptions {
            annotation: Some(cp["annotation"].as_str().unwrap().to_string()),
            instance: usize::try_from(cp["instance"].as_u64().unwrap()).unwrap(),
            what_if: Vec::new(),
        };
        let ours = critical_path(&m, &opts).unwrap_or_else(|e| panic!("{fixture}: {e}"));
        let hta_len = f(&cp["length_us"]);
        assert!(
            (ours.length_us - hta_len).abs() <= 0.01,
            "{fixture}: critical path ours {} µs, HTA {hta_len} µs",
            ours.length_us
        );
        for (k, v) in cp["bound_by_us"].as_object().unwrap() {
            if k == "dependency" {
                continue;
            }
            let mine = ours.bound_by.iter().find(|b| b.bound_by == k).map_or(0.0, |b| b.us);
            assert!((mine - f(v)).abs() <= 0.01, "{fixture}: {k} ours {mine} µs, HTA {} µs", f(v));
        }
        // The same events carry the path's time: HTA's operator edges summed by the
        // name of the event each is attributed to.
        let hta_by_name: HashMap<String, f64> =
            cp["by_event_us"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), f(v))).collect();
        assert!(!hta_by_name.is_empty());
        for (name, us) in &hta_by_name {
            let mine = ours.ranked.iter().find(|r| &r.name == name).map_or(0.0, |r| r.us);
            assert!((mine - us).abs() <= 0.01, "{fixture}: `{name}` ours {mine} µs, HTA {us} µs");
        }
        assert_eq!(ours.events.first().map(|e| e.ts >= ours.window.start_us), Some(true));
    }
}

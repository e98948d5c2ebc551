//! rooftop on its own captures from an NVIDIA H200 (`tests/fixtures/{ncu,kineto,jax}/h200/`,
//! made by `scripts/gpu-capture.sh`; each folder's README says how). The oracles are what
//! the vendor tools printed in the same run: Nsight Compute's own values in its exports,
//! `prof.key_averages()` beside each Kineto trace, the Perfetto trace JAX wrote beside
//! its XPlane profile, and hand arithmetic on the workload's shapes.

// A failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(rel)
}

fn json_of(args: &[&str]) -> Value {
    let out = Command::cargo_bin("rooftop").unwrap().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "rooftop {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} missing in {}", v["name"]))
}

fn close(got: f64, want: f64, rel: f64, what: &str) {
    assert!((got - want).abs() <= rel * want.abs(), "{what}: {got} vs {want} (±{}%)", rel * 100.0);
}

/// The first launch of the bf16 4096³ GEMM (nvjet) in the raw page: every figure is the
/// value ncu printed in its own row (`gpu__time_duration.sum` 175.936 us,
/// `dram__bytes_read.sum` 148.2688 MB, `dram__bytes_write.sum` 28.038144 MB,
/// `lts__t_sector_hit_rate.pct` 71.902093, `sm__warps_active...pct_of_peak_sustained_active`
/// 14.642539), and its tensor FLOPs are 2 x 4096³.
#[test]
fn ncu_raw_page_of_the_gemm_matches_what_ncu_printed() {
    let path = fixture("ncu/h200/torch_raw.csv");
    let r = json_of(&["counters", path.to_str().unwrap(), "--dispatches", "--format", "json"]);
    let d = &r["dispatches"][0];
    assert!(d["name"].as_str().unwrap().starts_with("nvjet_sm90_tst_256x128"), "{}", d["name"]);
    close(num(d, "duration_ns"), 175_936.0, 0.02, "duration");
    close(num(d, "dram_bytes_read"), 148.2688e6, 0.02, "DRAM read");
    close(num(d, "dram_bytes_written"), 28.038_144e6, 0.02, "DRAM written");
    close(num(d, "l2_hit_rate_pct"), 71.902_093, 0.02, "L2 hit rate");
    close(num(d, "achieved_occupancy_pct"), 14.642_539, 0.02, "achieved occupancy");
    let flops = 2.0 * 4096f64.powi(3);
    close(d["flops"]["bf16"].as_f64().unwrap(), flops, 0.02, "bf16 FLOPs");
    // Bytes over time: (148.2688 + 28.038144) MB / 175.936 us = 1002.1 GB/s.
    close(num(d, "achieved_gbs"), (148.2688e6 + 28.038_144e6) / 175.936e-6 / 1e9, 0.02, "GB/s");
}

/// The details page of the same report: per kernel name (two launches each), the means
/// of what ncu printed (Duration 175.94 and 176.13 us, L2 Hit Rate 71.90 and 73.31 %,
/// Achieved Occupancy 14.64 %, Memory Throughput 1.00 Tbyte/s), in both unit layouts.
#[test]
fn ncu_details_pages_match_what_ncu_printed() {
    for file in ["torch_details.csv", "torch_details_base.csv"] {
        let path = fixture(&format!("ncu/h200/{file}"));
        let r = json_of(&["counters", path.to_str().unwrap(), "--format", "json"]);
        let k = r["kernels"].as_array().unwrap();
        assert_eq!(k.len(), 4, "{file}: GEMM, layer norm, softmax, attention");
        let gemm = k.iter().find(|x| x["name"].as_str().unwrap().starts_with("nvjet")).unwrap();
        assert_eq!(gemm["count"], 2, "{file}");
        close(num(gemm, "duration_ns"), f64::midpoint(175_940.0, 176_130.0), 0.02, file);
        close(num(gemm, "l2_hit_rate_pct"), f64::midpoint(71.90, 73.31), 0.02, file);
        close(num(gemm, "achieved_occupancy_pct"), 14.64, 0.02, file);
        close(num(gemm, "achieved_gbs"), 1000.0, 0.02, file);
    }
}

/// Every export of the capture reads, with the kernels it holds: the PyTorch workload's
/// four kernels, rooftop's own seven (copy, triad, rmsnorm, softmax, layernorm and the
/// tiled and naive GEMMs), and what `rooftop profile --with ncu` made ncu write (no NVTX
/// filter there: the workload's set-up kernels too).
#[test]
fn every_ncu_export_of_the_capture_reads() {
    for (file, kernels) in [
        ("torch_metrics.csv", 4),
        ("suite_details.csv", 7),
        ("suite_raw.csv", 7),
        ("profile_memory_raw.csv", 7),
    ] {
        let path = fixture(&format!("ncu/h200/{file}"));
        let r = json_of(&["counters", path.to_str().unwrap(), "--format", "json"]);
        assert_eq!(r["kernels"].as_array().unwrap().len(), kernels, "{file}");
    }
    // rooftop's triad on 16 Mi floats: one FMA per element, 2 x 16 Mi FLOPs, counted from
    // the FP instruction rates of the raw page.
    let path = fixture("ncu/h200/suite_raw.csv");
    let r = json_of(&["counters", path.to_str().unwrap(), "--format", "json"]);
    let triad = r["kernels"].as_array().unwrap().iter().find(|k| k["name"] == "rt_triad_f32");
    let triad = triad.expect("rt_triad_f32 in the suite capture");
    close(triad["flops"]["fp32"].as_f64().unwrap(), 2.0 * 16.0 * 1024.0 * 1024.0, 0.02, "triad");
}

/// Names of the trace's GPU-side user annotations (key_averages lists them with the
/// kernels; they are not kernels).
fn annotations(trace: &Path) -> Vec<String> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(trace).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let mut out: Vec<String> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "gpu_user_annotation")
        .filter_map(|e| e["name"].as_str().map(str::to_string))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `rooftop trace`'s per-kernel launch counts and times against `prof.key_averages()`
/// printed in the same run (`MODE.kernels.csv`), within 1%, for the eager, compiled and
/// CUDA-graph traces; memcpy/memset rows are the timeline's, not kernels.
#[test]
fn kineto_kernel_totals_match_key_averages() {
    for mode in ["eager", "compiled", "graph"] {
        let trace = fixture(&format!("kineto/h200/{mode}.trace.json.gz"));
        let skip = annotations(&trace);
        let r = json_of(&["trace", trace.to_str().unwrap(), "--format", "json"]);
        let mut ours: BTreeMap<String, (u64, f64)> = BTreeMap::new();
        for k in r["kernels"].as_array().unwrap() {
            let e = ours.entry(k["name"].as_str().unwrap().to_string()).or_default();
            e.0 += k["count"].as_u64().unwrap();
            e.1 += k["total_us"].as_f64().unwrap();
        }
        let mut rdr =
            csv::Reader::from_path(fixture(&format!("kineto/h200/{mode}.kernels.csv"))).unwrap();
        let mut theirs: BTreeMap<String, (u64, f64)> = BTreeMap::new();
        for row in rdr.records() {
            let row = row.unwrap();
            let name = row[0].to_string();
            let copy = ["Memcpy ", "Memset "].iter().any(|p| name.starts_with(p));
            if skip.contains(&name) || copy {
                continue;
            }
            theirs.insert(name, (row[1].parse().unwrap(), row[2].parse().unwrap()));
        }
        assert!(theirs.len() > 30, "{mode}: {} kernel names", theirs.len());
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            theirs.keys().collect::<Vec<_>>(),
            "{mode}: kernel names"
        );
        for (name, (n, us)) in &theirs {
            let (on, ous) = ours[name];
            assert_eq!(on, *n, "{mode} {name}: launches");
            close(ous, *us, 0.01, &format!("{mode} {name}"));
        }
    }
}

/// The JAX profile: the device and the kernels' total time, against the GPU events of
/// the Perfetto trace JAX wrote beside it in the same run (224 events, 1613.5 us, of
/// which two are not kernels: within 1%).
#[test]
fn jax_profile_reads_with_the_kernel_time_jax_recorded() {
    let path = fixture("jax/h200/h200_transformer_step.xplane.pb");
    let r = json_of(&["trace", path.to_str().unwrap(), "--format", "json"]);
    assert!(r["device"].to_string().contains("H200"), "{}", r["device"]);
    let total: f64 =
        r["kernels"].as_array().unwrap().iter().map(|k| k["total_us"].as_f64().unwrap()).sum();
    let perfetto: f64 = jax_perfetto_gpu_events().iter().map(|(_, dur)| dur).sum();
    close(total, perfetto, 0.01, "JAX kernel time");
}

/// (name, duration in us) of every GPU event of the Perfetto trace JAX wrote beside its
/// XPlane profile.
fn jax_perfetto_gpu_events() -> Vec<(String, f64)> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open(fixture("jax/h200/h200_transformer_step.trace.json.gz")).unwrap(),
    )
    .read_to_string(&mut text)
    .unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let gpu_pid = events
        .iter()
        .find(|e| e["ph"] == "M" && e["args"]["name"] == "/device:GPU:0")
        .map(|e| e["pid"].clone())
        .expect("a GPU process in the Perfetto trace");
    events
        .iter()
        .filter(|e| e["ph"] == "X" && e["pid"] == gpu_pid)
        .filter_map(|e| Some((e["name"].as_str()?.to_string(), e["dur"].as_f64()?)))
        .collect()
}

/// A command buffer's replay can start with a memset (two of the twenty replays of
/// `command_buffer_1` here): each kernel's category is its own, so the cuBLAS `nvjet_*`
/// kernels are GEMM, and with no memcpy in the profile no category is Memcpy. Oracle: the
/// Perfetto trace JAX wrote beside the profile, whose GPU events hold no `Memcpy*` event,
/// two `Memset 0` (0.896 + 0.929 us) and `nvjet_*` kernels.
#[test]
fn jax_command_buffer_kernels_have_their_own_category() {
    let path = fixture("jax/h200/h200_transformer_step.xplane.pb");
    let r = json_of(&["trace", path.to_str().unwrap(), "--format", "json"]);
    let perfetto = jax_perfetto_gpu_events();
    assert!(perfetto.iter().all(|(n, _)| !n.starts_with("Memcpy")));
    let memset: f64 = perfetto.iter().filter(|(n, _)| n.starts_with("Memset")).map(|e| e.1).sum();
    close(memset, 0.896 + 0.929, 1e-9, "the Perfetto trace's memsets");
    assert_eq!(r["timeline"]["memcpy"]["time_ms"].as_f64(), Some(0.0));
    close(num(&r["timeline"]["memset"], "time_ms") * 1e3, memset, 1e-6, "memset time");

    let kernels = r["kernels"].as_array().unwrap();
    let nvjet: Vec<&Value> =
        kernels.iter().filter(|k| k["name"].as_str().unwrap().starts_with("nvjet_")).collect();
    assert!(nvjet.iter().any(|k| k["name"] == "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_NNT"));
    for k in &nvjet {
        assert_eq!(k["category"], "GEMM", "{}", k["name"]);
    }
    let nvjet_us: f64 = nvjet.iter().map(|k| num(k, "total_us")).sum();
    let want: f64 = perfetto.iter().filter(|(n, _)| n.starts_with("nvjet_")).map(|e| e.1).sum();
    close(nvjet_us, want, 0.01, "nvjet kernel time");

    let summary = &r["ops_summary"];
    let cats = summary["by_category"].as_array().unwrap();
    assert!(cats.iter().all(|c| c["category"] != "Memcpy"), "{cats:?}");
    assert!(kernels.iter().all(|k| k["category"] != "Memcpy"));
    let ops = summary["ops"].as_array().unwrap();
    let thunk = ops.iter().find(|o| o["name"] == "command_buffer_1").unwrap();
    assert_eq!(thunk["category"], "GEMM");
}

/// XLA replays this step from a command buffer and records every kernel under the
/// buffer's thunk (`command_buffer_1`); the kernels XLA generated are named after their
/// fusions and go back to them, with the shapes of the HLO. Hand arithmetic from the
/// operand shapes the profile's HLO states: `gemm_fusion_dot.37` multiplies bf16
/// [512, 2048] by [2048, 8192]: 2·512·2048·8192 FLOPs and (512·2048 + 2048·8192 +
/// 512·8192)·2 bytes. Only the cuBLAS kernels (no fusion of that name) stay under the
/// thunk. The step already runs as a command buffer, so the launch-overhead advice must
/// not tell it to capture one, and the thunk is no "op not in the HLO".
#[test]
fn jax_command_buffer_kernels_go_back_to_their_fusions() {
    let path = fixture("jax/h200/h200_transformer_step.xplane.pb");
    let r = json_of(&["trace", path.to_str().unwrap(), "--format", "json"]);
    let ops = r["xla"]["ops"].as_array().unwrap();
    let op = |n: &str| ops.iter().find(|o| o["name"] == n).unwrap_or_else(|| panic!("{n}"));
    let dot = op("gemm_fusion_dot.37");
    assert_eq!(dot["flops"].as_f64(), Some(2.0 * 512.0 * 2048.0 * 8192.0));
    assert_eq!(
        dot["bytes"].as_f64(),
        Some((512.0 * 2048.0 + 2048.0 * 8192.0 + 512.0 * 8192.0) * 2.0)
    );
    let thunk = op("command_buffer_1")["percent"].as_f64().unwrap();
    assert!(thunk < 20.0, "only the library kernels stay under the thunk: {thunk}%");
    let short = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "trace.short_kernels")
        .expect("the short-kernel finding");
    let advice = short["recommendation"].as_str().unwrap();
    assert!(advice.contains("already runs from XLA command buffers"), "{advice}");
    assert!(!advice.contains("capture"), "{advice}");
    assert!(!r["warnings"].to_string().contains("op_not_in_hlo"), "{}", r["warnings"]);
}

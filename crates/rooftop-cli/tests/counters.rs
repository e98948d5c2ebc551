//! End-to-end tests of `rooftop counters` and `rooftop profile`: every real fixture in
//! every format, the JSON contract (absent values are null, never 0), measured roofs,
//! bad input, and `profile` through a stand-in profiler on PATH.

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
        .join("../../tests/fixtures")
        .join(rel)
        .display()
        .to_string()
}

/// A fresh, empty scratch directory and its path. The directory is removed when the
/// guard drops, at the end of the test whether it passed or failed: bind the guard to
/// a name (`_x_guard`), not `_`, which would drop it at once.
fn tempdir(tag: &str) -> (tempfile::TempDir, PathBuf) {
    let d =
        tempfile::Builder::new().prefix(&format!("rooftop-cli-counters-{tag}-")).tempdir().unwrap();
    let p = d.path().to_path_buf();
    (d, p)
}

const FIXTURES: &[&str] = &[
    "rocprof/rocprof_compute_vcopy_MI200",
    "rocprof/rocprof_compute_vcopy_MI300X_A1",
    "rocprof/rocprofv3_docs_examples",
    "rocprof/rocprofv3_gfx1151_decode",
    "ncu/a100_polybench_gemm_metrics.csv",
    "ncu/superbench_cc100_cublaslt_details.csv",
    "nsys/sqlite/h100_train_step.sqlite",
    "nsys/sqlite/h100_train_step_old_schema.sqlite",
    "rocprof/rocpd/mi300x_5151_results.db",
];

fn json_of(args: &[&str]) -> Value {
    let out = rooftop().args(args).args(["--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn every_fixture_in_every_format() {
    for f in FIXTURES {
        let path = fixture(f);
        for fmt in ["table", "json", "csv", "md", "html"] {
            let out = rooftop().args(["counters", &path, "--format", fmt]).output().unwrap();
            assert!(
                out.status.success(),
                "{f} --format {fmt}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!out.stdout.is_empty(), "{f} --format {fmt}: empty output");
        }
        let out = rooftop().args(["counters", &path]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        for line in text.lines() {
            assert!(line.chars().count() <= 100, "{f}: line over 100 columns: {line}");
        }
    }
}

#[test]
fn json_contract() {
    let v = json_of(&["counters", &fixture("rocprof/rocprof_compute_vcopy_MI200")]);
    for key in ["source", "device", "roofs", "dispatches", "kernels"] {
        assert!(v.get(key).is_some(), "missing top-level `{key}`");
    }
    assert_eq!(v["source"]["format_id"], "rocprof_compute");
    let k = &v["kernels"][0];
    for key in [
        "name",
        "count",
        "duration_ns",
        "dram_bytes_read",
        "dram_bytes_written",
        "flops",
        "l1_hit_rate_pct",
        "l2_hit_rate_pct",
        "achieved_gbs",
        "achieved_tflops",
        "arithmetic_intensity",
        "bound",
        "findings",
        "missing",
    ] {
        assert!(k.get(key).is_some(), "kernel record lacks `{key}`");
    }
    // rocprof-compute's roofline.csv wins over datasheet peaks, and says so. The MI200
    // fixture's first device row measured HBMBw = 1388.9302 GB/s.
    assert_eq!(v["roofs"]["source"], "measured");
    let dram =
        v["roofs"]["bandwidth"].as_array().unwrap().iter().find(|b| b["level"] == "dram").unwrap();
    assert!((dram["gbs"].as_f64().unwrap() - 1388.9302).abs() < 1e-6);
}

#[test]
fn vcopy_moves_the_array_both_ways() {
    // `vcopy -n 1048576` (log.txt) copies 1,048,576 doubles (`vecCopy(double*, ...)`):
    // 8 MiB read and 8 MiB written. The first dispatch shows exactly that (reads carry a
    // few hundred bytes of kernel arguments and code: allow 0.1%). Later dispatches write
    // back less because the 8 MB L2 still holds dirty lines when they end.
    let v = json_of(&["counters", &fixture("rocprof/rocprof_compute_vcopy_MI200")]);
    let d = &v["dispatches"][0];
    let array = 1_048_576.0 * 8.0;
    for key in ["dram_bytes_read", "dram_bytes_written"] {
        let b = d[key].as_f64().unwrap_or_else(|| panic!("{key} is null: {d}"));
        assert!((b / array - 1.0).abs() < 1e-3, "{key} = {b}, expected ≈ {array}");
    }
    // 8 MiB + 8 MiB in 20,480 ns (End - Start of dispatch 0) = 819.2 GB/s.
    assert_eq!(d["duration_ns"].as_f64(), Some(20_480.0));
    let gbs = (8_389_504.0 + 8_388_608.0) / 20_480.0;
    assert!((d["achieved_gbs"].as_f64().unwrap() - gbs).abs() < 1e-6);
    assert_eq!(v["kernels"][0]["bound"], "memory");
    assert_eq!(v["kernels"][0]["count"], 3);
}

#[test]
fn absent_values_are_null_not_zero() {
    // The rocprofv3 decode fixture collects only FETCH_SIZE: nothing on writes, FLOPs or
    // hit rates.
    let v = json_of(&["counters", &fixture("rocprof/rocprofv3_gfx1151_decode")]);
    let k = &v["kernels"][0];
    assert!(k["dram_bytes_written"].is_null(), "{k}");
    assert!(k["flops"].is_null(), "{k}");
    assert!(k["l2_hit_rate_pct"].is_null(), "{k}");
    let missing = k["missing"].as_array().unwrap();
    assert!(
        missing.iter().any(|m| m["quantity"] == "dram_bytes_written"),
        "missing should say what write bytes need: {missing:?}"
    );
}

#[test]
fn dispatch_rows_and_kernel_filter() {
    let path = fixture("rocprof/rocprofv3_gfx1151_decode");
    let all = json_of(&["counters", &path]);
    let n = all["dispatches"].as_array().unwrap().len();
    assert!(n > 1);
    let name = all["kernels"][0]["name"].as_str().unwrap().to_string();
    let sub: String = name.chars().take(12).collect();
    let one = json_of(&["counters", &path, "--kernel", &sub]);
    assert!(one["dispatches"].as_array().unwrap().len() <= n);
    rooftop()
        .args(["counters", &path, "--kernel", "no-such-kernel-name"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no kernel name contains"));
}

#[test]
fn bad_input_is_one_sentence_and_exit_2() {
    let (_d_guard, d) = tempdir("bad");
    let empty = d.join("empty.csv");
    std::fs::write(&empty, "").unwrap();
    rooftop()
        .args(["counters", empty.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("empty.csv"))
        .stderr(predicate::str::contains("empty"));
    let other = d.join("other.csv");
    std::fs::write(&other, "a,b,c\n1,2,3\n").unwrap();
    rooftop()
        .args(["counters", other.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a counter file"));
    let dir = d.join("dir");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "hello").unwrap();
    rooftop()
        .args(["counters", dir.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no profiler output"));
    rooftop()
        .args(["counters", d.join("missing.csv").to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("missing.csv"));
    for f in FIXTURES {
        rooftop().args(["counters", &fixture(f), "--format", "perfetto"]).assert().code(2);
    }
    // A side file of an output folder says what to pass instead.
    rooftop()
        .args(["counters", &fixture("rocprof/rocprof_compute_vcopy_MI200/roofline.csv")])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("pass the workload folder"));
    rooftop()
        .args(["counters", &fixture("rocprof/rocprofv3_docs_examples/memory_copy_trace.csv")])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no kernel dispatches"));
}

#[test]
fn profile_dry_run_and_presets() {
    rooftop()
        .args(["profile", "--list-presets"])
        .assert()
        .success()
        .stdout(predicate::str::contains("roofline"))
        .stdout(predicate::str::contains("dram__bytes_read.sum"))
        .stdout(predicate::str::contains("FETCH_SIZE"));
    rooftop()
        .args([
            "profile",
            "--with",
            "rocprof",
            "--counters",
            "SQ_WAVES,FETCH_SIZE",
            "--dry-run",
            "--",
            "./bench",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("pmc: SQ_WAVES FETCH_SIZE"))
        .stdout(predicate::str::contains("rocprof -i"));
    rooftop()
        .args(["profile", "--with", "ncu", "--preset", "full", "--dry-run", "--", "./a"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--set full"));
}

#[test]
fn profile_errors() {
    // A profiler that is not installed.
    rooftop()
        .env("PATH", "/nonexistent")
        .args(["profile", "--with", "ncu", "--", "./app"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("ncu not found on PATH"));
    // No program.
    rooftop().args(["profile", "--with", "ncu"]).assert().code(2);
}

#[cfg(unix)]
#[test]
fn profile_runs_the_tool_then_reads_its_output() {
    use std::os::unix::fs::PermissionsExt;
    // A stand-in `ncu` that writes a raw-page CSV where `--log-file` says and fails when
    // the program is missing, as ncu does. The CSV is hand-written in the documented
    // raw-page layout: 64 MiB read and 64 MiB written in 40 µs.
    let (_d_guard, d) = tempdir("fake-ncu");
    let csv = concat!(
        "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",",
        "\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"dram__bytes_read.sum\",",
        "\"dram__bytes_write.sum\",\"gpu__time_duration.sum\"\n",
        "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"byte\",\"byte\",\"nsecond\"\n",
        "\"0\",\"1\",\"app\",\"h\",\"copy_kernel\",\"1\",\"7\",\"(256, 1, 1)\",\"(65536, 1, 1)\",",
        "\"0\",\"9.0\",\"67108864\",\"67108864\",\"40000\"\n"
    );
    std::fs::write(d.join("raw.csv"), csv).unwrap();
    let script = format!(
        "#!/bin/sh\nwhile [ $# -gt 0 ]; do\n  if [ \"$1\" = --log-file ]; then out=\"$2\"; fi\n  \
         last=\"$1\"; shift\ndone\n[ -x \"$last\" ] || {{ echo \"==ERROR== no program\" >&2; exit 1; }}\n\
         cp '{}' \"$out\"\n",
        d.join("raw.csv").display()
    );
    let bin = d.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("ncu"), script).unwrap();
    std::fs::set_permissions(bin.join("ncu"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = d.join("out");
    let o = rooftop()
        .env("PATH", &path)
        .args(["profile", "--with", "ncu", "--out", out.to_str().unwrap()])
        .args(["--device", "h100-sxm", "--format", "json", "--", "/bin/true"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let k = &v["kernels"][0];
    assert_eq!(k["name"], "copy_kernel");
    // (64 MiB + 64 MiB) / 40 µs = 134,217,728 B / 4e-5 s = 3355.44 GB/s.
    assert!((k["achieved_gbs"].as_f64().unwrap() - 3_355.443_2).abs() < 0.01, "{k}");
    // The tool fails → a clear error naming it.
    rooftop()
        .env("PATH", &path)
        .args(["profile", "--with", "ncu", "--out", out.to_str().unwrap(), "--"])
        .arg(d.join("no-such-program"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("ncu failed"));
}

#[test]
fn nsight_compute_rules_are_labelled_as_its_own() {
    let path = fixture("ncu/superbench_cc100_cublaslt_details.csv");
    let out = rooftop().args(["counters", &path, "--device", "b200"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Nsight Compute says"), "{text}");
    assert!(text.contains("TheoreticalOccupancy") && text.contains("81.2% local"), "{text}");
    let v = json_of(&["counters", &path]);
    let f = &v["kernels"][0]["tool_findings"][0];
    assert_eq!(f["tool"], "Nsight Compute");
    assert_eq!(f["rule"], "TheoreticalOccupancy");
    assert_eq!(f["estimated_speedup_pct"], 81.25);
    let md = rooftop().args(["counters", &path, "--format", "md"]).output().unwrap();
    assert!(String::from_utf8_lossy(&md.stdout).contains("(Nsight Compute)"));
}

#[test]
fn nsys_database_report_has_the_nvtx_ranges() {
    let path = fixture("nsys/sqlite/h100_train_step.sqlite");
    let out = rooftop().args(["counters", &path]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("NVTX ranges: 840 µs of 846 µs kernel time (99.3%)"), "{text}");
    assert!(text.contains("CUDA API calls by total time"), "{text}");
    let v = json_of(&["counters", &path]);
    assert_eq!(v["source"]["format_id"], "nsys_sqlite");
    assert_eq!(v["activity"]["ranges"][0]["name"], "train_step");
    assert_eq!(v["activity"]["ranges"][0]["kernel_ns"], 840_000.0);
    assert_eq!(v["roofs"]["device"], "h100-sxm");
    let html = rooftop().args(["counters", &path, "--format", "html"]).output().unwrap();
    assert!(String::from_utf8_lossy(&html.stdout).contains("NVTX ranges"));
}

#[test]
fn an_unknown_device_gets_no_roofs_and_a_note() {
    // A rocpd run on `AMD Instinct MI399X` (not a real part) with gfx908, the target of
    // one catalog device (mi100): no fallback to it.
    let db = fixture("rocprof/rocpd/unknown_gpu_results.db");
    let v = json_of(&["counters", &db]);
    assert_eq!(v["roofs"]["source"], "none");
    assert_eq!(v["device"]["name"], "AMD Instinct MI399X");
    let note = v["roofs"]["notes"][0].as_str().unwrap_or_default();
    assert!(
        note.contains("AMD Instinct MI399X") && note.contains("not in rooftop's catalog"),
        "{note}"
    );
    assert!(note.contains("--device-file"), "{note}");
    let out = rooftop().args(["counters", &db]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("roofs: none"));
    // --device still picks the roofs explicitly.
    let v = json_of(&["counters", &db, "--device", "mi300x"]);
    assert_eq!(v["roofs"]["device"], "mi300x");
}

#[test]
fn binary_reports_get_the_export_command() {
    let (_dir_guard, dir) = tempdir("binary-report");
    let rep = dir.join("profile.nsys-rep");
    std::fs::write(&rep, b"\x00binary").unwrap();
    let out = rooftop().args(["counters", rep.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("nsys export --type sqlite"), "{err}");
}

#[test]
fn a100_details_page_reads_its_throughput_and_names_its_device() {
    // A real A100 `--page details` export: no byte counter, "Memory Throughput" in
    // Gbyte/s, compute capability 8.0 and "# SMs" 108, no device name.
    let path = fixture("ncu/clima_a100_details_excerpt.csv");
    let out = rooftop().args(["counters", &path]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("device in the files: compute capability 8.0, 108 SMs"), "{text}");
    assert!(!text.contains("? (8.0)"), "{text}");
    // 958.04 GB/s, as Nsight Compute printed it; the L2 is the busiest unit (63.55%).
    assert!(text.contains("958 GB/s") && text.contains("63.5% L2"), "{text}");
    assert!(text.contains("DRAM: derived from the profiler's DRAM throughput"), "{text}");
    // The matrix roofs are listed with the vector roofs.
    assert!(text.contains("matrix fp64 19.5 TFLOP/s, tf32 156 TFLOP/s"), "{text}");
    let v = json_of(&["counters", &path]);
    let k = &v["kernels"][0];
    assert!((k["achieved_gbs"].as_f64().unwrap() - 958.04).abs() < 1e-9, "{k}");
    assert_eq!(k["bound"], "memory");
    assert_eq!(k["bound_basis"], "speed_of_light");
    assert_eq!(k["byte_sources"]["dram"], "derived");
    assert_eq!(k["compute_roof"], Value::Null);
    assert_eq!(v["roofs"]["candidates"], serde_json::json!(["a100-sxm-80gb", "a800-sxm-80gb"]));
    assert_eq!(v["schema_version"], 2);
}

#[test]
fn kernels_that_share_a_prefix_stay_distinguishable() {
    // Three ClimaCore kernels whose names differ only after 90 characters: never three
    // `set_microphysics_ten…` rows.
    let text = std::fs::read_to_string(fixture("ncu/clima_a100_details_excerpt.csv")).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().to_string();
    let body: Vec<&str> = lines.collect();
    let old = "run_field_matrix_solver__FILE_ClimaCore_jl_mod_src_MatrixFields_field_matrix_solver_jl_L419";
    let mut out = vec![header];
    let names = [
        "set_microphysics_tendency_cache__FILE_ClimaAtmos_jl_src_cache_microphysics_cache_jl_L924",
        "set_microphysics_tendency_cache__FILE_ClimaAtmos_jl_src_cache_microphysics_cache_jl_L1012",
        "set_microphysics_tendency_cache__FILE_ClimaAtmos_jl_src_cache_precipitation_cache_jl_L924",
    ];
    for (i, n) in names.iter().enumerate() {
        for l in &body {
            out.push(l.replacen("\"0\"", &format!("\"{i}\""), 1).replace(old, n));
        }
    }
    let (_dir_guard, dir) = tempdir("prefix");
    let p = dir.join("micro.csv");
    std::fs::write(&p, out.join("\n")).unwrap();
    let out = rooftop().args(["counters", p.to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let rows: Vec<&str> = text.lines().filter(|l| l.contains("set_mic")).take(3).collect();
    assert_eq!(rows.len(), 3, "{text}");
    let cells: Vec<&str> = rows
        .iter()
        .map(|r| r.trim_start_matches('│').split("   ").next().unwrap().trim())
        .collect();
    assert_ne!(cells[0], cells[1], "{text}");
    assert_ne!(cells[0], cells[2], "{text}");
    assert_ne!(cells[1], cells[2], "{text}");
    for l in text.lines() {
        assert!(l.chars().count() <= 100, "{l}");
    }
}

#[test]
fn a_trace_without_counters_shows_what_it_has() {
    // An nsys export: count, total, share and mean; no empty DRAM / achieved / % roof.
    let path = fixture("nsys/sqlite/h100_train_step.sqlite");
    let out = rooftop().args(["counters", &path]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let header = text.lines().find(|l| l.contains("kernel") && l.contains(" n ")).unwrap();
    for col in ["total", "share", "mean"] {
        assert!(header.contains(col), "{header}");
    }
    for col in ["DRAM", "achieved", "% roof", "bound"] {
        assert!(!header.contains(col), "{header}");
    }
}

#[test]
fn a_trace_given_to_counters_points_to_trace() {
    for f in ["kineto/hta_tiny_plain.json", "kineto/hta_a100_alexnet.json.gz"] {
        let out = rooftop().args(["counters", &fixture(f)]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{f}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("`rooftop trace ") && err.contains("not hardware counters"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

/// A rocprofv3 `counter_collection.csv` of one dispatch holding exactly `counters`,
/// each with the value 1000, in the column layout rocprofv3 writes (no architecture or
/// wave-size column: rocprofv3 puts those in `agent_info.csv`).
fn rocprofv3_counter_collection(counters: &[String]) -> String {
    use std::fmt::Write as _;
    let mut s = String::from(
        "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\",\
         \"Thread_Id\",\"Grid_Size\",\"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\",\
         \"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\
         \"SGPR_Count\",\"Counter_Name\",\"Counter_Value\",\"Start_Timestamp\",\
         \"End_Timestamp\"\n",
    );
    for c in counters {
        let _ = writeln!(
            s,
            "\"1\",\"1\",\"Agent 1\",\"1\",\"7\",\"7\",\"1024\",\"11\",\"copy_kernel\",\"512\",\
             \"0\",\"0\",\"16\",\"0\",\"128\",\"{c}\",\"1000\",\"1000000\",\"1003450\""
        );
    }
    s
}

#[test]
fn amd_roofline_preset_with_device_gives_vector_flops_and_l2_bytes() {
    use rooftop_ingest::session::{presets, Preset};
    let counters = presets::counters(Preset::Roofline, true);
    // What L2 bytes need is in the preset itself.
    for c in [
        "TCP_TCC_READ_REQ_sum",
        "TCP_TCC_WRITE_REQ_sum",
        "TCP_TCC_ATOMIC_WITH_RET_REQ_sum",
        "TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum",
    ] {
        assert!(counters.iter().any(|x| x == c), "the roofline preset lacks {c}");
    }
    let (_dir_guard, dir) = tempdir("amd-preset");
    let path = dir.join("run_counter_collection.csv");
    std::fs::write(&path, rocprofv3_counter_collection(&counters)).unwrap();
    let p = path.display().to_string();

    let j = json_of(&["counters", &p, "--device", "mi300x"]);
    // The file states neither; --device mi300x (gfx942, wave64) does.
    assert_eq!(j["device"]["arch"], "gfx942");
    assert_eq!(j["device"]["wave_size"], 64);
    let k = &j["kernels"][0];
    // Every count is 1000. VALU FLOPs per precision = 64 lanes × (ADD + MUL + TRANS +
    // 2·FMA) = 64 × 5000 = 320,000; MFMA = 512 × MOPS = 512,000 (F16, BF16, F32, F64).
    // fp32 = fp16 = fp64 = 320,000 + 512,000 = 832,000; bf16 has no VALU counter: 512,000.
    assert_eq!(k["flops"]["fp32"], 832_000.0);
    assert_eq!(k["flops"]["fp64"], 832_000.0);
    assert_eq!(k["flops"]["fp16"], 832_000.0);
    assert_eq!(k["flops"]["bf16"], 512_000.0);
    // L2 bytes = 64 B × (READ + WRITE + ATOMIC_WITH_RET + ATOMIC_WITHOUT_RET) requests
    // = 64 × 4000 = 256,000 B (rocprof-compute's roofline_calc.py).
    assert_eq!(k["l2_bytes"], 256_000.0);
    let missing = k["missing"].to_string();
    for gone in ["wave size", "device arch", "TCP_TCC_ATOMIC"] {
        assert!(!missing.contains(gone), "{gone} still missing: {missing}");
    }
    let out = rooftop().args(["counters", &p, "--device", "mi300x"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("architecture gfx942 and wave size 64 from --device mi300x"), "{text}");
    // The header's "device in the files" does not claim what --device filled in.
    assert!(!text.contains("device in the files: gfx942"), "{text}");
}

#[test]
fn html_chart_and_table_say_the_tables_percent_of_roof_with_its_unit() {
    let (_dir_guard, dir) = tempdir("html-roof");
    let out = dir.join("r.html");
    let o = out.display().to_string();
    rooftop()
        .args(["counters", &fixture("ncu/h200/torch_raw.csv"), "--format", "html", "-o", &o])
        .assert()
        .success();
    let html = std::fs::read_to_string(&out).unwrap();
    // The bf16 GEMM: 137,438,953,472 FLOP per launch against the H200's 989.4 TFLOP/s
    // bf16 dense peak (the file names the H200) takes 137,438,953,472 / 989.4e12 =
    // 138.91 µs; the launches took (175.936 + 176.128) / 2 = 176.032 µs, so the
    // attainment is 138.91 / 176.032 = 78.9%. The DRAM share, 1.00 TB/s of 4.8 TB/s =
    // 20.9%, is the DRAM point's bandwidth share, never "the roof".
    assert!(html.contains("% roof: 78.9% (as in the table)"), "chart tooltip");
    assert!(html.contains("20.9% of its bandwidth roof"));
    assert!(!html.contains("20.9% of the roof"));
    // SDPA (IDs 3 and 7) is judged by Speed of Light: its L2 throughput weighted by
    // duration, (50.384937 × 87.968 + 50.784169 × 87.840) / 175.808 = 50.58%, with
    // the unit's name as the text table prints it.
    assert!(html.contains(">50.6% L2<"), "kernels table cell keeps its unit");
    assert!(html.contains("% roof: 50.6% L2 (as in the table)"));
}

#[test]
fn output_extension_chooses_the_format_unless_format_is_given() {
    let (_dir_guard, dir) = tempdir("ext");
    let input = fixture("ncu/handmade/raw_page.csv");
    // Each format's first bytes, as its specification begins a document.
    for (ext, start) in
        [("html", "<!DOCTYPE html>"), ("json", "{"), ("csv", "name,"), ("md", "## ")]
    {
        let out = dir.join(format!("report.{ext}"));
        let o = out.display().to_string();
        rooftop().args(["counters", &input, "-o", &o]).assert().success();
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.starts_with(start), "-o report.{ext}: {}", &text[..text.len().min(60)]);
    }
    // An explicit --format wins over the extension.
    let out = dir.join("table.html");
    let o = out.display().to_string();
    rooftop().args(["counters", &input, "--format", "table", "-o", &o]).assert().success();
    assert!(!std::fs::read_to_string(&out).unwrap().starts_with("<!DOCTYPE"));
}

/// The polybench export concatenates 18 ncu runs of `gemm_kernel`; only one collected
/// `gpu__time_duration` (its `.max`: 3,311,808 ns, the file's own value). The kernel's
/// total is that one measured duration, not 18 × 3.31 ms = 59.6 ms, and the 17 untimed
/// dispatches are said.
#[test]
fn kernel_total_is_only_what_was_measured() {
    let j = json_of(&["counters", &fixture("ncu/a100_polybench_gemm_metrics.csv")]);
    let k = &j["kernels"][0];
    assert_eq!(k["count"], 18);
    assert_eq!(k["total_duration_ns"].as_f64(), Some(3_311_808.0));
    let text = rooftop()
        .args(["counters", &fixture("ncu/a100_polybench_gemm_metrics.csv")])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("3.31 ms   3.31 ms"), "{text}");
    assert!(text.contains("17 of the 18 dispatches"), "{text}");
}

/// A truncated rocprofv3 kernel trace (the docs example cut at byte 700, inside the
/// kernel name of its 4th line) is refused with exit 2, naming the file and the line.
#[test]
fn truncated_kernel_trace_is_refused() {
    let (_guard, dir) = tempdir("kt-trunc");
    let text = std::fs::read(fixture("rocprof/rocprofv3_docs_examples/kernel_trace.csv")).unwrap();
    let path = dir.join("kernel_trace.csv");
    std::fs::write(&path, &text[..700]).unwrap();
    rooftop().args(["counters", path.to_str().unwrap()]).assert().code(2).stderr(
        predicate::str::contains("kernel_trace.csv, line 4: 7 fields but the header has 18"),
    );
}

/// `--device` of another vendor than the files': a warning in the report, and beside
/// measured roofs the device is not used at all (the roofs stay the fixture's own
/// roofline.csv figures: HBMBw = 1388.9302 GB/s in its first device row).
#[test]
fn device_of_another_vendor_is_warned_about() {
    let mi200 = fixture("rocprof/rocprof_compute_vcopy_MI200");
    let v = json_of(&["counters", &mi200, "--device", "h100-sxm"]);
    assert_eq!(v["roofs"]["source"], "measured");
    let dram =
        v["roofs"]["bandwidth"].as_array().unwrap().iter().find(|b| b["level"] == "dram").unwrap();
    assert!((dram["gbs"].as_f64().unwrap() - 1388.9302).abs() < 1e-6);
    let notes: Vec<&str> =
        v["roofs"]["notes"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(notes[0].starts_with("warning: --device h100-sxm"), "{notes:?}");
    assert!(notes[0].contains("MI200") && notes[0].contains("not used"), "{notes:?}");
    assert!(notes.iter().all(|n| !n.contains("h100-sxm (")), "{notes:?}");
    rooftop()
        .args(["counters", &mi200, "--device", "h100-sxm"])
        .assert()
        .success()
        .stdout(predicate::str::contains("warning: --device h100-sxm"));

    // An H200 file judged on an MI300X: the roofs are the MI300X's (5.3 TB/s HBM3 by
    // AMD's datasheet), and the warning names both.
    let h200 = fixture("ncu/h200/torch_raw.csv");
    let v = json_of(&["counters", &h200, "--device", "mi300x"]);
    assert_eq!(v["roofs"]["device"], "mi300x");
    let dram =
        v["roofs"]["bandwidth"].as_array().unwrap().iter().find(|b| b["level"] == "dram").unwrap();
    assert!((dram["gbs"].as_f64().unwrap() - 5300.0).abs() < 1.0, "{dram}");
    let first = v["roofs"]["notes"][0].as_str().unwrap();
    assert!(first.starts_with("warning: --device mi300x"), "{first}");
    assert!(first.contains("NVIDIA H200") && first.contains("mi300x's"), "{first}");

    // The files' own vendor: no warning.
    let v = json_of(&["counters", &h200, "--device", "h200-sxm"]);
    let notes = v["roofs"]["notes"].as_array().unwrap();
    assert!(notes.iter().all(|n| !n.as_str().unwrap().starts_with("warning")), "{notes:?}");

    // The help says what --device does beside measured roofs.
    let help = rooftop().args(["counters", "--help"]).output().unwrap();
    let help =
        String::from_utf8(help.stdout).unwrap().split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("except where the files carry measured roofs"), "{help}");
    assert!(help.contains("those stay the roofs"), "{help}");
}

/// A Speed of Light with an impossible figure (the A100 details excerpt with "DRAM
/// Throughput" 246.99% instead of its 46.99%) gives a warning and no bound: the fixture
/// as recorded is memory-bound by L2 (63.55% against the SM's 5.27%).
#[test]
fn impossible_speed_of_light_gives_a_warning_and_no_bound() {
    let src = fixture("ncu/clima_a100_details_excerpt.csv");
    let v = json_of(&["counters", &src]);
    assert_eq!(v["kernels"][0]["bound"], "memory");
    let (_guard, dir) = tempdir("sol");
    let text = std::fs::read_to_string(&src).unwrap();
    let bad = text.replacen(
        "\"DRAM Throughput\",\"%\",\"46.99\"",
        "\"DRAM Throughput\",\"%\",\"246.99\"",
        1,
    );
    assert_ne!(bad, text);
    let path = dir.join("clima.csv");
    std::fs::write(&path, bad).unwrap();
    let p = path.to_str().unwrap();
    let v = json_of(&["counters", p]);
    let k = &v["kernels"][0];
    assert!(k["bound"].is_null() && k["pct_of_roof"].is_null(), "{k}");
    assert!(k["bound_reason"].as_str().unwrap().contains("impossible"), "{k}");
    rooftop().args(["counters", p]).assert().success().stdout(
        predicate::str::contains("warning: clima.csv, line 6")
            .and(predicate::str::contains("246.99%")),
    );
}

/// The ±20% band is said only for a balanced bound: the hand-made raw page's gemm does
/// 9000 FLOPs on 2,048,500 + 1024 DRAM bytes (0.00439 FLOP/B), far below any ridge.
#[test]
fn memory_bound_reason_does_not_claim_balance() {
    let v = json_of(&["counters", &fixture("ncu/handmade/raw_page.csv")]);
    let k = v["kernels"].as_array().unwrap().iter().find(|k| k["bound"] == "memory").unwrap();
    let reason = k["bound_reason"].as_str().unwrap();
    assert!(reason.contains("0.00439 FLOP/B"), "{reason}");
    assert!(!reason.contains("balanced"), "{reason}");
}

/// Implausible inputs are refused with exit 2, naming the file, line and column.
#[test]
fn implausible_inputs_are_refused() {
    let (_guard, dir) = tempdir("implausible");
    let text = std::fs::read_to_string(fixture("ncu/handmade/raw_page.csv")).unwrap();
    // The units row (line 2) names `Kbyte` for dram__bytes_read.sum: the first `Kbyte`.
    let furlong = text.replacen("\"Kbyte\"", "\"furlong\"", 1);
    let path = dir.join("unit.csv");
    std::fs::write(&path, furlong).unwrap();
    rooftop().args(["counters", path.to_str().unwrap()]).assert().code(2).stderr(
        predicate::str::contains("unit.csv, line 2, column `dram__bytes_read.sum`")
            .and(predicate::str::contains("`furlong`")),
    );
    // gemm's dram__bytes_read.sum on line 3 is "2048.5" (Kbyte).
    let neg = text.replacen("\"2048.5\"", "\"-5\"", 1);
    let path = dir.join("neg.csv");
    std::fs::write(&path, neg).unwrap();
    rooftop().args(["counters", path.to_str().unwrap()]).assert().code(2).stderr(
        predicate::str::contains("neg.csv, line 3, column `dram__bytes_read.sum`")
            .and(predicate::str::contains("cannot be negative")),
    );
}

//! End-to-end tests of the `rooftop` binary: worked examples of docs/reference/ with the
//! arithmetic written here, bad input and exit codes, every output format.

#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn rooftop() -> Command {
    Command::cargo_bin("rooftop").expect("the rooftop binary is built by cargo test")
}

fn json(args: &[&str]) -> Value {
    let out = rooftop().args(args).args(["--format", "json"]).output().expect("runs");
    assert!(out.status.success(), "failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-300)
}

/// The decode-GEMM example of docs/reference/formulas.md#quantized-weights-q4_0-q8_0-int-g:
/// 3-bit decode GEMM, M=1 N=4096 K=4096, group 128, fp16 activations.
/// bytes = M*K*2 + K*N*3/8 + (K/128)*N*2 + M*N*2 = 8192 + 6291456 + 262144 + 8192.
#[test]
fn decode_3bit_gemm_numbers() {
    let v = json(&[
        "analyze",
        "gemm",
        "--m",
        "1",
        "--n",
        "4096",
        "--k",
        "4096",
        "--dtype",
        "fp16",
        "--wbits",
        "3",
        "--group",
        "128",
        "--device",
        "m4-max",
        "--time-us",
        "42",
    ]);
    assert_eq!(num(&v, "bytes"), 6_569_984.0);
    assert_eq!(num(&v, "flops"), 33_554_432.0);
    // 6569984 B / 42 µs = 156.43 GB/s; the M4 Max catalog roof is 546 GB/s.
    assert!(close(num(&v, "achieved_gbs"), 6_569_984.0 / 42e-6 / 1e9, 1e-9));
    assert!(close(num(&v, "memory_utilization_pct"), 6_569_984.0 / 42e-6 / 546e9 * 100.0, 1e-9));
    // Floor: bytes / bandwidth = 12.03 µs (compute floor 33554432 / 17.2e12 = 1.95 µs).
    assert!(close(num(&v, "floor_time_us"), 6_569_984.0 / 546e9 * 1e6, 1e-9));
    assert_eq!(v["bound"], "memory");
    assert_eq!(v["op"], "quantized matvec");
    assert!(v["findings"].as_array().is_some_and(|f| !f.is_empty()));
}

/// TraceLens's first GEMM example (docs/reference/formulas.md#tile-wave-and-dimension-efficiency):
/// M=10240, N=2048, MT256x64 on 304 CUs → 1280 tiles, 5 waves,
/// wq_eff = 1280 / (5 * 304) = 0.8421.
#[test]
fn tracelens_example_1_wave_quantization() {
    let v = json(&[
        "analyze",
        "gemm",
        "--m",
        "10240",
        "--n",
        "2048",
        "--k",
        "2048",
        "--dtype",
        "bf16",
        "--device",
        "mi300x",
        "--kernel",
        "Cijk_Alik_Bljk_BBS_BH_MT256x64x64_MI32x32x8x1_SN_WG32_8_1",
    ]);
    assert_eq!(num(&v, "tile_efficiency"), 1.0);
    assert!(close(num(&v, "wave_efficiency"), 1280.0 / 1520.0, 1e-12));
    assert!(close(num(&v, "dim_efficiency"), 1280.0 / 1520.0, 1e-12));
    assert_eq!(v["tiles"]["num_tiles"], 1280);
    assert_eq!(v["tiles"]["waves"], 5);
}

/// TraceLens's second GEMM example (same page): M=2048, N=10240, MT256x144 → tiles 8 x 72 = 576,
/// tile_eff = 2048*10240 / (2048*10368) = 0.98765, wq_eff = 576/608 = 0.9474,
/// dim_eff = 0.9357.
#[test]
fn tracelens_example_2_tile_quantization() {
    let v = json(&[
        "analyze",
        "gemm",
        "--m",
        "2048",
        "--n",
        "10240",
        "--k",
        "2048",
        "--dtype",
        "fp16",
        "--device",
        "mi300x",
        "--kernel",
        "Cijk_Alik_Bljk_HHS_BH_MT256x144x32_MI32x32x8x1_SN_WG32_8_1_WGM8",
    ]);
    let tile = (2048.0 * 10240.0) / (2048.0 * 10368.0);
    let wq = 576.0 / 608.0;
    assert!(close(num(&v, "tile_efficiency"), tile, 1e-12));
    assert!(close(num(&v, "wave_efficiency"), wq, 1e-12));
    assert!(close(num(&v, "dim_efficiency"), tile * wq, 1e-12));
    assert_eq!(v["tiles"]["num_tiles"], 576);
}

/// The same GEMM given in PyTorch's view is swapped before the tile math.
#[test]
fn torch_view_swaps_m_and_n_for_blas_kernels() {
    let v = json(&[
        "analyze",
        "gemm",
        "--m",
        "10240",
        "--n",
        "2048",
        "--k",
        "2048",
        "--view",
        "torch",
        "--device",
        "mi300x",
        "--kernel",
        "Cijk_Alik_Bljk_HHS_BH_MT256x144x32_MI32x32x8x1_SN_WG32_8_1_WGM8",
    ]);
    assert_eq!(v["tiles"]["kernel_m"], 2048);
    assert_eq!(v["tiles"]["kernel_n"], 10240);
    assert_eq!(v["tiles"]["swapped_from_torch_view"], true);
    assert_eq!(v["tiles"]["num_tiles"], 576);
}

/// The RMSNorm example of docs/reference/formulas.md#roofline: read N*D + D, write N*D
/// (bf16 = 2 B).
/// 4096 x 8192: read 67,125,248 B, write 67,108,864 B. At 55 µs on H100 SXM (3350 GB/s):
/// 134,234,112 / 55e-6 = 2440.6 GB/s = 72.9% of peak.
#[test]
fn rmsnorm_bandwidth_on_h100() {
    let v = json(&[
        "analyze",
        "rmsnorm",
        "--rows",
        "4096",
        "--cols",
        "8192",
        "--dtype",
        "bf16",
        "--device",
        "h100-sxm",
        "--time-us",
        "55",
    ]);
    assert_eq!(num(&v, "bytes_read"), 67_125_248.0);
    assert_eq!(num(&v, "bytes_written"), 67_108_864.0);
    let util = 134_234_112.0 / 55e-6 / 3350e9 * 100.0;
    assert!(close(num(&v, "memory_utilization_pct"), util, 1e-9));
    assert_eq!(v["bound"], "memory");
    let ids: Vec<&str> =
        v["findings"].as_array().unwrap().iter().filter_map(|f| f["id"].as_str()).collect();
    assert!(ids.contains(&"bandwidth.near_peak"), "{ids:?}");
}

/// Without a time, analyze gives the floor and the bound only.
#[test]
fn floor_only_without_time() {
    let v = json(&[
        "analyze", "gemm", "--m", "4096", "--n", "4096", "--k", "4096", "--dtype", "bf16",
        "--device", "h100-sxm",
    ]);
    // 2*4096^3 = 137,438,953,472 FLOP at 989.4 TFLOP/s = 138.9 µs;
    // bytes = 3 * 4096^2 * 2 = 100,663,296 at 3350 GB/s = 30.05 µs → compute bound.
    assert!(close(num(&v, "floor_time_us"), 137_438_953_472.0 / 989.4e12 * 1e6, 1e-9));
    assert_eq!(v["bound"], "compute");
    assert!(v["time_us"].is_null());
    assert!(v["roofline_attainment_pct"].is_null());
}

#[test]
fn occupancy_from_launch_flags() {
    // docs/reference/occupancy.md example N1: A100, 256 threads, 64 registers, no smem →
    // 4 blocks, 50%.
    let v = json(&[
        "analyze",
        "gemm",
        "--m",
        "4096",
        "--n",
        "4096",
        "--k",
        "4096",
        "--device",
        "a100-sxm-80gb",
        "--block",
        "256",
        "--regs",
        "64",
    ]);
    assert_eq!(num(&v, "occupancy_pct"), 50.0);
    assert_eq!(v["occupancy"]["blocks_per_cu"], 4);
}

#[test]
fn devices_list_and_lookup_by_tool_name() {
    rooftop()
        .arg("devices")
        .assert()
        .success()
        .stdout(predicate::str::contains("h100-sxm").and(predicate::str::contains("103 devices")));
    let v = json(&["devices", "NVIDIA H100 80GB HBM3"]);
    assert_eq!(v["id"], "h100-sxm");
    let list = json(&["devices", "--vendor", "apple"]);
    assert_eq!(list.as_array().map(Vec::len), Some(15));
}

/// A column of `rooftop devices` has one name in JSON and CSV (the device file's
/// `fp16_matrix`, with its unit), and the list spells the vendor as the device's own JSON
/// does.
#[test]
fn device_list_columns_have_one_name_and_vendor_one_spelling() {
    let list = json(&["devices"]);
    let h100 = list.as_array().unwrap().iter().find(|d| d["id"] == "h100-sxm").unwrap();
    // NVIDIA H100 SXM datasheet: 989.4 dense FP16 tensor TFLOP/s.
    assert_eq!(h100["fp16_matrix_tflops"], 989.4);
    assert!(h100.get("half_matrix_tflops").is_none());
    assert_eq!(h100["vendor"], json(&["devices", "h100-sxm"])["vendor"]);
    assert_eq!(h100["vendor"], "nvidia");
    let out = rooftop().args(["devices", "--format", "csv"]).output().unwrap();
    let csv = String::from_utf8(out.stdout).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let keys: Vec<&str> = h100.as_object().unwrap().keys().map(String::as_str).collect();
    let (mut a, mut b) = (header.clone(), keys);
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b);
    assert!(csv.contains("\nh100-sxm,NVIDIA H100 SXM5 80GB,nvidia,989.4,"), "{csv}");
    // The table keeps the datasheet's whole digits: the A100's 2039 GB/s, not 2040.
    let out = rooftop().args(["devices", "--vendor", "nvidia"]).output().unwrap();
    let table = String::from_utf8(out.stdout).unwrap();
    let a100 = table.lines().find(|l| l.contains("a100-sxm-80gb")).unwrap();
    assert!(a100.contains(" 2039 "), "{a100}");
}

/// Computed figures print three significant digits (a 4096³ bf16 GEMM: 2·4096³ FLOP over
/// 100,663,296 B = 1365.3 FLOP/B → "1370 FLOP/B"); JSON keeps the full value.
#[test]
fn computed_figures_show_three_significant_digits() {
    let args = ["analyze", "gemm", "--m", "4096", "--n", "4096", "--k", "4096"];
    let args = [&args[..], &["--dtype", "bf16", "--device", "h100-sxm"]].concat();
    for fmt in ["table", "md", "html"] {
        let out = rooftop().args(&args).args(["--format", fmt]).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("1370 FLOP/B") && !text.contains("1365"), "{fmt}: {text}");
    }
    let v = json(&args);
    assert!(close(num(&v, "arithmetic_intensity"), 4096.0 / 3.0, 1e-12));
}

/// `completions` and `man` take -o but not --format or --device-file: each one given is
/// named in one warning, and the output and exit code are as without it (the device file
/// is not even read).
#[test]
fn completions_and_man_warn_about_global_flags_without_effect() {
    let plain = rooftop().args(["completions", "bash"]).output().unwrap();
    assert!(plain.status.success() && plain.stderr.is_empty());
    let out = rooftop().args(["completions", "bash", "--format", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, plain.stdout);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "rooftop: warning: --format has no effect on `completions`\n"
    );
    let out = rooftop()
        .args(["--format", "parquet", "man", "--device-file", "/no/such/device.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains(".TH rooftop 1"));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "rooftop: warning: --format has no effect on `man`\n\
         rooftop: warning: --device-file has no effect on `man`\n"
    );
    // -o names a file: no warning, even when its extension names a format.
    let tmp = tempfile::Builder::new().prefix("rooftop-man-").tempdir().unwrap();
    let path = tmp.path().join("rooftop.json");
    let out = rooftop().args(["man", "-o", path.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success() && out.stderr.is_empty() && out.stdout.is_empty());
    assert!(std::fs::read_to_string(&path).unwrap().contains(".TH rooftop 1"));
}

#[test]
fn unknown_device_is_one_sentence_and_exit_2() {
    let out = rooftop().args(["devices", "h100-sxm4"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("h100-sxm"), "{err}");
}

#[test]
fn bad_input_exits_2_with_a_clear_sentence() {
    let cases: &[(&[&str], &str)] = &[
        (&["analyze", "gemm", "--m", "0", "--n", "1", "--k", "1", "--device", "h100-sxm"], "m"),
        (
            &[
                "analyze",
                "gemm",
                "--m",
                "1",
                "--n",
                "1",
                "--k",
                "1",
                "--device",
                "h100-sxm",
                "--time-us",
                "0",
            ],
            "--time-us",
        ),
        (
            &[
                "analyze",
                "gemm",
                "--m",
                "1",
                "--n",
                "1",
                "--k",
                "1",
                "--device",
                "h100-sxm",
                "--time-us",
                "-5",
            ],
            "",
        ),
        (
            &[
                "analyze", "gemm", "--m", "1", "--n", "1", "--k", "1", "--device", "h100-sxm",
                "--group", "64",
            ],
            "--wbits",
        ),
        (
            &["analyze", "gemm", "--m", "1", "--n", "1", "--k", "1", "--device", "nope-gpu"],
            "nope-gpu",
        ),
        (
            &[
                "analyze", "gemm", "--m", "1", "--n", "1", "--k", "1", "--dtype", "fp12",
                "--device", "h100-sxm",
            ],
            "fp12",
        ),
        (
            &[
                "analyze", "gemm", "--m", "1", "--n", "1", "--k", "1", "--device", "h100-sxm",
                "--block", "2048",
            ],
            "",
        ),
        (&["analyze", "rmsnorm", "--rows", "1", "--cols", "0", "--device", "h100-sxm"], "cols"),
    ];
    for (args, needle) in cases {
        let out = rooftop().args(*args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "args {args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "args {args:?}: {err}");
        assert!(!err.contains("panicked"), "args {args:?}: {err}");
    }
}

#[test]
fn huge_dimensions_do_not_panic() {
    let max = u64::MAX.to_string();
    let out = rooftop()
        .args(["analyze", "gemm", "--m", &max, "--n", &max, "--k", &max, "--device", "h100-sxm"])
        .args(["--time-us", "1e300"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(matches!(out.status.code(), Some(0 | 2)), "{err}");
}

#[test]
fn user_device_file_extends_a_catalog_device() {
    let tmp = tempfile::Builder::new().prefix("rooftop-test-").tempdir().unwrap();
    let dir = tmp.path();
    let file = dir.join("mine.toml");
    std::fs::write(
        &file,
        "schema_version = 1\n[[device]]\nid = \"my-h100\"\nextends = \"h100-sxm\"\n\
         name = \"My H100 (measured)\"\nprovenance = \"calibrated\"\n\
         source = \"measured by hand\"\n[device.memory]\nbandwidth_gbs = 3000\n",
    )
    .unwrap();
    let out = rooftop()
        .args(["--device-file", file.to_str().unwrap()])
        .args(["analyze", "copy", "--elements", "1000000000", "--device", "my-h100"])
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(num(&v, "peak_bandwidth_gbs"), 3000.0);
    assert_eq!(v["bandwidth_source"]["provenance"], "calibrated");
    // Broken file: the error names the file and the line.
    std::fs::write(&file, "schema_version = 1\n[[device]]\nid = \n").unwrap();
    let out =
        rooftop().args(["--device-file", file.to_str().unwrap(), "devices"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mine.toml:3:"), "{err}");
}

#[test]
fn csv_and_markdown_outputs() {
    let base = [
        "analyze",
        "softmax",
        "--rows",
        "4096",
        "--cols",
        "4096",
        "--device",
        "m1",
        "--time-us",
        "900",
    ];
    let out = rooftop().args(base).args(["--format", "csv"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut rdr = csv::ReaderBuilder::new().from_reader(text.as_bytes());
    let headers = rdr.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = rdr.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].len(), headers.len());
    let md = rooftop().args(base).args(["--format", "md"]).output().unwrap();
    let md = String::from_utf8(md.stdout).unwrap();
    assert!(md.starts_with("### softmax"), "{md}");
    assert!(md.contains("| metric | value | source |"));
}

#[test]
fn table_output_fits_100_columns() {
    for args in [
        vec!["devices"],
        vec!["devices", "mi300x"],
        vec![
            "analyze",
            "gemm",
            "--m",
            "1",
            "--n",
            "4096",
            "--k",
            "4096",
            "--dtype",
            "fp16",
            "--wbits",
            "3",
            "--group",
            "128",
            "--device",
            "m4-max",
            "--time-us",
            "42",
        ],
    ] {
        let out = rooftop().args(&args).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        for line in text.lines() {
            assert!(line.chars().count() <= 100, "{args:?}: {line}");
        }
    }
}

#[test]
fn output_file() {
    let tmp = tempfile::Builder::new().prefix("rooftop-out-").tempdir().unwrap();
    let path = tmp.path().join("out.json");
    rooftop()
        .args(["devices", "--format", "json", "-o", path.to_str().unwrap()])
        .assert()
        .success()
        .stdout("");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v.as_array().map(Vec::len), Some(103));
}

/// 2*M*N*K at M = 2^64-1 is past any count (1.8e19 FLOPs is over every GPU's hour of
/// work, let alone 64-bit arithmetic): refused with exit 2, not printed as EFLOPs.
#[test]
fn gemm_flops_overflow_is_refused() {
    let out = rooftop()
        .args(["analyze", "gemm", "--m", "18446744073709551615", "--n", "2", "--k", "2"])
        .args(["--device", "h100-sxm"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("overflow 64-bit"));
    // 2 * 2^31 * 2^31 * 2 = 2^64: just past u64.
    let out = rooftop()
        .args(["analyze", "gemm", "--m", "2147483648", "--n", "2147483648", "--k", "2"])
        .args(["--device", "h100-sxm"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Every flag of `analyze gemm` has a description (none empty).
#[test]
fn analyze_gemm_flags_all_have_help() {
    let out = rooftop().args(["analyze", "gemm", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        if t.starts_with("--")
            || (t.starts_with('-') && t.chars().nth(1).is_some_and(char::is_alphabetic))
        {
            // clap's long help puts the description on the next line.
            let next = lines.get(i + 1).map_or("", |n| n.trim());
            assert!(!next.is_empty() && !next.starts_with('-'), "no help for `{t}`:\n{text}");
        }
    }
}

/// `-o FILE` with a `.json`, `.csv`, `.md` or `.html` extension and no `--format` writes
/// that format; an explicit `--format` (before or after the subcommand) wins.
#[test]
fn the_output_file_extension_chooses_the_format_unless_format_is_given() {
    let tmp = tempfile::Builder::new().prefix("rooftop-ext-").tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| {
        let path = tmp.path().join(name);
        rooftop()
            .args(extra)
            .args(["analyze", "copy", "--elements", "1000", "--device", "h100-sxm", "-o"])
            .arg(&path)
            .assert()
            .success();
        std::fs::read_to_string(path).unwrap()
    };
    let j = run("a.json", &[]);
    assert!(serde_json::from_str::<Value>(&j).is_ok(), "{j}");
    assert!(run("a.HTML", &[]).starts_with("<!DOCTYPE html>"));
    assert!(run("a.markdown", &[]).starts_with("### "));
    assert!(run("a.csv", &[]).starts_with("device_id,op,"));
    // Given explicitly, the format wins over the name, in either position.
    let t = run("b.json", &["--format", "table"]);
    assert!(serde_json::from_str::<Value>(&t).is_err() && t.contains("floor time"), "{t}");
    let path = tmp.path().join("c.json");
    rooftop()
        .args(["analyze", "copy", "--elements", "1000", "--device", "h100-sxm", "--format=md"])
        .arg("-o")
        .arg(&path)
        .assert()
        .success();
    assert!(std::fs::read_to_string(path).unwrap().starts_with("### "));
}

/// Names that are not one device: `h100` (SXM 3.35 TB/s, NVL 3.9, PCIe 2.0) is never
/// silently the SXM part; an unknown name reads as one sentence; `--vendor cpu` says the
/// catalog holds no CPU and how to add this one.
#[test]
fn device_names_that_are_not_one_device_say_why() {
    let out = rooftop().args(["devices", "h100"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`h100-sxm`") && err.contains("`h100-pcie`"), "{err}");
    assert!(err.contains("h100-sxm (3.35 TB/s), h100-nvl (3.9 TB/s) and h100-pcie (2.0 TB/s)"));
    let out = rooftop().args(["devices", "xyz"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown device `xyz`: if it is not in the catalog"), "{err}");
    let out = rooftop().args(["devices", "--vendor", "cpu"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no CPUs") && err.contains("rooftop ceilings -o cpu.toml"), "{err}");
}

/// The bash completion script offers the values of flags with a fixed set (device ids,
/// precisions, kernels, presets, metrics) instead of file names; the values stay out of
/// `--help`, and a value outside the set still gets the command's own sentence.
#[test]
fn completions_offer_the_values_of_flags_with_a_fixed_set() {
    let out = rooftop().args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success());
    let script = String::from_utf8_lossy(&out.stdout);
    for words in [
        "h100-sxm",
        "mi300x",
        "fp64 fp32 tf32 fp16 bf16 fp8",
        "llama-7b",
        "time attainment flops bandwidth",
        "nvidia amd apple intel cpu",
        "read write copy scale add triad",
    ] {
        assert!(script.contains(words), "`{words}` not offered");
    }
    let help = rooftop().args(["analyze", "gemm", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(!help.contains("[possible values: fp64") && !help.contains("v100-sxm"), "{help}");
    let out = rooftop()
        .args(["analyze", "copy", "--elements", "8", "--dtype", "fp7", "--device", "h100-sxm"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("rooftop: error: --dtype"));
}

/// Without device files, `trace`, `analyze` and `model` read only the embedded entry of
/// the device they need when its name decides it; with a device file (here one that adds
/// an unrelated device) they read the whole catalog. Both give the same output and the
/// same errors, for a device named by id, by the name a trace gives it, by a name
/// several devices share, and by a name no device has.
#[test]
fn one_device_read_alone_or_with_the_whole_catalog_gives_the_same_output() {
    let tmp = tempfile::Builder::new().prefix("rooftop-test-").tempdir().unwrap();
    let file = tmp.path().join("my-gpu.toml");
    std::fs::write(
        &file,
        "schema_version = 1\n[[device]]\nid = \"other-gpu\"\nextends = \"l4\"\n\
         name = \"Another GPU\"\nsource = \"a test\"\n",
    )
    .unwrap();
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/kineto/tracelens_mi300/gaunernst_bert-small-uncased__1016001.json.gz"
    );
    let runs: Vec<Vec<&str>> = vec![
        vec!["trace", trace, "--format", "json"],
        vec!["trace", trace, "--device", "h100-sxm", "--format", "json"],
        vec!["analyze", "copy", "--elements", "1000000", "--device", "mi300x"],
        vec!["analyze", "copy", "--elements", "1000000", "--device", "AMD Instinct MI300X"],
        vec!["analyze", "copy", "--elements", "1000000", "--device", "gfx950"],
        vec!["analyze", "copy", "--elements", "1000000", "--device", "no-such-gpu"],
        vec!["model", "--preset", "llama-3-8b", "--device", "h100-sxm", "--format", "json"],
        vec!["model", "--preset", "llama-3-8b", "--device", "h100"],
    ];
    let mut failed = 0;
    for args in &runs {
        let alone = rooftop().args(args).output().unwrap();
        let whole =
            rooftop().args(["--device-file", file.to_str().unwrap()]).args(args).output().unwrap();
        assert_eq!(alone.status.code(), whole.status.code(), "{args:?}");
        assert_eq!(alone.stdout, whole.stdout, "{args:?}");
        assert_eq!(alone.stderr, whole.stderr, "{args:?}");
        failed += usize::from(!alone.status.success());
    }
    // Three errors (a shared name twice, an unknown one), the rest reports.
    assert_eq!(failed, 3);
}

//! End-to-end tests of `rooftop bench` and `rooftop ceilings` through the mock backend
//! (simulated, deterministic times) and, for Ctrl-C and the real pipeline, the CPU
//! backend on tiny sizes. Expected numbers are hand arithmetic on the mock's model:
//! 100 GB/s, 1 TFLOP/s fp32, 2 µs per launch, jitter pattern [1, 1.01, 0.99, 1.02, 0.98].

#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn rooftop() -> Command {
    Command::cargo_bin("rooftop").expect("the rooftop binary is built by cargo test")
}

fn mock(args: &[&str]) -> Command {
    let mut c = rooftop();
    c.args(["bench", "--backend", "mock"]).args(args);
    c
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// Triad n = 32 Mi fp32: 3 arrays x 4 B x 33,554,432 = 402,653,184 B per run, 2 FLOP per
/// element. Mock time t = 402,653,184 / 100e9 + 2e-6 = 4.028532e-3 s. Warm-up runs until
/// it reaches 0.05 s: 12 runs sum to 12.01 t = 0.0484 s, 13 to 13.0 t = 0.0524 s. Samples
/// start at jitter index 13 % 5 = 3 (1.02, 0.98, 1.0, 1.01, 0.99, ...: 5.0 t per cycle)
/// and run until they reach 0.25 s: 62 samples sum to 62 t = 0.24977 s, 63 to 0.2538 s.
/// The 63 are 13 x 1.02, 13 x 0.98, 13 x 1.0, 12 x 1.01, 12 x 0.99: the 32nd sorted value
/// is 1.0, so the median is exactly t.
#[test]
fn mock_triad_has_the_hand_computed_statistics_and_rates() {
    let out = mock(&["--kernel", "triad", "--no-ceilings", "--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json_of(&out);
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["backend"]["backend"], "mock");
    assert_eq!(v["backend"]["simulated"], true);
    let r = &v["results"][0];
    assert_eq!(r["kernel"], "triad");
    assert_eq!(r["check"]["passed"], true);
    assert_eq!(r["config"]["sizes"]["n"], 33_554_432);
    assert_eq!(r["bytes"].as_f64().unwrap(), 402_653_184.0);
    assert_eq!(r["flops"].as_f64().unwrap(), 67_108_864.0);
    let t = 402_653_184.0 / 100e9 + 2e-6;
    let median = r["median_s"].as_f64().unwrap();
    assert!((median - t).abs() < 1e-12, "median {median} vs {t}");
    let times = r["times_s"].as_array().unwrap();
    assert_eq!(times.len(), 63);
    assert_eq!(r["min_s"].as_f64().unwrap(), t * 0.98);
    assert_eq!(r["max_s"].as_f64().unwrap(), t * 1.02);
    let gbs = r["achieved_gbs"].as_f64().unwrap();
    assert!((gbs - 402_653_184.0 / t / 1e9).abs() < 1e-9);
    // Theoretical: the mock's catalog 100 GB/s; no ceilings measured.
    assert!((r["pct_of_theoretical_peak"].as_f64().unwrap() - gbs).abs() < 1e-9);
    assert!(r["pct_of_measured_ceiling"].is_null());
    assert_eq!(r["bound"], "memory");
    // Floor = bytes / 100 GB/s; attainment = floor / median.
    let floor = 402_653_184.0 / 100e9;
    assert!((r["floor_s"].as_f64().unwrap() - floor).abs() < 1e-15);
    // The core rounds the time to whole nanoseconds (4,028,532 ns): relative 1e-6.
    assert!((r["attainment_pct"].as_f64().unwrap() / (floor / t * 100.0) - 1.0).abs() < 1e-6);
}

#[test]
fn failed_check_is_not_timed_and_exits_nonzero() {
    let out = mock(&["--kernel", "triad", "--no-ceilings", "--format", "json"])
        .env("ROOFTOP_MOCK_WRONG", "triad")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("failed its check"));
    let v = json_of(&out);
    let r = &v["results"][0];
    assert_eq!(r["check"]["passed"], false);
    assert!(r["check"]["first_failure"].as_str().unwrap().starts_with('a'), "{r}");
    assert!(r["times_s"].as_array().unwrap().is_empty());
    assert!(r["median_s"].is_null() && r["achieved_gbs"].is_null());
}

#[test]
fn table_says_check_failed() {
    mock(&["--kernel", "copy", "--no-ceilings"])
        .env("ROOFTOP_MOCK_WRONG", "copy")
        .assert()
        .code(1)
        .stdout(predicate::str::contains("CHECK FAILED"));
}

#[test]
fn unknown_kernel_suggests_and_exits_2() {
    mock(&["--kernel", "triadd"]).assert().code(2).stderr(
        predicate::str::contains("unknown kernel `triadd`").and(predicate::str::contains("triad")),
    );
}

#[test]
fn impossible_size_is_refused_with_the_numbers() {
    // Triad n = 1000: 3 x 4000 B = 12 kB of buffers, 24 kB with the host copies.
    mock(&["--kernel", "triad", "--single-config", "1000", "--no-ceilings"])
        .env("ROOFTOP_MOCK_MEMORY", "20000")
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("needs 24.0 kB")
                .and(predicate::str::contains("has 20.0 kB available")),
        );
}

#[test]
fn bad_flags_are_input_errors() {
    for (args, msg) in [
        (vec!["--sweep", "threads"], "expected PARAM=V"),
        (vec!["--sweep", "warps=1,2"], "unknown parameter `warps`"),
        (vec!["--sweep", "threads=0"], "not a positive integer"),
        (vec!["--sizes", "12Q"], "unknown suffix"),
        (vec!["--dtype", "fp13"], "--dtype: unknown precision `fp13`: expected one of fp64"),
        (vec!["--wformat", "q9"], "--wformat: unknown weight format `q9` (expected affine, q4_0"),
        // Refused even where no selected kernel reads the flag.
        (vec!["--kernel", "triad", "--variant", "nope"], "--variant: unknown variant `nope`"),
        (vec!["--kernel", "fma", "--variant", "zp"], "variant `zp` is not one of fma's"),
        (vec!["--min-runs", "0"], "min-runs"),
        (vec!["--kernel", "triad", "--single-config", "1,2"], "takes 1 value"),
    ] {
        mock(&args).assert().code(2).stderr(predicate::str::contains(msg));
    }
}

#[test]
fn exports_are_written_and_agree() {
    let (_dir_guard, dir) = tempdir();
    let j = dir.join("r.json");
    let c = dir.join("r.csv");
    let m = dir.join("r.md");
    mock(&["--kernel", "copy", "--single-config", "4096", "--no-ceilings"])
        .arg("--export-json")
        .arg(&j)
        .arg("--export-csv")
        .arg(&c)
        .arg("--export-markdown")
        .arg(&m)
        .assert()
        .success();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(v["results"].as_array().unwrap().len(), 1);
    assert_eq!(v["interrupted"], false);
    let csv = std::fs::read_to_string(&c).unwrap();
    assert!(csv.starts_with("kernel,implementation,builtin,config,launch,check_passed"));
    assert_eq!(csv.lines().count(), 2);
    assert!(csv.lines().nth(1).unwrap().starts_with("copy,rooftop,false,n=4Ki fp32,"));
    let md = std::fs::read_to_string(&m).unwrap();
    assert!(md.contains("| copy | n=4Ki fp32 |"));
}

#[test]
fn autotune_reports_every_launch_best_first() {
    let out = mock(&[
        "--kernel",
        "copy",
        "--single-config",
        "4096",
        "--autotune",
        "--no-ceilings",
        "--format",
        "json",
    ])
    .output()
    .unwrap();
    assert!(out.status.success());
    let v = json_of(&out);
    let rs = v["results"].as_array().unwrap();
    assert_eq!(rs.len(), 3, "mock launch space is block 64, 128, 256");
    let med: Vec<f64> = rs.iter().map(|r| r["median_s"].as_f64().unwrap()).collect();
    assert!(med.windows(2).all(|w| w[0] <= w[1]), "{med:?}");
}

#[test]
fn list_shows_kernels() {
    rooftop()
        .args(["bench", "--list"])
        .assert()
        .success()
        .stdout(predicate::str::contains("triad").and(predicate::str::contains("gemm")));
}

/// A fresh, empty scratch directory and its path. The directory is removed when the
/// guard drops, at the end of the test whether it passed or failed: bind the guard to
/// a name (`_x_guard`), not `_`, which would drop it at once.
fn tempdir() -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::Builder::new().prefix("rooftop-test-").tempdir().unwrap();
    let p = d.path().to_path_buf();
    (d, p)
}

/// `rooftop ARGS PATH`, started with its standard output and error piped.
#[cfg(unix)]
fn spawn_rooftop<const N: usize>(args: [&str; N], path: &std::path::Path) -> std::process::Child {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("rooftop"))
        .args(args)
        .arg(path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Ctrl-C: SIGINT to `child`.
#[cfg(unix)]
fn ctrl_c(child: &std::process::Child) {
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// User + system CPU seconds of a process, from /proc (Linux); `None` elsewhere.
#[cfg(unix)]
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th
    // fields of the line, in clock ticks (100 per second on Linux).
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// Ctrl-C: the run stops after the current sample, keeps its results in the export file
/// (valid JSON, `interrupted: true`) and exits non-zero.
#[cfg(unix)]
#[test]
fn ctrl_c_keeps_results_so_far() {
    let (_dir_guard, dir) = tempdir();
    let j = dir.join("r.json");
    // A CPU device file with a DRAM figure, so that --no-ceilings needs no measurement.
    let dev = dir.join("cpu.toml");
    std::fs::write(
        &dev,
        "[[device]]\nid = \"test-cpu\"\nname = \"test CPU\"\nvendor = \"cpu\"\n\
         family = \"cpu\"\nsource = \"test\"\n[device.compute]\nnum_cu = 2\n\
         cu_kind = \"core\"\nwarp_size = 1\n[device.peak_tflops]\nfp32_vector = 0.2\n\
         [device.memory]\nbandwidth_gbs = 50\n",
    )
    .unwrap();
    let bin = assert_cmd::cargo::cargo_bin("rooftop");
    let child = std::process::Command::new(bin)
        .arg("--device-file")
        .arg(&dev)
        .args(["bench", "--device", "test-cpu", "--kernel", "copy,scale"])
        .args(["--single-config", "4096", "--no-ceilings"])
        // No run limit in reach: on a loaded machine the warm-up can time a run long, its
        // samples then come short, and 10,000 of them (the default limit) ended the first
        // case before Ctrl-C came.
        .args(["--min-time", "60", "--max-runs", "100000000", "--export-json"])
        .arg(&j)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The export file appears (empty) when the cases start; then give the first case a
    // moment to check, warm up and take samples.
    let start = std::time::Instant::now();
    while !j.exists() && start.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // Give the first case time to check, warm up (0.05 s) and take samples: 1.5 s of wall
    // time as on an idle machine, and also 1.5 s of the child's CPU time, so that a busy
    // 2-core CI machine, which stretches the wall time, waits longer.
    let t0 = std::time::Instant::now();
    let deadline = t0 + std::time::Duration::from_secs(50);
    loop {
        let waited = t0.elapsed().as_secs_f64();
        let cpu = cpu_seconds(child.id()).unwrap_or(waited);
        if (waited >= 1.5 && cpu >= 1.5) || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    ctrl_c(&child);
    let out = child.wait_with_output().unwrap();
    // 130 = 128 + SIGINT, as a shell reports it (documented in `rooftop --help`).
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted by Ctrl-C"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(v["interrupted"], true);
    let r = &v["results"][0];
    assert_eq!(r["kernel"], "copy");
    assert_eq!(r["interrupted"], true);
    assert!(!r["times_s"].as_array().unwrap().is_empty());
    assert!(String::from_utf8_lossy(&out.stdout).contains("interrupted (Ctrl-C)"));
}

/// Ctrl-C during start-up (the quick ceilings, before any case): exit 130 and an export
/// that exists, parses and says `"interrupted": true` with no results.
#[cfg(unix)]
#[test]
fn ctrl_c_during_start_up_is_recorded_as_interrupted() {
    let (_dir_guard, dir) = tempdir();
    let j = dir.join("early.json");
    // A stale export of an earlier run must not survive as this run's answer.
    std::fs::write(&j, r#"{"interrupted": false, "results": [1, 2, 3]}"#).unwrap();
    let child = spawn_rooftop(["bench", "--backend", "mock", "--export-json"], &j);
    // Past `main`'s first lines (the handler), well before the mock's quick ceilings
    // (about 2 s) end.
    std::thread::sleep(std::time::Duration::from_millis(300));
    ctrl_c(&child);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(v["interrupted"], true);
    assert_eq!(v["schema_version"], 1);
}

/// Ctrl-C in a command that keeps no partial results ends it at once with 130: here
/// `rooftop trace` waiting to open a named pipe that no one writes to.
#[cfg(unix)]
#[test]
fn ctrl_c_ends_a_command_without_partial_results_at_once() {
    let (_dir_guard, dir) = tempdir();
    let fifo = dir.join("trace.json");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let mut child = spawn_rooftop(["trace"], &fifo);
    // Past `main`'s first lines (the handler); the open of the pipe blocks for good.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "rooftop ended before Ctrl-C");
    ctrl_c(&child);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
}

/// A device file of calibrated roofs (as `rooftop ceilings -o` writes them): 50 GB/s DRAM
/// and 0.5 TFLOP/s fp32 for the mock device (whose own figures are 100 GB/s and
/// 1 TFLOP/s).
fn calibrated_mock_file(dir: &std::path::Path) -> std::path::PathBuf {
    let dev = dir.join("mock-cal.toml");
    let cal = |v: &str| {
        format!(
            "{{ value = {v}, source = \"measured by rooftop ceilings on 2026-01-01: test\", \
             provenance = \"calibrated\", confidence = \"medium\" }}"
        )
    };
    std::fs::write(
        &dev,
        format!(
            "[[device]]\nid = \"mock\"\nname = \"mock device (calibrated)\"\nvendor = \"other\"\n\
             source = \"test\"\n[device.compute]\nnum_cu = 4\ncu_kind = \"core\"\nwarp_size = 1\n\
             [device.peak_tflops]\nfp32_vector = {}\n[device.memory]\nbandwidth_gbs = {}\n",
            cal("0.5"),
            cal("50")
        ),
    )
    .unwrap();
    dev
}

/// The file's roofs are used for "% ceil" (not re-measured: no quick ceilings run), with
/// or without --no-ceilings; "% peak" stays against the device's theoretical figures.
/// Oracles: % ceil / % peak = theoretical / calibrated = 100 / 50 = 2 for the triad
/// (memory-bound) and 1000 / 500 = 2 for the gemm (compute-bound), whatever the times.
#[test]
fn calibrated_device_file_roofs_are_used() {
    let (_dir_guard, dir) = tempdir();
    let dev = calibrated_mock_file(&dir);
    for extra in [&[][..], &["--no-ceilings"][..]] {
        let out = rooftop()
            .arg("--device-file")
            .arg(&dev)
            .args(["bench", "--backend", "mock", "--device", "mock"])
            .args(["--kernel", "triad", "--format", "json"])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v = json_of(&out);
        assert_eq!(v["ceilings"]["method"], "calibrated (file)");
        assert_eq!(v["time_spent"]["ceilings_s"].as_f64().unwrap(), 0.0, "not measured");
        let r = &v["results"][0];
        assert_eq!(r["measured_ceiling"]["value"].as_f64().unwrap(), 50.0);
        let ceil = r["pct_of_measured_ceiling"].as_f64().unwrap();
        let peak = r["pct_of_theoretical_peak"].as_f64().unwrap();
        assert!((ceil / peak - 2.0).abs() < 1e-9, "{ceil} / {peak}");
        let gbs = r["achieved_gbs"].as_f64().unwrap();
        assert!((ceil - gbs / 50.0 * 100.0).abs() < 1e-9);
    }
    let out = rooftop()
        .arg("--device-file")
        .arg(&dev)
        .args(["bench", "--backend", "mock", "--device", "mock", "--no-ceilings"])
        .args(["--kernel", "gemm", "--single-config", "512,512,512", "--no-builtin"])
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json_of(&out);
    let r = &v["results"][0];
    assert_eq!(r["bound"], "compute");
    assert_eq!(r["measured_ceiling"]["value"].as_f64().unwrap(), 500.0);
    let ceil = r["pct_of_measured_ceiling"].as_f64().unwrap();
    let peak = r["pct_of_theoretical_peak"].as_f64().unwrap();
    assert!((ceil / peak - 2.0).abs() < 1e-9, "{ceil} / {peak}");
    // The table says where the roofs came from.
    let out = rooftop()
        .arg("--device-file")
        .arg(&dev)
        .args(["bench", "--backend", "mock", "--device", "mock", "--kernel", "triad"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("calibrated (file)"));
}

/// A compute-only run needs no memory bandwidth: gemm with --no-ceilings on the CPU runs
/// (or, on a CPU whose clock is not known, says that the compute peak is missing, not the
/// bandwidth that the run does not need).
#[test]
fn no_ceilings_gemm_needs_no_bandwidth() {
    let out = rooftop()
        .args(["bench", "--no-ceilings", "--kernel", "gemm", "--single-config", "32,32,32"])
        .args(["--min-time", "0", "--min-runs", "2", "--warmup", "1", "--warmup-time", "0"])
        .args(["--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("memory bandwidth"), "{err}");
    if out.status.success() {
        let v = json_of(&out);
        assert_eq!(v["results"][0]["bound"], "compute");
        assert!(v["results"][0]["pct_of_theoretical_peak"].as_f64().is_some());
    } else {
        assert_eq!(out.status.code(), Some(2));
        assert!(err.contains("compute peak is unknown"), "{err}");
    }
}

/// Every output path is checked before any work: exit 2, the path named, nothing run
/// (one line on stderr: the refusal, no table).
#[test]
fn bad_output_paths_are_refused_before_any_work() {
    let cases: [&[&str]; 4] = [
        &["bench", "--backend", "mock", "-o", "/no/such/dir/x.txt"],
        &["bench", "--backend", "mock", "--export-json", "/no/such/dir/x.json"],
        &["ceilings", "--backend", "mock", "-o", "/no/such/dir/x.toml"],
        &["ceilings", "--backend", "mock", "--sweep-csv", "/no/such/dir/x.csv"],
    ];
    for args in cases {
        let out = rooftop().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("/no/such/dir/x."), "{err}");
        assert!(err.contains("nothing was run"), "{err}");
        // Refused before the run: no table, and no measurement line on stderr.
        assert!(out.stdout.is_empty());
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// The exit codes scripts rely on are in the top-level help.
#[test]
fn help_documents_the_exit_codes() {
    let out = rooftop().arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for code in ["0 ok", "1 a regression", "2 bad input or usage", "130 interrupted"] {
        assert!(text.contains(code), "{code}: {text}");
    }
}

/// `--no-ceilings` on the CPU with a memory-bound kernel: the CPU reports no DRAM
/// bandwidth to judge it against, so the run stops before timing anything, with one
/// sentence that says which kernels can run without one.
#[test]
fn no_ceilings_on_the_cpu_refuses_a_memory_bound_kernel_in_one_sentence() {
    let out = rooftop()
        .args(["bench", "--kernel", "triad", "--single-config", "1000", "--no-ceilings"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not report its memory bandwidth"), "{err}");
    assert!(err.contains("only the compute-bound kernels (gemm, fma)"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

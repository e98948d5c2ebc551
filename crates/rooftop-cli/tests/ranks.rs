//! End-to-end tests of multi-rank `rooftop trace`: collectives against TraceLens's
//! `NcclAnalyser` output on the same traces and against the planted schedule of the
//! synthetic ranks (hand arithmetic), the map to Parquet and the reduce from tables
//! (equal to the reduce from traces), bad rank sets (warnings naming the ranks), and
//! the Slurm submission (dry run, and a stand-in `sbatch`).

#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn rooftop() -> Command {
    Command::cargo_bin("rooftop").expect("the rooftop binary is built by cargo test")
}

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/kineto").join(rel)
}

/// A fresh, empty scratch directory and its path. The directory is removed when the
/// guard drops, at the end of the test whether it passed or failed: bind the guard to
/// a name (`_x_guard`), not `_`, which would drop it at once.
fn tempdir(tag: &str) -> (tempfile::TempDir, PathBuf) {
    let d =
        tempfile::Builder::new().prefix(&format!("rooftop-cli-ranks-{tag}-")).tempdir().unwrap();
    let p = d.path().to_path_buf();
    (d, p)
}

fn cross(dir: &Path, extra: &[&str]) -> Value {
    let out =
        rooftop().arg("trace").arg(dir).args(extra).args(["--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["cross_rank"].clone()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn close(a: f64, b: f64, tol: f64, what: &str) {
    assert!((a - b).abs() <= tol, "{what}: {a} vs {b}");
}

/// A CSV as rows of `column → cell`.
fn csv_rows(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    r.records()
        .map(|rec| header.iter().cloned().zip(rec.unwrap().iter().map(str::to_string)).collect())
        .collect()
}

fn num(s: &str) -> f64 {
    s.parse().unwrap()
}

/// TraceLens prints MiB-based "GB/s": GiB/s.
const GIB_PER_GB: f64 = 1_073_741_824.0 / 1e9;

#[test]
fn collectives_agree_with_tracelens_nccl_analyser() {
    let dir = fixture("ranks-same-base");
    let c = cross(&dir, &[]);
    let sync = csv_rows(&dir.join("tracelens_implicit_sync.csv"));
    assert_eq!(sync.len(), 4);
    let mean = |k: &str| sync.iter().map(|r| num(&r[k])).sum::<f64>() / sync.len() as f64;
    let max = |k: &str| sync.iter().map(|r| num(&r[k])).fold(f64::MIN, f64::max);
    let rows = c["collectives"]["rows"].as_array().unwrap();
    let ar = rows.iter().find(|r| r["kind"] == "all_reduce").unwrap();
    assert_eq!(ar["count"], 4);
    // TraceLens: In msg size (MB) is MiB; 15.258789 MiB = 16,000,000 bytes.
    close(f(&ar["message_bytes"]), num(&sync[0]["Full msg size (MB)"]) * 1_048_576.0, 1.0, "size");
    close(f(&ar["transfer_mean_us"]), mean("comm_latency"), 1e-9, "transfer = shortest duration");
    close(f(&ar["start_skew_mean_us"]), mean("skew in start time"), 1e-6, "start skew mean");
    close(f(&ar["start_skew_max_us"]), max("skew in start time"), 1e-6, "start skew max");
    close(f(&ar["end_skew_mean_us"]), mean("skew in end time"), 1e-6, "end skew");
    close(f(&ar["wait_mean_us"]), mean("avg_wait_time"), 1e-6, "wait per rank and instance");
    // Every instance took the same time, so the bandwidth of the mean is theirs.
    close(f(&ar["algbw_gbs"]), num(&sync[0]["algo bw (GB/s)"]) * GIB_PER_GB, 1e-4, "algbw");
    close(f(&ar["busbw_gbs"]), num(&sync[0]["bus bw (GB/s)"]) * GIB_PER_GB, 1e-4, "busbw");
    // Stragglers: the same arrivals and waits per rank.
    let ours = c["stragglers"].as_array().unwrap();
    for t in csv_rows(&dir.join("tracelens_straggler_summary.csv")) {
        let r = ours.iter().find(|s| s["rank"].as_i64() == Some(num(&t["rank"]) as i64)).unwrap();
        assert_eq!(
            r["times_last"].as_f64(),
            Some(num(&t["times_arrived_last"])),
            "rank {}",
            t["rank"]
        );
        assert_eq!(
            r["times_first"].as_f64(),
            Some(num(&t["times_arrived_first"])),
            "rank {}",
            t["rank"]
        );
        // TraceLens rounds to 0.1 µs.
        close(
            f(&r["wait_suffered_ms"]) * 1e3,
            num(&t["total_wait_time_us"]),
            0.05,
            "wait suffered",
        );
    }
    // All-to-all-v: TraceLens's size imbalance (largest In msg over the mean).
    let a2a = csv_rows(&dir.join("tracelens_all2allv.csv"));
    let g = &c["all_to_all"][0];
    assert_eq!(g["count"].as_u64(), Some(a2a.len() as u64));
    close(f(&g["imbalance_mean"]), num(&a2a[0]["size_imbalance"]), 1e-12, "imbalance");
}

#[test]
fn planted_straggler_and_bandwidth_by_hand_whatever_the_clock_bases() {
    // bench/ranks/gen.py: 4 all-reduces of 16,000,000 bytes; transfer
    // S·2(n−1)/n / 360 GB/s = 16e6 · 1.5 / 360 = 66,666.7 ns (written as 66,667 ns), so
    // busbw = 16e6 · 1.5 / 66,667 ns = 359.998 GB/s, 80.0% of NVLink 4's 450 GB/s.
    let c = cross(&fixture("ranks"), &["--gpus-per-node", "8"]);
    let ar = c["collectives"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "all_reduce")
        .cloned()
        .unwrap();
    close(f(&ar["busbw_gbs"]), 16e6 * 1.5 / 66_667.0, 1e-9, "busbw");
    close(f(&ar["busbw_pct_of_peak"]), 16e6 * 1.5 / 66_667.0 / 450.0 * 100.0, 1e-9, "of NVLink 4");
    assert_eq!(ar["scope"], "intra_node");
    assert_eq!(ar["peak_link"], "nvlink4-h100");
    // Rank 2 runs one more 300 µs kernel before each all-reduce (jitter ≤ 40 µs): last
    // every time, at least 3 · (300 − 40) µs of others' waiting per all-reduce.
    let s = &c["stragglers"][0];
    assert_eq!((s["rank"].as_i64(), s["times_last"].as_u64()), (Some(2), Some(4)));
    assert!(f(&s["wait_caused_ms"]) >= 4.0 * 3.0 * 0.260, "{s}");
    assert!(f(&s["wait_caused_ms"]) <= 4.0 * 3.0 * 0.340, "{s}");
    assert_eq!(s["steps"], 2);
    // Rank 1 sends 3 × 1,024 bf16 to each of 4 ranks, the others 1 × 1,024: imbalance
    // 3 / ((3 + 1 + 1 + 1) / 4) = 2; per instance rank 1 sends 24,576 bytes.
    let g = &c["all_to_all"][0];
    assert_eq!(g["heaviest_sender"], 1);
    assert_eq!(g["send_bytes"][1].as_u64(), Some(2 * 24_576));
    close(f(&g["imbalance_mean"]), 2.0, 1e-12, "imbalance");
    assert_eq!(g["matrix_bytes"][1][0].as_u64(), Some(2 * 3 * 1024 * 2));
    // The clock base of each rank changes nothing: the same-base copy gives the same.
    let same = cross(&fixture("ranks-same-base"), &["--gpus-per-node", "8"]);
    for k in ["collectives", "all_to_all", "findings", "warnings"] {
        assert_eq!(c[k], same[k], "{k}");
    }
    for (a, b) in
        c["stragglers"].as_array().unwrap().iter().zip(same["stragglers"].as_array().unwrap())
    {
        for k in ["rank", "times_last", "times_first", "wait_suffered_ms", "wait_caused_ms"] {
            assert_eq!(a[k], b[k], "{k}");
        }
    }
    let titles: Vec<&str> =
        c["findings"].as_array().unwrap().iter().map(|x| x["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["rank 2 (rank2.json) is the straggler", "uneven all-to-all in default_pg"]);
}

#[test]
fn parquet_tables_reduce_to_the_report_of_the_traces() {
    let (_tables_guard, tables) = tempdir("tables");
    rooftop()
        .args(["trace"])
        .arg(fixture("ranks"))
        .args(["--format", "parquet", "-o"])
        .arg(&tables)
        .assert()
        .success();
    for r in 0..4 {
        for t in ["meta", "collectives", "kernels", "ops", "segments", "warnings"] {
            assert!(tables.join(format!("rank{r}/{t}.parquet")).is_file(), "rank{r}/{t}");
        }
    }
    let a = cross(&fixture("ranks"), &["--gpus-per-node", "4"]);
    let b = cross(&tables, &["--gpus-per-node", "4"]);
    assert_eq!(a, b);
    // One rank's map, as a Slurm array task runs it.
    let (_one_guard, one) = tempdir("one");
    rooftop()
        .arg("trace")
        .arg(fixture("ranks/rank3.json"))
        .args(["--format", "parquet", "-o"])
        .arg(&one)
        .assert()
        .success();
    assert!(one.join("meta.parquet").is_file());
    // The table renderers work from tables too.
    rooftop().arg("trace").arg(&tables).assert().success().stdout(
        predicate::str::contains("rank 2 (rank2.json) is the straggler")
            .and(predicate::str::contains("rank tables hold no per-rank report")),
    );
    let (_csv_guard, csv) = tempdir("csv");
    rooftop()
        .arg("trace")
        .arg(&tables)
        .args(["--format", "csv", "-o"])
        .arg(&csv)
        .assert()
        .success();
    for name in [
        "cross_rank.csv",
        "collectives.csv",
        "stragglers.csv",
        "all_to_all.csv",
        "process_groups.csv",
    ] {
        assert!(csv.join(name).is_file(), "{name}");
    }
    let html = rooftop().arg("trace").arg(&tables).args(["--format", "html"]).output().unwrap();
    let text = String::from_utf8_lossy(&html.stdout);
    assert!(text.contains("Stragglers") && text.contains("<svg class=\"heatmap\""), "html");
}

#[test]
fn bad_rank_sets_are_warnings_naming_the_ranks() {
    let src = fixture("ranks");
    let (_dir_guard, dir) = tempdir("bad");
    for r in [0, 1, 2] {
        std::fs::copy(src.join(format!("rank{r}.json")), dir.join(format!("rank{r}.json")))
            .unwrap();
    }
    // A second file claiming rank 1, with another world size.
    let text = std::fs::read_to_string(src.join("rank1.json")).unwrap();
    std::fs::write(dir.join("rank1b.json"), text.replace("\"world_size\": 4", "\"world_size\": 8"))
        .unwrap();
    let c = cross(&dir, &[]);
    let w = |k: &str| {
        c["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["kind"] == k)
            .map(|w| w["example"].as_str().unwrap().to_string())
            .unwrap_or_default()
    };
    assert!(
        w("duplicate_rank").contains("rank 1 appears twice (rank1.json and rank1b.json)"),
        "{}",
        c["warnings"]
    );
    assert!(w("world_size_mismatch").contains("world size 8 on ranks 1"), "{}", c["warnings"]);
    assert!(w("missing_ranks").contains("no trace for rank 3"), "{}", c["warnings"]);
    assert!(
        w("incomplete_collectives").contains("no trace for member rank 3"),
        "{}",
        c["warnings"]
    );
    // Never a number from an incomplete collective.
    assert_eq!(c["collectives"]["matched"], 0);
    assert_eq!(c["collectives"]["rows"].as_array().map(Vec::len), Some(0));
    // The terminal report says the same.
    rooftop().arg("trace").arg(&dir).assert().success().stdout(
        predicate::str::contains("Cross-rank warnings")
            .and(predicate::str::contains("missing_ranks")),
    );
    // A damaged table: exit 2 naming the file; the other ranks still reported.
    let (_tables_guard, tables) = tempdir("bad-tables");
    rooftop()
        .arg("trace")
        .arg(fixture("ranks"))
        .args(["--format", "parquet", "-o"])
        .arg(&tables)
        .assert()
        .success();
    std::fs::write(tables.join("rank0/collectives.parquet"), b"PAR1 not really").unwrap();
    rooftop()
        .arg("trace")
        .arg(&tables)
        .assert()
        .code(2)
        .stdout(predicate::str::contains("Across ranks"))
        .stderr(
            predicate::str::contains("rank0/collectives.parquet")
                .and(predicate::str::contains("panicked").not()),
        );
}

#[test]
fn flags_are_checked() {
    let ranks = fixture("ranks");
    rooftop()
        .arg("trace")
        .arg(&ranks)
        .args(["--format", "parquet"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("pass -o DIR"));
    rooftop()
        .args(["devices", "--format", "parquet"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("only `rooftop trace`"));
    rooftop()
        .arg("trace")
        .arg(&ranks)
        .args(["--intra-link", "warp-drive"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("unknown link `warp-drive`")
                .and(predicate::str::contains("nvlink4-h100")),
        );
    rooftop().arg("trace").arg(&ranks).args(["--gpus-per-node", "0"]).assert().code(2);
    rooftop()
        .arg("trace")
        .arg(&ranks)
        .args(["--partition", "gpu"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--slurm"));
    rooftop()
        .arg("trace")
        .arg(ranks.join("rank0.json"))
        .arg("--slurm")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("directory of rank traces"));
}

#[test]
fn slurm_dry_run_prints_the_scripts_and_submission_uses_sbatch() {
    let ranks = fixture("ranks");
    let (_work_guard, work) = tempdir("slurm");
    rooftop()
        .arg("trace")
        .arg(&ranks)
        .args([
            "--slurm",
            "--dry-run",
            "--partition",
            "debug",
            "--array-parallelism",
            "2",
            "--gpus-per-node",
            "8",
            "--sbatch-arg=--time=00:10:00",
            "--work-dir",
        ])
        .arg(&work)
        .assert()
        .success()
        .stdout(
            predicate::str::contains("#SBATCH --array=0-3%2")
                .and(predicate::str::contains("#SBATCH --partition=debug"))
                .and(predicate::str::contains("#SBATCH --time=00:10:00"))
                .and(predicate::str::contains("--format parquet -o"))
                .and(predicate::str::contains("--gpus-per-node 8"))
                .and(predicate::str::contains("--dependency=afterany:<map job id>"))
                .and(predicate::str::contains("nothing was submitted")),
        );
    assert!(!work.join("map.sbatch").exists(), "a dry run writes nothing");
    // A stand-in sbatch that logs its arguments and answers like `sbatch --parsable`.
    let fake = work.join("sbatch");
    let log = work.join("sbatch.log");
    std::fs::write(&fake, format!("#!/bin/sh\necho \"$@\" >> {}\nif [ -f {}.n ]; then echo 1002; else touch {}.n; echo '1001;cluster'; fi\n", log.display(), log.display(), log.display())).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        rooftop()
            .env("ROOFTOP_SBATCH", &fake)
            .arg("trace")
            .arg(&ranks)
            .args(["--slurm", "--format", "json", "--work-dir"])
            .arg(&work)
            .assert()
            .success()
            .stdout(
                predicate::str::contains(
                    "submitted map job 1001 (4 array tasks) and reduce job 1002",
                )
                .and(predicate::str::contains("report.json")),
            );
        let calls = std::fs::read_to_string(&log).unwrap();
        assert!(
            calls.contains("--parsable") && calls.contains("--dependency=afterany:1001"),
            "{calls}"
        );
        let manifest = std::fs::read_to_string(work.join("ranks.txt")).unwrap();
        assert_eq!(manifest.lines().count(), 4);
        assert!(std::fs::read_to_string(work.join("reduce.sbatch"))
            .unwrap()
            .contains("--format json -o"));
    }
}

#[test]
fn older_traces_give_what_they_can_and_say_what_is_unknown() {
    let full = cross(&fixture("ranks"), &[]);
    // Arguments on `record_param_comms` only: the same analysis.
    let op = cross(&fixture("ranks-args-op"), &[]);
    for k in ["collectives", "all_to_all", "findings", "warnings"] {
        assert_eq!(full[k], op[k], "{k}");
    }
    // Kernel names only: kinds from the names, matched by order, the same transfer times,
    // skews and straggler; no sizes or bandwidths, and a warning saying so.
    let bare = cross(&fixture("ranks-args-none"), &[]);
    let ar = |c: &Value| {
        c["collectives"]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["kind"] == "all_reduce")
            .cloned()
            .unwrap()
    };
    let (a, b) = (ar(&full), ar(&bare));
    for k in ["count", "transfer_mean_us", "start_skew_mean_us", "end_skew_max_us", "wait_total_ms"]
    {
        assert_eq!(a[k], b[k], "{k}");
    }
    assert_eq!((b["message_bytes"].clone(), b["busbw_gbs"].clone()), (Value::Null, Value::Null));
    assert_eq!(bare["collectives"]["groups"][0]["matched_by"], "order");
    assert_eq!(bare["stragglers"][0]["rank"], 2);
    let kinds: Vec<&str> =
        bare["warnings"].as_array().unwrap().iter().map(|w| w["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"collective_sizes_unknown"), "{kinds:?}");
    // The all-to-all-v kernels are NCCL SendRecv kernels: without arguments they are
    // point-to-point to rooftop, with no recorded peer, and left out with a warning.
    assert!(kinds.contains(&"point_to_point_without_peer"), "{kinds:?}");
}

/// The float literals of a JSON text, each as printed.
fn float_literals(text: &str) -> std::collections::HashMap<String, usize> {
    let mut out = std::collections::HashMap::new();
    let number = |c: char| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+');
    // (A number inside a string counts too; it is in both texts alike.)
    for tok in text.split(|c: char| !number(c)) {
        if tok.contains(['.', 'e', 'E']) && tok.parse::<f64>().is_ok() {
            *out.entry(tok.to_string()).or_default() += 1;
        }
    }
    out
}

/// Each rank's report in the multi-rank JSON prints its floats as the single-trace JSON
/// of that rank does: they are the same structs' values (the multi-rank document used to
/// be printed, read back with serde_json's fast float parser and printed again, which
/// moved some floats by one unit in the last place: 9522.083999999999 became 9522.084).
#[test]
fn each_rank_report_prints_the_floats_its_single_trace_report_prints() {
    let dir = fixture("ranks");
    let run = |arg: &Path| {
        let out = rooftop().arg("trace").arg(arg).args(["--format", "json"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let multi = float_literals(&run(&dir));
    let single = float_literals(&run(&dir.join("rank0.json")));
    assert!(single.len() > 20, "{} distinct floats", single.len());
    for (lit, n) in &single {
        let m = multi.get(lit).copied().unwrap_or(0);
        assert!(m >= *n, "{lit}: {n} in rank0's report, {m} in the multi-rank report");
    }
}

/// A `--what-if` or `--cp-window` name that matches nothing in any rank is the same
/// mistake as in one trace, and the same error: exit 2 with the closest names (the
/// ranks' `cpu_op`s are `aten::mm`, `nccl:all_reduce`, ...). A name one rank has is
/// fine: the other ranks' reports say what they matched.
#[test]
fn what_if_and_cp_window_typos_fail_on_a_directory_too() {
    let ranks = fixture("ranks");
    rooftop()
        .arg("trace")
        .arg(&ranks)
        .args(["--section", "critical-path", "--what-if", "aten::mn=0.5"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("--what-if 'aten::mn=0.5' matches no op")
                .and(predicate::str::contains("closest op names: aten::mm")),
        );
    rooftop()
        .arg("trace")
        .arg(&ranks)
        .args(["--cp-window", "no such step"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("--cp-window").and(predicate::str::contains("no such step")),
        );
    rooftop()
        .arg("trace")
        .arg(&ranks)
        .args(["--section", "critical-path", "--what-if", "aten::mm=0.5"])
        .assert()
        .success();

    // `aten::addmm` is in the BERT trace only, `ProfilerStep#` likewise.
    let (_dir_guard, dir) = tempdir("what-if");
    std::fs::copy(fixture("hta_tiny_plain.json"), dir.join("worker0.json")).unwrap();
    std::fs::copy(
        fixture("tracelens_h100/gaunernst_bert-small-uncased__1016001.json.gz"),
        dir.join("worker1.json.gz"),
    )
    .unwrap();
    rooftop()
        .arg("trace")
        .arg(&dir)
        .args(["--section", "critical-path", "--what-if", "aten::addmm=0.5"])
        .assert()
        .success();
    rooftop().arg("trace").arg(&dir).args(["--cp-window", "ProfilerStep#"]).assert().success();
}

/// The all-to-all-v row of the Collectives table says why it has no one size, and gives
/// the bytes instead of a bare `?`. The planted schedule (bench/ranks/gen.py): per
/// instance rank 1 sends 3 × 1,024 bf16 to each of 4 ranks (24,576 B), the three others
/// 1 × 1,024 (8,192 B each): 49,152 B per instance (TraceLens's `tracelens_all2allv.csv`:
/// 0.046875 MB = 49,152 B), 98,304 B = 98.3 kB in the 2 instances.
#[test]
fn all_to_allv_size_is_explained_not_a_question_mark() {
    let out = rooftop().arg("trace").arg(fixture("ranks")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let row = text.lines().find(|l| l.contains("all_to_allv") && l.contains("default_pg")).unwrap();
    assert!(row.contains("— bf16") && !row.contains('?'), "{row}");
    let notes = text.replace("\n  ", " ");
    assert!(
        notes.contains(
            "— all_to_allv size: each rank sends its own split sizes, so there is no one message \
             size and no NCCL-tests bus bandwidth (default_pg sent 98.3 kB in 2 all-to-all \
             instances; All-to-all traffic below)."
        ),
        "{text}"
    );
    // The same bytes in the JSON, where the size stays `null` (no one `S`).
    let c = cross(&fixture("ranks"), &[]);
    assert_eq!(c["all_to_all"][0]["total_bytes"].as_u64(), Some(2 * (24_576 + 3 * 8_192)));
    let v = c["collectives"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "all_to_allv")
        .cloned()
        .unwrap();
    assert!(v["message_bytes"].is_null(), "{v}");
    // The HTML report says the same.
    let out = rooftop().arg("trace").arg(fixture("ranks")).args(["--format", "html"]).output();
    let html = String::from_utf8(out.unwrap().stdout).unwrap();
    assert!(html.contains("default_pg sent 98.3 kB in 2 all-to-all instances"), "html");
}

/// Ranks that cannot be read give one line: the first rank's sentence, then the others
/// by file (a limit of 3 events fails all four ranks at the same place, before the
/// fourth event).
#[test]
fn many_unreadable_ranks_are_one_short_line() {
    let out = rooftop()
        .arg("trace")
        .arg(fixture("ranks"))
        .env("ROOFTOP_LIMIT_EVENTS", "3")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    let line = err.lines().find(|l| l.starts_with("rooftop: error:")).unwrap();
    assert_eq!(line.matches("over rooftop's limit of 3 trace events").count(), 1, "{line}");
    assert!(line.contains("rank0.json: at byte"), "{line}");
    assert!(
        line.ends_with(
            "; and 3 more ranks failed the same way (rank1.json, rank2.json, rank3.json)"
        ),
        "{line}"
    );
}

/// The same, in a folder whose name holds `: ` (a run named after its time): the
/// other ranks are still named by their files, and still "the same way".
#[test]
fn unreadable_ranks_are_named_whatever_their_folder_is_called() {
    let (_guard, base) = tempdir("colon");
    let dir = base.join("run 12: 30");
    std::fs::create_dir(&dir).unwrap();
    for r in 0..3 {
        std::fs::write(dir.join(format!("rank{r}.json")), "{\"traceEvents\": [\n").unwrap();
    }
    let out = rooftop().arg("trace").arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    let line = err.lines().find(|l| l.starts_with("rooftop: error:")).unwrap();
    assert!(line.contains("run 12: 30/rank0.json: invalid trace JSON at byte"), "{line}");
    assert!(
        line.ends_with("; and 2 more ranks failed the same way (rank1.json, rank2.json)"),
        "{line}"
    );
}

/// A directory of rank tables: the note on the missing per-rank reports fits the
/// 100-column terminal, says what --format json and html give there (the cross-rank
/// report, no per-rank one: `ranks[]` has no `report`), and a `--section` that cannot
/// apply is named, not silently ignored.
#[test]
fn rank_tables_say_what_they_hold_in_100_columns() {
    let (_tables_guard, tables) = tempdir("pq-note");
    rooftop()
        .arg("trace")
        .arg(fixture("ranks"))
        .args(["--format", "parquet", "-o"])
        .arg(&tables)
        .assert()
        .success();
    let out = rooftop().arg("trace").arg(&tables).args(["--section", "gemm"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    for l in text.lines() {
        assert!(l.chars().count() <= 100, "{} columns: {l}", l.chars().count());
    }
    let joined = text.replace("\n  ", " ");
    assert!(
        joined.contains(
            "Per-rank reports are not shown: rank tables hold no per-rank report, only what the \
             cross-rank report above needs (--format json or html give that same cross-rank \
             report). For one rank's report, run `rooftop trace` on its trace."
        ),
        "{text}"
    );
    assert!(
        joined.contains(
            "--section gemm is not applied: it selects part of a per-rank report, and none is \
             shown here."
        ),
        "{text}"
    );
    // What the note says of --format json: the ranks, no per-rank report.
    let out = rooftop().arg("trace").arg(&tables).args(["--format", "json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ranks = v["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 4);
    assert!(ranks.iter().all(|r| r.get("report").is_none()), "{ranks:?}");
    // Without --section, no such note.
    let out = rooftop().arg("trace").arg(&tables).output().unwrap();
    assert!(!String::from_utf8(out.stdout).unwrap().contains("--section"));
}

/// `--inter-link` is the user's choice: the link note says so and gives that link's
/// own source (data/interconnects.toml), not the catalog's DGX H100 InfiniBand note.
#[test]
fn a_link_chosen_by_flag_is_named_as_such() {
    let out = rooftop()
        .arg("trace")
        .arg(fixture("ranks"))
        .args(["--inter-link", "nvlink4-h100", "--gpus-per-node", "2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap().replace("\n  ", " ");
    let note = text.lines().find(|l| l.starts_with("of link:")).unwrap();
    assert!(
        note.contains(
            "inter-node NVLink 4 (H100/H200 SXM, 18 links) 450 GB/s (chosen by --inter-link; \
             NVIDIA H100 Tensor Core GPU datasheet and H200 product page: NVLink 900 GB/s)"
        ),
        "{note}"
    );
    assert!(note.contains("intra-node NVLink 4 (H100/H200 SXM, 18 links) 450 GB/s (catalog)"));
    assert!(!note.contains("DGX H100") && !note.contains("InfiniBand"), "{note}");
    let c = cross(&fixture("ranks"), &["--inter-link", "nvlink4-h100", "--gpus-per-node", "2"]);
    let links = &c["collectives"]["links"];
    assert_eq!(
        (links["intra_by_flag"].as_bool(), links["inter_by_flag"].as_bool()),
        (Some(false), Some(true))
    );
    assert!(links["note"].is_null(), "{links}");
    // Without the flag, the catalog's own note on its reference system stays.
    let c = cross(&fixture("ranks"), &[]);
    assert!(c["collectives"]["links"]["note"].as_str().unwrap().starts_with("DGX H100"));
}

/// `--gpus-per-node 3` over the 4 synthetic ranks: accepted (exit 0), with a note on
/// stderr and among the cross-rank warnings that the last node holds 1 rank (4 = 3 + 1,
/// rank 3 alone on node 1). Nodes of 2 or 4 hold whole nodes, and 8 one node: no note.
#[test]
fn an_uneven_last_node_is_a_note_not_an_error() {
    let ranks = fixture("ranks");
    let note = "4 ranks over nodes of 3 GPUs: the last node has 1 rank (rank 3, node 1; rank r \
                is on node r / 3)";
    for format in ["table", "json"] {
        let out = rooftop()
            .arg("trace")
            .arg(&ranks)
            .args(["--gpus-per-node", "3", "--format", format])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(&format!("rooftop: note: {note}.")), "{format}: {err}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        if format == "table" {
            assert!(stdout.contains("uneven_last_node"), "{stdout}");
        } else {
            let v: Value = serde_json::from_str(&stdout).unwrap();
            let w = v["cross_rank"]["warnings"].as_array().unwrap();
            let n = w.iter().find(|w| w["kind"] == "uneven_last_node").unwrap();
            assert_eq!((n["count"].as_u64(), n["example"].as_str()), (Some(1), Some(note)));
        }
    }
    for g in ["2", "4", "8"] {
        let out = rooftop()
            .arg("trace")
            .arg(&ranks)
            .args(["--gpus-per-node", g, "--format", "json"])
            .output()
            .unwrap();
        assert!(out.status.success());
        assert!(!String::from_utf8_lossy(&out.stderr).contains("rooftop: note:"), "{g}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let w = v["cross_rank"]["warnings"].as_array().unwrap();
        assert!(w.iter().all(|w| w["kind"] != "uneven_last_node"), "{g}: {w:?}");
    }
}

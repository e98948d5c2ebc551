//! End-to-end tests of `rooftop trace`: every fixture runs in every format, the device
//! choice, per-rank directories, and bad input (exit code 2 with the position).

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
        .join("../../tests/fixtures/kineto")
        .join(rel)
        .display()
        .to_string()
}

/// A fresh, empty scratch directory and its path. The directory is removed when the
/// guard drops, at the end of the test whether it passed or failed: bind the guard to
/// a name (`_x_guard`), not `_`, which would drop it at once.
fn tempdir(tag: &str) -> (tempfile::TempDir, PathBuf) {
    let d =
        tempfile::Builder::new().prefix(&format!("rooftop-cli-trace-{tag}-")).tempdir().unwrap();
    let p = d.path().to_path_buf();
    (d, p)
}

const FIXTURES: &[&str] = &[
    "hta_a100_alexnet.json.gz",
    "hta_a100_cupti_flop_counters.json.gz",
    "hta_mi250_minitoy_train.json.gz",
    "hta_tiny_plain.json",
    "tracelens_mi300_inductor_triton.json.gz",
    "tracelens_h100/Falconsai_nsfw_image_detection__1016002.json.gz",
    "tracelens_h100/gaunernst_bert-small-uncased__1016001.json.gz",
    "tracelens_mi300/Falconsai_nsfw_image_detection__1016002.json.gz",
    "tracelens_mi300/gaunernst_bert-small-uncased__1016001.json.gz",
    "handmade/nesting_graph.json",
    "handmade/legacy_2021.json",
];

fn json(args: &[&str]) -> Value {
    let out = rooftop().arg("trace").args(args).args(["--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

#[test]
fn every_fixture_runs_in_every_format() {
    for f in FIXTURES {
        let path = fixture(f);
        let v = json(&[&path]);
        for key in [
            "device",
            "window",
            "timeline",
            "ops_summary",
            "categories",
            "kernels",
            "findings",
            "warnings",
        ] {
            assert!(v.get(key).is_some(), "{f}: no `{key}` in the JSON");
        }
        for fmt in ["table", "md"] {
            rooftop()
                .args(["trace", &path, "--format", fmt, "--section", "all"])
                .assert()
                .success()
                .stdout(predicate::str::is_empty().not());
        }
    }
}

#[test]
fn device_comes_from_the_trace_or_the_flag() {
    let h100 = fixture("tracelens_h100/gaunernst_bert-small-uncased__1016001.json.gz");
    let v = json(&[&h100]);
    assert_eq!(v["device"]["catalog_id"], "h100-sxm");
    assert_eq!(v["device"]["trace_name"], "NVIDIA H100 80GB HBM3");
    let v = json(&[&h100, "--device", "mi300x"]);
    assert_eq!(v["device"]["catalog_id"], "mi300x");
    // The A100 40 GB board name (`NVIDIA A100-PG509-200`) is the 40 GB part, not the 80.
    let v = json(&[&fixture("hta_a100_alexnet.json.gz")]);
    assert_eq!(v["device"]["catalog_id"], "a100-sxm-40gb");
    rooftop()
        .args(["trace", &h100, "--device", "no-such-gpu"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown device"));
}

#[test]
fn table_summary_and_sections() {
    let h100 = fixture("tracelens_h100/Falconsai_nsfw_image_detection__1016002.json.gz");
    rooftop().args(["trace", &h100]).assert().success().stdout(
        predicate::str::contains("GPU timeline").and(predicate::str::contains("aten::addmm")),
    );
    rooftop()
        .args(["trace", &h100, "--section", "gemm", "--top", "3"])
        .assert()
        .success()
        .stdout(predicate::str::contains("GEMM"));
    rooftop()
        .args(["trace", &h100, "--section", "nonsense"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown section"));
}

#[test]
fn csv_writes_one_file_per_table() {
    let h100 = fixture("tracelens_h100/Falconsai_nsfw_image_detection__1016002.json.gz");
    let (_dir_guard, dir) = tempdir("csv");
    let out = dir.join("report");
    rooftop()
        .args(["trace", &h100, "--format", "csv", "-o", out.to_str().unwrap()])
        .assert()
        .success();
    for f in
        ["gpu_timeline.csv", "ops_summary.csv", "GEMM.csv", "kernel_summary.csv", "findings.csv"]
    {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    // One table on standard output.
    rooftop()
        .args(["trace", &h100, "--format", "csv", "--section", "gemm"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("name,"));
    // Several tables need a directory.
    rooftop()
        .args(["trace", &h100, "--format", "csv"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("-o DIR"));
}

/// `-o NAME.csv` names one file: one table is written there (the same bytes as on
/// standard output); several are refused with a pointer to a directory and --section,
/// and nothing is written. A path without `.csv` stays a directory, even for one table.
#[test]
fn csv_to_a_csv_path_writes_that_one_file() {
    let h100 = fixture("tracelens_h100/Falconsai_nsfw_image_detection__1016002.json.gz");
    let (_dir_guard, dir) = tempdir("csv-file");
    let file = dir.join("gemm.csv");
    let f = file.to_str().unwrap();
    rooftop()
        .args(["trace", &h100, "--format", "csv", "--section", "gemm", "-o", f])
        .assert()
        .success();
    assert!(file.is_file(), "{} is not a file", file.display());
    let stdout = rooftop()
        .args(["trace", &h100, "--format", "csv", "--section", "gemm"])
        .output()
        .unwrap()
        .stdout;
    assert_eq!(std::fs::read(&file).unwrap(), stdout);

    let several = dir.join("all.csv");
    rooftop()
        .args(["trace", &h100, "--format", "csv", "-o", several.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("-o DIR")
                .and(predicate::str::contains("--section"))
                .and(predicate::str::contains("a directory")),
        );
    assert!(!several.exists(), "nothing is written");

    let folder = dir.join("gemm-folder");
    rooftop()
        .args(["trace", &h100, "--format", "csv", "--section", "gemm", "-o"])
        .arg(&folder)
        .assert()
        .success();
    assert!(folder.join("GEMM.csv").is_file());
}

#[test]
fn a_directory_gives_one_report_per_rank_and_a_cross_rank_table() {
    let (_dir_guard, dir) = tempdir("ranks");
    std::fs::copy(fixture("hta_tiny_plain.json"), dir.join("worker0.json")).unwrap();
    std::fs::copy(
        fixture("tracelens_h100/gaunernst_bert-small-uncased__1016001.json.gz"),
        dir.join("worker1.pt.trace.json.gz"),
    )
    .unwrap();
    let d = dir.to_str().unwrap();
    rooftop().args(["trace", d]).assert().success().stdout(
        predicate::str::contains("== rank 0 (worker0.json) ==")
            .and(predicate::str::contains("Across ranks")),
    );
    let out = rooftop().args(["trace", d, "--format", "json"]).output().unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ranks"].as_array().unwrap().len(), 2);
    assert_eq!(v["ranks"][0]["rank"], 0);
    assert!(v["cross_rank"]["ranks"].is_array(), "{}", v["cross_rank"]);
    let csv = dir.join("csv-out");
    rooftop().args(["trace", d, "--format", "csv", "-o", csv.to_str().unwrap()]).assert().success();
    assert!(csv.join("cross_rank.csv").is_file());
    assert!(csv.join("worker0").join("gpu_timeline.csv").is_file());
    // A directory of traces writes several tables: a `.csv` path cannot hold them.
    let one = dir.join("all.csv");
    rooftop()
        .args(["trace", d, "--format", "csv", "-o", one.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("-o DIR"));
    assert!(!one.exists());

    // A bad rank: the others are still reported, the exit code is 2. In
    // `{"traceEvents": [ {"ph": }` the `}` where a value belongs is byte 25.
    std::fs::write(dir.join("worker2.json"), b"{\"traceEvents\": [ {\"ph\": }").unwrap();
    rooftop()
        .args(["trace", d])
        .assert()
        .code(2)
        .stdout(predicate::str::contains("Across ranks"))
        .stderr(predicate::str::contains(
            "worker2.json: invalid trace JSON at byte 25 (line 1, column 26)",
        ));

    let (_empty_guard, empty) = tempdir("empty");
    rooftop()
        .args(["trace", empty.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no traces in this directory"));
}

#[test]
fn bad_input_exits_2_with_the_position() {
    let (_dir_guard, dir) = tempdir("bad");
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p.display().to_string()
    };
    // Invalid JSON: line 2 starts at byte 18 (`{"traceEvents": [` is 17 bytes, then
    // `\n`); in ` {"ph": "X" "cat"` the `"` where a comma belongs is index 12: byte 30,
    // line 2, column 13.
    let p = write("invalid.json", b"{\"traceEvents\": [\n {\"ph\": \"X\" \"cat\": 1}]}");
    rooftop().args(["trace", &p]).assert().code(2).stderr(
        predicate::str::contains("invalid.json: invalid trace JSON at byte 30 (line 2, column 13)")
            .and(predicate::str::contains("expected `,` or `}`")),
    );
    let p = write("no_events.json", b"{\"schemaVersion\": 1}");
    rooftop()
        .args(["trace", &p])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no `traceEvents`"));
    let gz = std::fs::read(fixture("hta_mi250_minitoy_train.json.gz")).unwrap();
    let p = write("cut.json.gz", &gz[..gz.len() / 2]);
    rooftop()
        .args(["trace", &p])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cut.json.gz: the gzip stream is truncated or corrupt"));
    let p = write("empty.json", b"");
    rooftop()
        .args(["trace", &p])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("byte 0 (line 1, column 1)"));
    rooftop()
        .args(["trace", "/nonexistent/trace.json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot read /nonexistent/trace.json"));
    // Tolerated problems are warnings in the report, not errors.
    let p = write(
        "warn.json",
        br#"{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": -1}]}"#,
    );
    let v = json(&[&p]);
    let kinds: Vec<&str> =
        v["warnings"].as_array().unwrap().iter().filter_map(|w| w["kind"].as_str()).collect();
    assert!(
        kinds.contains(&"negative_duration") && kinds.contains(&"missing_device_properties"),
        "{kinds:?}"
    );
}

/// `ranks/rank0.json` times twelve bf16 4096³ `aten::mm` calls at a mean of 72.2 µs
/// (the fixture's kernels: eight of 100 µs and 21.222, 4.747, 38.193 and 2.457 µs), but
/// 2·4096³ FLOPs at the H100 SXM's dense bf16 peak (989 TFLOP/s, NVIDIA's datasheet)
/// take 139 µs: 192% of the roofline, which no kernel can reach. The row's top finding
/// says so, and the trace findings must too, in the JSON and in the terminal summary:
/// one finding naming the op.
#[test]
fn an_op_faster_than_the_hardware_is_a_trace_finding() {
    let path = fixture("ranks/rank0.json");
    let mean_us = (8.0 * 100.0 + 21.222 + 4.747 + 38.193 + 2.457) / 12.0;
    let floor_us = 2.0 * 4096f64.powi(3) / 989e12 * 1e6;
    let want_pct = floor_us / mean_us * 100.0;
    assert!((want_pct - 192.0).abs() < 1.0, "{want_pct}");

    let v = json(&[&path]);
    let row = v["categories"]["GEMM"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "aten::mm")
        .unwrap();
    let got = row["roofline_attainment_pct"].as_f64().unwrap();
    assert!((got - want_pct).abs() < 0.01 * want_pct, "{got} vs {want_pct}");
    assert_eq!(row["top_finding"]["id"], "roofline.faster_than_floor");
    let findings = v["findings"].as_array().unwrap();
    let faster: Vec<&Value> =
        findings.iter().filter(|f| f["id"] == "trace.faster_than_floor").collect();
    assert_eq!(faster.len(), 1, "{findings:?}");
    assert_eq!(faster[0]["severity"], "critical");
    let evidence = faster[0]["evidence"].as_str().unwrap();
    assert!(evidence.contains("aten::mm") && evidence.contains("192%"), "{evidence}");

    // The terminal summary lists it (critical findings come first).
    let out = rooftop().args(["trace", &path]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let findings_block = &text[text.find("Findings").expect("a findings table")..];
    assert!(findings_block.contains("Faster than the hardware allows"), "{text}");
}

/// `--top` sets the rows of the findings table in the summary as in `--section
/// findings` (the help says so): the BERT trace has seven findings (its JSON lists every
/// finding, whatever `--top` says).
#[test]
fn the_summary_lists_as_many_findings_as_top_says() {
    let bert = fixture("tracelens_h100/gaunernst_bert-small-uncased__1016001.json.gz");
    let n = json(&[&bert])["findings"].as_array().unwrap().len();
    assert_eq!(n, 7);
    let title = |args: &[&str]| {
        let out = rooftop().args(["trace", &bert]).args(args).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines().find(|l| l.starts_with("Findings")).unwrap().to_string()
    };
    assert!(title(&["--top", "20"]).contains("(top 7 of 7)"), "{}", title(&["--top", "20"]));
    assert!(title(&[]).contains("(top 7 of 7)"), "default --top 10: {}", title(&[]));
    assert!(title(&["--top", "6"]).contains("(top 6 of 7)"));
    assert!(title(&["--top", "6", "--section", "findings"]).contains("(top 6 of 7)"));
}

/// Each input problem is named for what it is, in one sentence naming the file: a `dur`
/// of 1e18 µs (1e21 ns, past the ±9.2e18 ns an `i64` holds) is a number out of range,
/// not "not a number"; an empty `.xplane.pb` is empty (not "invalid JSON"); a file
/// holding `null` is JSON of the wrong type (not a broken XSpace protobuf).
#[test]
fn bad_values_and_files_are_named_for_what_they_are() {
    let (_dir_guard, dir) = tempdir("named");
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p.display().to_string()
    };
    let event = |ts: &str, dur: &str| {
        format!(
            r#"{{"traceEvents": [{{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": {ts}, "dur": {dur}, "args": {{"stream": 7, "device": 0}}}}]}}"#
        )
    };
    let example = |p: &str| {
        let v = json(&[p]);
        let w = v["warnings"].as_array().unwrap();
        let bad = w.iter().find(|w| w["kind"] == "bad_timestamp").expect("a bad_timestamp");
        bad["example"].as_str().unwrap().to_string()
    };
    let huge_dur = write("huge_dur.json", event("10", "1e18").as_bytes());
    let e = example(&huge_dur);
    assert!(e.starts_with("`k` (kernel) has a `dur` that is a number but out of range"), "{e}");
    let huge_ts = write("huge_ts.json", event("1e300", "5").as_bytes());
    let e = example(&huge_ts);
    assert!(e.starts_with("`k` (kernel) has a `ts` that is a number but out of range"), "{e}");
    let null_ts = write("null_ts.json", event("null", "5").as_bytes());
    let e = example(&null_ts);
    assert!(e.starts_with("`k` (kernel) has a `ts` that is not a number: skipped"), "{e}");

    let empty = write("host.xplane.pb", b"");
    let out = rooftop().args(["trace", &empty]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("host.xplane.pb: the file is empty"), "{err}");
    assert!(!err.contains("JSON"), "{err}");

    let null = write("null.json", b"null\n");
    let out = rooftop().args(["trace", &null]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "null.json: invalid trace JSON at byte 0 (line 1, column 1): expected `{` or `[` \
             (a Kineto trace is a JSON object or an array of events), found JSON `null`"
        ),
        "{err}"
    );
    assert!(!err.contains("XSpace") && !err.contains("wire type"), "{err}");

    // Blank lines only, a JSON string and a trace compressed otherwise than with gzip:
    // named as such, not as broken XSpace protobufs (a line break is the first byte of
    // one, a quote the tag of its hostnames).
    let blank = write("blank.json", b"\n\n\n");
    let string = write("string.json", b"\"hello\"");
    let bz2 = write("t.json.bz2", b"BZh91AY&SY\x00\x01");
    for (p, want) in [
        (&blank, "blank.json: invalid trace JSON at byte 3 (line 4, column 1)"),
        (&string, "string.json: invalid trace JSON at byte 0 (line 1, column 1): expected `{`"),
        (&bz2, "t.json.bz2: this file is bzip2-compressed; rooftop reads traces plain or gzip"),
    ] {
        let out = rooftop().args(["trace", p]).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want) && !err.contains("XSpace"), "{err}");
    }
}

/// One row is a row: the BERT trace has one SDPA_fwd row (TraceLens's `SDPA_fwd.csv`
/// for it has one data line), so its table title and its below-the-roofline finding are
/// singular. A `--what-if` factor above 1000 is refused (1e9 printed a path of 860 ks and
/// a change of -40355318719%).
#[test]
fn singular_counts_and_a_bounded_what_if() {
    let bert = fixture("tracelens_h100/gaunernst_bert-small-uncased__1016001.json.gz");
    let csv = fixture(
        "tracelens_h100/gaunernst_bert-small-uncased__1016001_perf_report_csvs/SDPA_fwd.csv",
    );
    let lines = std::fs::read_to_string(csv).unwrap().lines().count();
    assert_eq!(lines, 2, "a header and one row");
    let out = rooftop().args(["trace", &bert, "--section", "all"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().any(|l| l == "SDPA_fwd (top 1 of 1 row)"), "{text}");
    assert!(!text.contains("1 rows") && !text.contains("1 calls)"), "{text}");
    let v = json(&[&bert]);
    let sdpa = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["title"] == "SDPA_fwd ops below the roofline")
        .unwrap();
    let evidence = sdpa["evidence"].as_str().unwrap();
    assert!(evidence.starts_with("1 SDPA_fwd row under 70.0% of its roofline takes"), "{evidence}");

    rooftop()
        .args(["trace", &bert, "--section", "critical-path", "--what-if", "aten::addmm=1e9"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("the factor 1e9 is over 1000"));
    rooftop()
        .args(["trace", &bert, "--section", "critical-path", "--what-if", "aten::addmm=1000"])
        .assert()
        .success();
}

/// One op, one category, in every table of a report: the ops summary names each op with
/// the category its roofline-table rows carry. In the BERT trace `aten::index_select`
/// (3 calls, TraceLens: `other`) is DataMovement in the ops summary, in the by-category
/// summary and in its `DataMovement` table (it gathers rows: no arithmetic).
#[test]
fn an_op_has_one_category_in_every_table() {
    for f in FIXTURES.iter().chain(&["h200/eager.trace.json.gz"]) {
        let v = json(&[&fixture(f)]);
        let summary: std::collections::HashMap<&str, &str> = v["ops_summary"]["ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| (o["name"].as_str().unwrap(), o["category"].as_str().unwrap()))
            .collect();
        for (table, rows) in v["categories"].as_object().unwrap() {
            for r in rows.as_array().unwrap() {
                let (name, cat) = (r["name"].as_str().unwrap(), r["category"].as_str().unwrap());
                // Ops that launch no kernel themselves (their children do) are not in
                // the ops summary.
                if let Some(listed) = summary.get(name) {
                    assert!(
                        listed.split('/').any(|c| c == cat),
                        "{f}: {name} is {listed} in the ops summary, {cat} in {table}"
                    );
                }
            }
        }
    }
    let v = json(&[&fixture("tracelens_h100/gaunernst_bert-small-uncased__1016001.json.gz")]);
    let op = v["ops_summary"]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "aten::index_select")
        .cloned()
        .unwrap();
    assert_eq!((op["category"].as_str(), op["count"].as_u64()), (Some("DataMovement"), Some(3)));
    let rows = v["categories"]["DataMovement"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert!(rows
        .iter()
        .all(|r| r["name"] == "aten::index_select" && r["category"] == "DataMovement"));
    let by = v["ops_summary"]["by_category"].as_array().unwrap();
    let dm = by.iter().find(|c| c["category"] == "DataMovement").unwrap();
    assert_eq!(dm["count"].as_u64(), Some(3));
}

/// The report's JSON as `rooftop trace --format json` writes it (the critical path's
/// events by hand) is byte for byte serde_json's own pretty printing of the same report,
/// on real traces of every kind: PyTorch on MI300, MI250, A100 and H200, Inductor's
/// Triton kernels, a hand-made nested trace, and a JAX profile.
#[test]
fn report_json_is_what_serde_json_writes_on_real_traces() {
    let files = [
        fixture("tracelens_mi300/Falconsai_nsfw_image_detection__1016002.json.gz"),
        fixture("tracelens_mi300_inductor_triton.json.gz"),
        fixture("hta_a100_alexnet.json.gz"),
        fixture("hta_mi250_minitoy_train.json.gz"),
        fixture("h200/eager.trace.json.gz"),
        fixture("handmade/nesting_graph.json"),
        fixture("../jax/amd_gfx950_te_fused_attn.xplane.pb"),
    ];
    let mut events = 0;
    for f in &files {
        let model = rooftop_ingest::source::read(std::path::Path::new(f)).unwrap();
        let report = rooftop_core::trace::report::TraceReport::of(&model);
        events += report.critical_path.as_ref().map_or(0, |cp| cp.events.len());
        let want = serde_json::to_string_pretty(&report).unwrap() + "\n";
        assert!(rooftop_report::trace::json(&report) == want, "{f}: the JSON differs");
    }
    // The hand-written part was exercised.
    assert!(events > 1000, "{events} critical-path events");
}

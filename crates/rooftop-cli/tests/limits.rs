//! Hostile inputs end in one clear error (exit 2, the file, what was exceeded and the
//! variable that raises it) or a sane report: one small instance of each class, with
//! the limit lowered through its `ROOFTOP_LIMIT_*` variable so that the inputs stay
//! small (docs/limits.md). Each input is generated here; the oracle is what it holds
//! (how many events, how long a name, how far it inflates), counted in the test.

#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use serde_json::{json, Value};
use std::io::Write as _;
use std::path::PathBuf;

/// A fresh, empty scratch directory and its path. The directory is removed when the
/// guard drops, at the end of the test whether it passed or failed: bind the guard to
/// a name (`_x_guard`), not `_`, which would drop it at once.
fn tempdir(tag: &str) -> (tempfile::TempDir, PathBuf) {
    let d =
        tempfile::Builder::new().prefix(&format!("rooftop-cli-limits-{tag}-")).tempdir().unwrap();
    let p = d.path().to_path_buf();
    (d, p)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// Runs rooftop with `env` set, expecting exit 2; returns stderr.
fn fails(env: &[(&str, &str)], args: &[&str]) -> String {
    let mut cmd = Command::cargo_bin("rooftop").unwrap();
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    err
}

/// `n` kernels one after another on stream 7, each 5 µs.
fn kernels(n: usize) -> Vec<u8> {
    let ev: Vec<Value> = (0..n)
        .map(|i| {
            json!({"ph": "X", "cat": "kernel", "name": format!("k{i}"), "pid": 0, "tid": 7,
                   "ts": 1000 + 10 * i, "dur": 5, "args": {"device": 0, "stream": 7}})
        })
        .collect();
    serde_json::to_vec(&json!({ "traceEvents": ev })).unwrap()
}

#[test]
fn more_events_than_the_limit_is_refused_plain_and_gzip() {
    let (_d_guard, d) = tempdir("events");
    let plain = d.join("many.json");
    let gz = d.join("many.json.gz");
    std::fs::write(&plain, kernels(2000)).unwrap();
    std::fs::write(&gz, gzip(&kernels(2000))).unwrap();
    for p in [&plain, &gz] {
        let e = fails(&[("ROOFTOP_LIMIT_EVENTS", "1000")], &["trace", p.to_str().unwrap()]);
        assert!(e.contains(p.to_str().unwrap()), "{e}");
        assert!(e.contains("more than 1000 events"), "{e}");
        assert!(e.contains("ROOFTOP_LIMIT_EVENTS=N"), "{e}");
    }
    // At the limit: read.
    let ok = Command::cargo_bin("rooftop")
        .unwrap()
        .env("ROOFTOP_LIMIT_EVENTS", "2000")
        .args(["trace", gz.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
}

#[test]
fn one_huge_event_name_is_refused_plain_and_gzip() {
    let (_d_guard, d) = tempdir("name");
    let ev = json!({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "x".repeat(100_000),
        "pid": 0, "tid": 7, "ts": 1, "dur": 5, "args": {"device": 0, "stream": 7}}]});
    let text = serde_json::to_vec(&ev).unwrap();
    let plain = d.join("name.json");
    let gz = d.join("name.json.gz");
    std::fs::write(&plain, &text).unwrap();
    std::fs::write(&gz, gzip(&text)).unwrap();
    for p in [&plain, &gz] {
        let e = fails(&[("ROOFTOP_LIMIT_VALUE_BYTES", "4096")], &["trace", p.to_str().unwrap()]);
        assert!(e.contains(p.to_str().unwrap()), "{e}");
        // The event is the name plus ~110 bytes of the rest.
        assert!(e.contains("an event of 100"), "{e}");
        assert!(e.contains("ROOFTOP_LIMIT_VALUE_BYTES=N"), "{e}");
    }
}

#[test]
fn a_gzip_bomb_stops_at_the_inflate_limit() {
    let (_d_guard, d) = tempdir("bomb");
    // 8 MiB of spaces before a valid trace: deflate packs them ~1000:1.
    let mut text = vec![b' '; 8 << 20];
    text.extend_from_slice(&kernels(1));
    let gz = gzip(&text);
    assert!(text.len() / gz.len() > 500, "ratio {}", text.len() / gz.len());
    let p = d.join("bomb.json.gz");
    std::fs::write(&p, gz).unwrap();
    let e = fails(&[("ROOFTOP_LIMIT_INFLATE_FLOOR", "100000")], &["trace", p.to_str().unwrap()]);
    assert!(e.contains("inflates too far"), "{e}");
    assert!(e.contains("ROOFTOP_LIMIT_INFLATE_RATIO=N"), "{e}");
    // Under the default floor (256 MiB) the same file is a trace.
    let ok = Command::cargo_bin("rooftop").unwrap().args(["trace", p.to_str().unwrap()]).output();
    assert!(ok.unwrap().status.success());
}

#[test]
fn a_limit_variable_that_is_not_a_number_is_refused() {
    let e = fails(&[("ROOFTOP_LIMIT_EVENTS", "lots")], &["devices"]);
    assert!(e.contains("ROOFTOP_LIMIT_EVENTS=lots: expected a positive integer"), "{e}");
}

#[test]
fn an_empty_device_file_is_refused() {
    let (_d_guard, d) = tempdir("devfile");
    let p = d.join("none.toml");
    std::fs::write(&p, "# no devices yet\n").unwrap();
    let e = fails(&[], &["devices", "--device-file", p.to_str().unwrap()]);
    assert!(e.contains("none.toml: no devices"), "{e}");
}

#[test]
fn two_identical_nccl_kernels_give_no_negative_idle() {
    // One NCCL kernel written twice (1000-1383 µs), then another kernel at 2000 µs. By
    // hand: the stream is busy 383 + 10 µs and idle 2000 - 1383 = 617 µs; the copy would
    // have given a gap of 1000 - 1383 = -383 µs.
    let nccl = json!({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
        "pid": 0, "tid": 7, "ts": 1000, "dur": 383,
        "args": {"device": 0, "stream": 7, "correlation": 5}});
    let trace = json!({"traceEvents": [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 990, "dur": 5, "args": {"correlation": 5}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 1990, "dur": 5, "args": {"correlation": 6}},
        nccl, nccl,
        {"ph": "X", "cat": "kernel", "name": "next", "pid": 0, "tid": 7, "ts": 2000, "dur": 10,
         "args": {"device": 0, "stream": 7, "correlation": 6}}]});
    let (_dir_guard, dir) = tempdir("dup");
    let path = dir.join("dup.json");
    std::fs::write(&path, serde_json::to_vec(&trace).unwrap()).unwrap();
    let out = Command::cargo_bin("rooftop")
        .unwrap()
        .args(["trace", path.to_str().unwrap(), "--section", "idle", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let stream = &v["idle"]["streams"][0];
    assert_eq!(stream["events"], 2, "{stream}");
    assert_eq!(stream["idle_us"], 617.0, "{stream}");
    let dev = &v["idle"]["devices"][0];
    assert_eq!(dev["busy_us"], 393.0, "{dev}");
    for c in dev["categories"].as_array().unwrap() {
        assert!(c["idle_us"].as_f64().unwrap() >= 0.0, "{c}");
    }
    let w = v["warnings"].as_array().unwrap();
    assert!(w.iter().any(|w| w["kind"] == "duplicate_gpu_event" && w["count"] == 1), "{w:?}");
}

/// An nsys export whose kernel table is a view that yields rows without end (a recursive
/// CTE): the reader stops at the row limit (here 1,000) with exit 2 naming the file and
/// the variable, instead of reading forever.
#[test]
fn a_database_view_without_end_stops_at_the_row_limit() {
    let (_dir_guard, dir) = tempdir("endless-view");
    let db = dir.join("endless.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
         INSERT INTO StringIds VALUES (1, 'k');
         CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS
           WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n)
           SELECT i * 10 AS start, i * 10 + 5 AS end, 0 AS deviceId, 7 AS streamId,
                  i AS correlationId, 1 AS globalPid, 1 AS demangledName, 1 AS shortName
           FROM n;",
    )
    .unwrap();
    drop(conn);
    let path = db.display().to_string();
    let err = fails(&[("ROOFTOP_LIMIT_DB_ROWS", "1000")], &["counters", &path]);
    assert!(err.contains(&path) && err.contains("ROOFTOP_LIMIT_DB_ROWS"), "{err}");
}

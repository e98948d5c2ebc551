//! Golden tests of the GPU timeline, ops summary (per op and per category), kernel
//! summary and short kernels against TraceLens's own report CSVs, for each of the four
//! TraceLens fixture traces (H100 and MI300X; a ViT image classifier and a small BERT).
//!
//! TraceLens's numbers are the oracle: `gpu_timeline.csv`, `ops_summary.csv`,
//! `ops_summary_by_category.csv`, `kernel_summary.csv`, `short_kernel_histogram.csv` and
//! `short_kernels_summary.csv` with the same rows and counts, and times and percentages
//! within 0.01% (zero timeline rows: within 0.01% of the window). The issue asks for 1%
//! (timeline) and 0.5%; the remaining difference, ~1e-6 relative, is TraceLens's: it
//! subtracts large µs timestamps held as floats (rounding of a few 1e-4 µs each), we
//! subtract integer nanoseconds.
//! The category labels compared are TraceLens's own (`ops::tracelens_category`); the
//! report itself uses ours (GEMM, CONV, SDPA, ...).

#![allow(clippy::unwrap_used)]

use rooftop_core::trace::ops::tracelens_category;
use rooftop_core::trace::summary::{kernel_summary, ops_summary, short_kernels};
use rooftop_core::trace::timeline::timeline;
use rooftop_core::trace::TraceModel;
use rooftop_ingest::kineto::{read_path, ReadOptions};
use std::collections::HashMap;
use std::path::PathBuf;

const REL_TIMELINE: f64 = 1e-4;
const REL_TIME: f64 = 1e-4;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/kineto")
}

fn load(gpu: &str, trace: &str) -> TraceModel {
    let path = fixtures().join(format!("tracelens_{gpu}/{trace}.json.gz"));
    read_path(&path, &ReadOptions::default(), &mut |_, _| {})
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

type Row = HashMap<String, String>;

fn tracelens_rows(gpu: &str, trace: &str, table: &str) -> Vec<Row> {
    let path = fixtures().join(format!("tracelens_{gpu}/{trace}_perf_report_csvs/{table}.csv"));
    let mut rd =
        csv::Reader::from_path(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let headers: Vec<String> = rd.headers().unwrap().iter().map(str::to_string).collect();
    rd.records()
        .map(|r| headers.iter().cloned().zip(r.unwrap().iter().map(str::to_string)).collect())
        .collect()
}

fn num(row: &Row, col: &str) -> f64 {
    let cell = row.get(col).unwrap_or_else(|| panic!("TraceLens CSV has no column `{col}`"));
    cell.parse().unwrap_or_else(|_| panic!("`{col}` = `{cell}` is not a number"))
}

fn close(ours: f64, theirs: f64, rel: f64) -> bool {
    (ours - theirs).abs() <= rel * theirs.abs().max(1e-12)
}

/// TraceLens's category of op `i`: its label from the op name, else from the first GPU
/// event the op launched.
fn tl_category(m: &TraceModel) -> impl Fn(u32) -> &'static str + '_ {
    move |i| {
        let op = &m.ops[i as usize];
        let first = op.launched.first().map(|&e| m.gpu[e as usize].name.as_ref());
        tracelens_category(&op.name, first)
    }
}

fn check_timeline(gpu: &str, trace: &str) {
    let model = load(gpu, trace);
    let (tl, window) = timeline(&model, false);
    let b = &tl.all;
    let total = b.total.time_ms;
    for row in tracelens_rows(gpu, trace, "gpu_timeline") {
        let theirs = num(&row, "time ms");
        let ours = match row["type"].as_str() {
            "computation_time" => b.computation.time_ms,
            "exposed_comm_time" => b.exposed_communication.time_ms,
            "exposed_memcpy_time" => b.exposed_memcpy.time_ms,
            "busy_time" => b.busy.time_ms,
            "idle_time" => b.idle.time_ms,
            "total_time" => b.total.time_ms,
            "total_comm_time" => b.communication.time_ms,
            "total_memcpy_time" => b.memcpy.time_ms,
            other => panic!("unknown timeline row {other}"),
        };
        let ok = if theirs == 0.0 {
            ours.abs() <= REL_TIMELINE * total
        } else {
            close(ours, theirs, REL_TIMELINE)
        };
        assert!(
            ok,
            "{gpu}/{trace} timeline {}: ours {ours} ms, TraceLens {theirs} ms",
            row["type"]
        );
        let p = num(&row, "percent");
        let ours_pct = ours / total * 100.0;
        assert!(
            (ours_pct - p).abs() <= REL_TIMELINE * p.max(1.0),
            "{gpu}/{trace} timeline {} %: ours {ours_pct}, TraceLens {p}",
            row["type"]
        );
    }
    assert!((window.duration_ms - total).abs() < 1e-12);
}

fn check_ops(gpu: &str, trace: &str) {
    let m = load(gpu, trace);
    let s = ops_summary(&m, &tl_category(&m));
    let theirs = tracelens_rows(gpu, trace, "ops_summary");
    assert_eq!(s.ops.len(), theirs.len(), "{gpu}/{trace}: ops summary rows");
    for row in &theirs {
        let name = &row["name"];
        let ours = s
            .ops
            .iter()
            .find(|o| &o.name == name)
            .unwrap_or_else(|| panic!("{gpu}/{trace}: no ops-summary row for {name}"));
        assert_eq!(ours.count, num(row, "Count") as u64, "{gpu}/{trace} {name}: count");
        assert_eq!(format!("['{}']", ours.category), row["Categories"], "{gpu}/{trace} {name}");
        for (col, v) in [
            ("total_direct_kernel_time_ms", ours.direct_kernel_time_ms),
            ("total_subtree_kernel_time_ms", ours.subtree_kernel_time_ms),
        ] {
            let t = num(row, col);
            assert!(close(v, t, REL_TIME), "{gpu}/{trace} {name} {col}: ours {v}, TraceLens {t}");
        }
        let p = num(row, "Percentage (%)");
        assert!(
            close(ours.percent, p, REL_TIME),
            "{gpu}/{trace} {name} %: {} vs {p}",
            ours.percent
        );
    }
    // By category.
    let theirs = tracelens_rows(gpu, trace, "ops_summary_by_category");
    assert_eq!(s.by_category.len(), theirs.len(), "{gpu}/{trace}: category rows");
    for row in &theirs {
        let cat = &row["op category"];
        let ours = s.by_category.iter().find(|c| &c.category == cat).unwrap();
        assert_eq!(ours.count, num(row, "Count") as u64, "{gpu}/{trace} {cat}: count");
        let t = num(row, "total_direct_kernel_time_ms");
        assert!(
            close(ours.direct_kernel_time_ms, t, REL_TIME),
            "{gpu}/{trace} {cat}: ours {} ms, TraceLens {t} ms",
            ours.direct_kernel_time_ms
        );
        let p = num(row, "Percentage (%)");
        assert!(close(ours.percent, p, REL_TIME), "{gpu}/{trace} {cat} %");
    }
}

fn check_kernels(gpu: &str, trace: &str) {
    let m = load(gpu, trace);
    let (t, _) = timeline(&m, false);
    let rows = kernel_summary(&m, &tl_category(&m), t.all.total.time_ms * 1e3);
    let theirs = tracelens_rows(gpu, trace, "kernel_summary");
    assert_eq!(rows.len(), theirs.len(), "{gpu}/{trace}: kernel summary rows");
    for row in &theirs {
        let (op, name) = (&row["Parent cpu_op"], &row["Kernel name"]);
        let stream = num(row, "Kernel stream") as i64;
        let ours = rows
            .iter()
            .find(|k| k.parent_op.as_ref() == Some(op) && &k.name == name && k.stream == stream)
            .unwrap_or_else(|| panic!("{gpu}/{trace}: no kernel row for {op} / {name}"));
        assert_eq!(&ours.category, &row["Parent op category"], "{gpu}/{trace} {name}");
        assert_eq!(
            ours.count,
            num(row, "Kernel duration (µs)_count") as u64,
            "{gpu}/{trace} {name}"
        );
        for (col, v) in [
            ("Kernel duration (µs)_sum", ours.total_us),
            ("Kernel duration (µs)_mean", ours.mean_us),
            ("Kernel duration (µs)_min", ours.min_us),
            ("Kernel duration (µs)_max", ours.max_us),
            ("Percent of kernels time (%)", ours.percent_of_kernel_time),
            ("Percent of total time (%)", ours.percent_of_total_time),
        ] {
            let t = num(row, col);
            assert!(close(v, t, REL_TIME), "{gpu}/{trace} {name} {col}: ours {v}, TraceLens {t}");
        }
    }
}

fn check_short_kernels(gpu: &str, trace: &str) {
    let m = load(gpu, trace);
    let (t, _) = timeline(&m, false);
    let s = short_kernels(&m, 10.0, 100, t.all.total.time_ms * 1e3);
    let hist = tracelens_rows(gpu, trace, "short_kernel_histogram");
    assert_eq!(s.histogram.len(), hist.len(), "{gpu}/{trace}: histogram bins");
    for (ours, row) in s.histogram.iter().zip(&hist) {
        assert!(close(ours.bin_start_us, num(row, "bin_start"), 1e-9), "{gpu}/{trace} bin start");
        assert!(close(ours.bin_end_us, num(row, "bin_end"), 1e-9), "{gpu}/{trace} bin end");
        assert_eq!(ours.count, num(row, "count") as u64, "{gpu}/{trace} bin {}", ours.bin_start_us);
    }
    let theirs = tracelens_rows(gpu, trace, "short_kernels_summary");
    assert_eq!(s.rows.len(), theirs.len(), "{gpu}/{trace}: short-kernel groups");
    for row in &theirs {
        let (op, dims, name) = (&row["Parent cpu_op"], &row["Input dims"], &row["Kernel name"]);
        let ours = s
            .rows
            .iter()
            .find(|k| {
                k.parent_op.as_ref() == Some(op)
                    && k.input_dims.as_ref() == Some(dims)
                    && &k.name == name
            })
            .unwrap_or_else(|| panic!("{gpu}/{trace}: no short-kernel row for {op} {dims} {name}"));
        assert_eq!(ours.count, num(row, "Short Kernel count") as u64, "{gpu}/{trace} {name}");
        for (col, v) in [
            ("Short Kernel duration (µs) sum", ours.total_us),
            ("Short Kernel duration (µs) percent of total time", ours.percent_of_total_time),
        ] {
            let t = num(row, col);
            assert!(close(v, t, REL_TIME), "{gpu}/{trace} {name} {col}: ours {v}, TraceLens {t}");
        }
    }
}

macro_rules! golden {
    ($($name:ident: $check:ident($gpu:literal, $trace:literal);)*) => {
        $(
            #[test]
            fn $name() {
                $check($gpu, $trace);
            }
        )*
    };
}

const VIT: &str = "Falconsai_nsfw_image_detection__1016002";
const BERT: &str = "gaunernst_bert-small-uncased__1016001";

golden! {
    h100_vit_timeline: check_timeline("h100", "Falconsai_nsfw_image_detection__1016002");
    h100_bert_timeline: check_timeline("h100", "gaunernst_bert-small-uncased__1016001");
    mi300_vit_timeline: check_timeline("mi300", "Falconsai_nsfw_image_detection__1016002");
    mi300_bert_timeline: check_timeline("mi300", "gaunernst_bert-small-uncased__1016001");
    h100_vit_ops: check_ops("h100", "Falconsai_nsfw_image_detection__1016002");
    h100_bert_ops: check_ops("h100", "gaunernst_bert-small-uncased__1016001");
    mi300_vit_ops: check_ops("mi300", "Falconsai_nsfw_image_detection__1016002");
    mi300_bert_ops: check_ops("mi300", "gaunernst_bert-small-uncased__1016001");
    h100_vit_kernels: check_kernels("h100", "Falconsai_nsfw_image_detection__1016002");
    h100_bert_kernels: check_kernels("h100", "gaunernst_bert-small-uncased__1016001");
    mi300_vit_kernels: check_kernels("mi300", "Falconsai_nsfw_image_detection__1016002");
    mi300_bert_kernels: check_kernels("mi300", "gaunernst_bert-small-uncased__1016001");
    h100_vit_short_kernels: check_short_kernels("h100", "Falconsai_nsfw_image_detection__1016002");
    h100_bert_short_kernels: check_short_kernels("h100", "gaunernst_bert-small-uncased__1016001");
    mi300_vit_short_kernels: check_short_kernels("mi300", "Falconsai_nsfw_image_detection__1016002");
    mi300_bert_short_kernels: check_short_kernels("mi300", "gaunernst_bert-small-uncased__1016001");
}

#[test]
fn fixture_names() {
    // The macro takes literals; keep them in step with these names.
    assert!(fixtures().join(format!("tracelens_h100/{VIT}.json.gz")).exists());
    assert!(fixtures().join(format!("tracelens_mi300/{BERT}.json.gz")).exists());
}

//! Tests of the trace renderers: sections, formats and the cross-rank table.

#![allow(clippy::unwrap_used)]

use super::*;
use rooftop_core::roofline::Bound;
use rooftop_core::trace::model::{CpuOp, Dims, GpuEvent, GpuKind, LaunchDims, OpArgs, TraceModel};
use rooftop_core::trace::ops::{Category, Params};
use rooftop_core::trace::report::{analyze, cross_rank, TraceOptions};
use rooftop_core::trace::tables::{KernelDetail, Stats, TimeStats};

const GEMM_KERNEL: &str = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_\
                           warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
const ADD_KERNEL: &str = "void at::native::vectorized_elementwise_kernel<4, \
                          at::native::CUDAFunctor_add<c10::BFloat16>>(int)";

/// A small step: GEMMs of 50 and 30 µs, three 2 µs adds back to back, a 2 µs
/// device-to-host copy, a 100 µs idle gap, a 12 µs GEMM. Window 0-200 µs, busy
/// 100 µs.
fn model() -> TraceModel {
    let op = |name: &str, dims: Vec<Dims>| CpuOp {
        name: name.into(),
        args: OpArgs { input_dims: dims, ..OpArgs::default() }.into(),
        ..CpuOp::default()
    };
    let mm = || vec![Dims::Tensor(vec![512]), Dims::Tensor(vec![141, 512])];
    let add = || vec![Dims::Tensor(vec![1, 141, 512]), Dims::Tensor(vec![1, 141, 512])];
    let k = |kind: GpuKind, name: &str, ts: i64, dur: i64, op: u32| GpuEvent {
        kind,
        name: name.into(),
        ts_ns: ts * 1000,
        dur_ns: dur * 1000,
        stream: 7,
        launch: LaunchDims {
            grid: Some([8, 4, 1]),
            block: Some([128, 1, 1]),
            ..LaunchDims::default()
        }
        .shared(),
        launcher: Some("cudaLaunchKernel".into()),
        op: Some(op),
        ..GpuEvent::default()
    };
    TraceModel {
        ops: vec![
            op("aten::addmm", mm()),
            op("aten::addmm", mm()),
            op("aten::add", add()),
            op("aten::add", add()),
            op("aten::add", add()),
            op("aten::_local_scalar_dense", vec![]),
        ],
        gpu: vec![
            k(GpuKind::Kernel, GEMM_KERNEL, 0, 50, 0),
            k(GpuKind::Kernel, GEMM_KERNEL, 50, 30, 1),
            k(GpuKind::Kernel, ADD_KERNEL, 80, 2, 2),
            k(GpuKind::Kernel, ADD_KERNEL, 82, 2, 3),
            k(GpuKind::Kernel, ADD_KERNEL, 84, 2, 4),
            k(GpuKind::Memcpy, "Memcpy DtoH (Device -> Pinned)", 86, 2, 5),
            k(GpuKind::Kernel, GEMM_KERNEL, 188, 12, 1),
        ],
        ..TraceModel::default()
    }
}

fn gemm_row() -> OpRow {
    OpRow {
        name: "aten::addmm".to_string(),
        category: Category::Gemm,
        params: Params(vec![
            ("M", ParamValue::Int(141)),
            ("N", ParamValue::Int(512)),
            ("K", ParamValue::Int(512)),
            ("bias", ParamValue::Bool(true)),
            ("stride_A", ParamValue::Ints(vec![512, 1])),
            ("dtypes", ParamValue::Dtypes(vec![Some("c10::BFloat16".to_string()); 2])),
        ]),
        flops: Some(74_000_000.0),
        bytes: Some(800_000.0),
        flops_per_byte: Some(92.5),
        count: 2,
        kernel_time_us: TimeStats {
            mean: 46.0,
            median: 46.0,
            std: Some(5.66),
            min: 42.0,
            max: 50.0,
            sum: 92.0,
        },
        achieved_tflops: Some(Stats { mean: 1.6, median: 1.6, std: None, min: 1.5, max: 1.8 }),
        achieved_tbs: Some(Stats { mean: 0.017, median: 0.017, std: None, min: 0.016, max: 0.019 }),
        roofline_attainment_pct: Some(12.5),
        bound: Some(Bound::Memory),
        floor_time_us: Some(5.75),
        tile_eff: Some(0.73),
        wave_eff: Some(0.5),
        dim_eff: None,
        top_finding: None,
        kernels: vec![KernelDetail {
            name: GEMM_KERNEL.to_string(),
            stream: 7,
            count: 2,
            total_us: 92.0,
            mean_us: 46.0,
            median_us: 46.0,
            std_us: 4.0,
            min_us: 42.0,
            max_us: 50.0,
            grid: Some([8, 4, 1]),
            block: Some([128, 1, 1]),
            shared_memory_bytes: None,
            registers_per_thread: None,
        }],
        unmodelled: None,
        first_op: 0,
    }
}

fn report() -> TraceReport {
    let mut r =
        analyze(&model(), None, &TraceOptions { histogram_bins: 4, ..TraceOptions::default() });
    // Pin the roofline table to a hand-built row: these snapshots are about layout.
    r.categories.clear();
    r.categories.insert("GEMM".to_string(), vec![gemm_row()]);
    r
}

#[test]
fn hand_checked_numbers() {
    let r = report();
    let t = &r.timeline.all;
    assert_eq!(t.total.time_ms, 0.2);
    assert_eq!(t.busy.time_ms, 0.1);
    assert_eq!(t.idle.percent, 50.0);
    assert_eq!(t.exposed_memcpy.time_ms, 0.002);
    assert_eq!(r.ops_summary.ops[0].name, "aten::addmm");
    assert_eq!(r.ops_summary.ops[0].count, 2);
    assert!((r.ops_summary.ops[0].direct_kernel_time_ms - 0.092).abs() < 1e-12);
    assert_eq!(r.short_kernels.short_count, 3);
}

#[test]
fn sections_parse() {
    assert_eq!("short_kernels".parse::<Section>(), Ok(Section::ShortKernels));
    assert_eq!("GEMM".parse::<Section>(), Ok(Section::Gemm));
    assert!("nope".parse::<Section>().unwrap_err().contains("short-kernels"));
    for n in Section::NAMES {
        assert_eq!(n.parse::<Section>().unwrap().as_str(), n);
    }
}

#[test]
fn tables_fit_in_100_columns() {
    let r = report();
    for section in Section::NAMES {
        let opts = RenderOptions { top: 50, section: section.parse().unwrap() };
        for line in table(&r, &opts).lines() {
            assert!(line.chars().count() <= 100, "{section}: {line}");
        }
    }
}

#[test]
fn json_has_the_documented_top_level_keys() {
    let v: serde_json::Value = serde_json::from_str(&json(&report())).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    let mut want = vec![
        "schema_version",
        "device",
        "window",
        "timeline",
        "ops_summary",
        "categories",
        "model_coverage",
        "kernels",
        "short_kernels",
        "findings",
        "warnings",
        "idle",
        "launch",
        "syncs",
        "graphs",
        "critical_path",
        "modules",
        "memory",
        "inference",
    ];
    want.sort_unstable();
    let mut got = keys.clone();
    got.sort_unstable();
    assert_eq!(got, want);
}

#[test]
fn snapshot_summary_table() {
    insta::assert_snapshot!(table(&report(), &RenderOptions::default()));
}

#[test]
fn snapshot_all_table() {
    insta::assert_snapshot!(table(&report(), &RenderOptions { top: 5, section: Section::All }));
}

#[test]
fn snapshot_markdown() {
    insta::assert_snapshot!(markdown(&report(), &RenderOptions { top: 5, section: Section::All }));
}

#[test]
fn snapshot_json() {
    insta::assert_snapshot!(json(&report()));
}

#[test]
fn snapshot_csv_files() {
    let mut out = String::new();
    for (name, text) in csv_files(&report()).unwrap() {
        let _ = write!(out, "== {name}\n{text}");
    }
    insta::assert_snapshot!(out);
}

#[test]
fn snapshot_cross_rank() {
    let mut slow = model();
    slow.gpu[0].dur_ns = 80_000;
    slow.gpu[1].ts_ns = 80_000;
    let reports = vec![
        ("rank0.json".to_string(), analyze(&model(), None, &TraceOptions::default())),
        ("rank1.json".to_string(), analyze(&slow, None, &TraceOptions::default())),
    ];
    let c = cross_rank(&reports);
    assert_eq!(c.slowest.as_deref(), Some("rank1.json"));
    insta::assert_snapshot!(format!(
        "{}\n{}\n{}",
        cross_rank_table(&c),
        cross_rank_markdown(&c),
        cross_rank_csv(&c).unwrap()
    ));
}

/// The report's JSON, written by hand where serde would be slow (`json.rs`), is byte for
/// byte what serde_json's own pretty printer writes for the same report: with and
/// without a critical path, with an XLA section, with events whose names need escapes,
/// whose floats are not finite and whose stream is missing or negative, with more
/// events than one round of the thread pool writes, and with none.
#[test]
fn json_is_what_serde_json_writes() {
    use rooftop_core::trace::gaps::critical_path::{
        BoundShare, CpEvent, CpRank, CpWindow, CriticalPath,
    };
    use std::sync::Arc;
    let same = |r: &TraceReport| {
        let want = serde_json::to_string_pretty(r).unwrap() + "\n";
        assert_eq!(json(r), want);
        let mut streamed = Vec::new();
        write_json(r, &mut streamed).unwrap();
        assert_eq!(String::from_utf8(streamed).unwrap(), want);
    };
    let base = report();
    same(&base);

    let event = |name: &str, ts: f64, stream: Option<i64>| CpEvent {
        name: Arc::from(name),
        ts,
        dur_us: 1.5,
        on_path_us: 0.1,
        kind: "kernel",
        stream,
        path_start_us: -0.0,
        path_end_us: 1.0e300,
    };
    let path = CriticalPath {
        window: CpWindow {
            annotation: Some("ProfilerStep#2".to_string()),
            start_us: 0.0,
            end_us: 10.0,
            basis: "the \"last\" step".to_string(),
        },
        length_us: 9.5,
        nodes: 6,
        edges: 5,
        bound_by: vec![BoundShare { bound_by: "cpu_bound", us: 9.5, percent: 100.0 }],
        events: vec![
            event("a\"b\\c\n\u{1}é <T>", f64::NAN, None),
            event("", f64::INFINITY, Some(-3)),
            event("x", 9_716_533.018, Some(7)),
        ],
        ranked: vec![CpRank { name: "x".to_string(), us: 1.0, percent: 10.5, entries: 1 }],
        by_op: Vec::new(),
        what_if: Vec::new(),
        timeline: rooftop_core::trace::gaps::step_timeline::StepTimeline::default(),
    };
    let mut odd = base.clone();
    odd.critical_path = Some(path.clone());
    same(&odd);
    odd.xla = Some(rooftop_core::trace::xla::report::XlaReport::default());
    same(&odd);

    // More events than one round of tasks renders (4,096 per thread): runs and rounds
    // are joined in order, with one comma between events.
    let mut long = base.clone();
    let mut many = path.clone();
    many.events = (0..9_001)
        .map(|i| event(&format!("k{i}"), 1.0e12 + f64::from(i) * 0.125, Some(i64::from(i % 3))))
        .collect();
    long.critical_path = Some(many);
    same(&long);

    let mut empty = base;
    let mut path = path;
    path.events.clear();
    empty.critical_path = Some(path);
    same(&empty);
}

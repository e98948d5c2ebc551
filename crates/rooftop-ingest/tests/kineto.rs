//! The Kineto reader against independent oracles: every fixture in `tests/fixtures/kineto`
//! with counts taken by Python's `json` module, the kernel → op links computed by a
//! separate Python implementation of the linking rules of
//! docs/reference/input-formats.md#pytorch-profiler-kineto-trace-json, and hand-built
//! traces whose expected model is written out here by hand.
//!
//! The Python oracle (run from `tests/fixtures/kineto`), for each file: `X` events per
//! `cat`; kernels; for each kernel, the runtime event with the same `correlation` and
//! the innermost `cpu_op` on that (pid, tid) whose [ts, ts + dur] contains the runtime
//! event's [ts, ts + dur]; the sum of kernel `dur` in ns (`round(dur * 1000)`):
//!
//! ```text
//! ev = json.load(...)["traceEvents"]; X = [e for e in ev if e.get("ph") == "X"]
//! collections.Counter(e.get("cat") for e in X)
//! by_corr = {r["args"]["correlation"]: r for r in X if r["cat"] in ("cuda_runtime", "cuda_driver")}
//! op_of(r) = innermost o in cpu_ops with o.pid == r.pid, o.tid == r.tid and containment
//! collections.Counter(op_of(by_corr[k["args"]["correlation"]])["name"] for k in kernels)
//! ```

#![allow(clippy::unwrap_used)]

use rooftop_core::trace::{Dims, GpuKind, Schema, TraceModel};
use rooftop_ingest::kineto::{read_bytes, read_dir, read_path, ReadOptions, TraceError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/kineto")
}

fn read(rel: &str) -> TraceModel {
    let p = fixtures().join(rel);
    read_path(&p, &ReadOptions::default(), &mut |_, _| {}).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn count(m: &TraceModel, k: GpuKind) -> usize {
    m.gpu.iter().filter(|g| g.kind == k).count()
}

/// Kernels per op name of the op each kernel is linked to.
fn kernels_per_op(m: &TraceModel) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for g in m.gpu.iter().filter(|g| g.kind == GpuKind::Kernel) {
        if let Some(op) = g.op {
            *out.entry(m.ops[op as usize].name.to_string()).or_default() += 1;
        }
    }
    out
}

struct Expect {
    file: &'static str,
    ops: usize,
    kernels: usize,
    memcpy: usize,
    memset: usize,
    /// `user_annotation` + `gpu_user_annotation`.
    annotations: usize,
    devices: usize,
    rank: Option<i64>,
    /// Sum of kernel `dur`, ns.
    kernel_ns: i64,
    /// Kernels linked to an op (Python oracle).
    linked: usize,
    /// The oracle's most frequent ops, (name, kernels).
    top_ops: &'static [(&'static str, usize)],
}

/// Numbers from the Python oracle described in the module docs.
const EXPECT: &[Expect] = &[
    Expect {
        file: "hta_a100_alexnet.json.gz",
        ops: 359,
        kernels: 79,
        memcpy: 16,
        memset: 3,
        annotations: 8,
        devices: 8,
        rank: Some(0),
        kernel_ns: 10_692_000,
        linked: 79,
        top_ops: &[("aten::cudnn_convolution", 30), ("aten::clamp_min_", 14), ("aten::addmm", 12)],
    },
    Expect {
        file: "hta_a100_cupti_flop_counters.json.gz",
        ops: 375,
        kernels: 0,
        memcpy: 0,
        memset: 0,
        annotations: 8,
        devices: 8,
        rank: Some(0),
        kernel_ns: 0,
        linked: 0,
        top_ops: &[],
    },
    Expect {
        file: "hta_mi250_minitoy_train.json.gz",
        ops: 70,
        kernels: 14,
        memcpy: 2,
        memset: 0,
        annotations: 5,
        devices: 4,
        rank: None,
        kernel_ns: 110_881,
        linked: 14,
        top_ops: &[("aten::addmm", 2), ("aten::fill_", 2), ("aten::add_", 2)],
    },
    Expect {
        file: "hta_tiny_plain.json",
        ops: 3,
        kernels: 1,
        memcpy: 0,
        memset: 0,
        annotations: 2,
        devices: 0,
        rank: Some(0),
        kernel_ns: 45_000,
        linked: 1,
        top_ops: &[("aten::mm", 1)],
    },
    Expect {
        file: "tracelens_mi300_inductor_triton.json.gz",
        ops: 41,
        kernels: 12,
        memcpy: 0,
        memset: 0,
        annotations: 2,
        devices: 1,
        rank: None,
        kernel_ns: 12_549_021,
        linked: 12,
        top_ops: &[("aten::mm", 7)],
    },
    Expect {
        file: "tracelens_h100/Falconsai_nsfw_image_detection__1016002.json.gz",
        ops: 1258,
        kernels: 154,
        memcpy: 0,
        memset: 2,
        annotations: 2,
        devices: 1,
        rank: None,
        kernel_ns: 1_220_926,
        linked: 154,
        top_ops: &[
            ("aten::addmm", 73),
            ("aten::add", 25),
            ("aten::native_layer_norm", 25),
            ("aten::_flash_attention_forward", 12),
            ("aten::gelu", 12),
            ("aten::cudnn_convolution", 4),
        ],
    },
    Expect {
        file: "tracelens_h100/gaunernst_bert-small-uncased__1016001.json.gz",
        ops: 479,
        kernels: 60,
        memcpy: 1,
        memset: 0,
        annotations: 2,
        devices: 1,
        rank: None,
        kernel_ns: 307_197,
        linked: 60,
        top_ops: &[
            ("aten::addmm", 26),
            ("aten::native_layer_norm", 10),
            ("aten::add", 9),
            ("aten::gelu", 5),
            ("aten::_flash_attention_forward", 4),
            ("aten::index_select", 3),
        ],
    },
    Expect {
        file: "tracelens_mi300/Falconsai_nsfw_image_detection__1016002.json.gz",
        ops: 1381,
        kernels: 155,
        memcpy: 0,
        memset: 0,
        annotations: 2,
        devices: 1,
        rank: None,
        kernel_ns: 1_716_301,
        linked: 155,
        top_ops: &[
            ("aten::addmm", 73),
            ("aten::add", 25),
            ("aten::native_layer_norm", 25),
            ("aten::_flash_attention_forward", 12),
            ("aten::gelu", 12),
            ("aten::miopen_convolution", 5),
        ],
    },
    Expect {
        file: "tracelens_mi300/gaunernst_bert-small-uncased__1016001.json.gz",
        ops: 519,
        kernels: 60,
        memcpy: 1,
        memset: 0,
        annotations: 2,
        devices: 1,
        rank: None,
        kernel_ns: 388_344,
        linked: 60,
        top_ops: &[
            ("aten::addmm", 26),
            ("aten::native_layer_norm", 10),
            ("aten::add", 9),
            ("aten::gelu", 5),
            ("aten::_flash_attention_forward", 4),
            ("aten::index_select", 3),
        ],
    },
];

#[test]
fn every_fixture_matches_the_python_oracle() {
    for e in EXPECT {
        let m = read(e.file);
        let f = e.file;
        assert_eq!(m.schema, Schema::Current, "{f}");
        assert_eq!(m.ops.len(), e.ops, "{f}: ops");
        assert_eq!(count(&m, GpuKind::Kernel), e.kernels, "{f}: kernels");
        assert_eq!(count(&m, GpuKind::Memcpy), e.memcpy, "{f}: memcpy");
        assert_eq!(count(&m, GpuKind::Memset), e.memset, "{f}: memset");
        assert_eq!(m.annotations.len(), e.annotations, "{f}: annotations");
        assert_eq!(m.devices.len(), e.devices, "{f}: devices");
        assert_eq!(m.rank, e.rank, "{f}: rank");
        let kernel_ns: i64 =
            m.gpu.iter().filter(|g| g.kind == GpuKind::Kernel).map(|g| g.dur_ns).sum();
        assert_eq!(kernel_ns, e.kernel_ns, "{f}: kernel time");
        let per_op = kernels_per_op(&m);
        assert_eq!(per_op.values().sum::<usize>(), e.linked, "{f}: kernels with an op");
        for &(name, n) in e.top_ops {
            assert_eq!(per_op.get(name).copied(), Some(n), "{f}: kernels of {name}");
        }
        // Invariants of the model.
        assert!(m.gpu.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns), "{f}: gpu sorted");
        assert!(
            m.ops
                .windows(2)
                .all(|w| (w[0].pid, w[0].tid, w[0].ts_ns) <= (w[1].pid, w[1].tid, w[1].ts_ns)),
            "{f}: ops sorted"
        );
        for (i, o) in m.ops.iter().enumerate() {
            if let Some(p) = o.parent {
                let p = &m.ops[p as usize];
                assert!(p.ts_ns <= o.ts_ns && o.ts_ns + o.dur_ns <= p.ts_ns + p.dur_ns, "{f}");
                assert!(p.children.contains(&(i as u32)), "{f}");
            }
            for &g in &o.launched {
                assert_eq!(m.gpu[g as usize].op, Some(i as u32), "{f}");
            }
        }
    }
}

#[test]
fn tracelens_fixtures_link_at_least_99_percent_of_kernels() {
    for e in EXPECT.iter().filter(|e| e.file.starts_with("tracelens")) {
        let m = read(e.file);
        let kernels = count(&m, GpuKind::Kernel);
        let linked = m.gpu.iter().filter(|g| g.kind == GpuKind::Kernel && g.op.is_some()).count();
        assert!(linked * 100 >= kernels * 99, "{}: {linked} of {kernels}", e.file);
    }
}

#[test]
fn devices_come_from_device_properties() {
    // deviceProperties[0] of the H100 trace: name, numSms 132, 9.0, 85018279936 B, warp 32.
    let m = read("tracelens_h100/gaunernst_bert-small-uncased__1016001.json.gz");
    let d = &m.devices[0];
    assert_eq!(d.name, "NVIDIA H100 80GB HBM3");
    assert_eq!(d.num_sms, Some(132));
    assert_eq!(d.compute_capability.as_deref(), Some("9.0"));
    assert_eq!(d.total_memory_bytes, Some(85_018_279_936));
    assert_eq!(d.warp_size, Some(32));
    assert_eq!(m.base_time_ns, Some(1_751_410_836_000_000_000));
    // The MI300X trace: "AMD Instinct MI300X VF", 304 CUs, 9.4, warp 64.
    let m = read("tracelens_mi300/gaunernst_bert-small-uncased__1016001.json.gz");
    let d = &m.devices[0];
    assert_eq!(
        (d.name.as_str(), d.num_sms, d.warp_size),
        ("AMD Instinct MI300X VF", Some(304), Some(64))
    );
    assert_eq!(d.compute_capability.as_deref(), Some("9.4"));
}

#[test]
fn rocm_launch_config_comes_from_the_runtime_event() {
    // HTA MI250 trace, kernels in time order (Python: sort kernel/gpu_memcpy events by
    // ts, look up the runtime event by correlation): #1 hipLaunchKernel grid [3,1,1]
    // block [128,1,1] smem 0; #2 Cijk_… hipExtModuleLaunchKernel grid [512,1,1] block
    // [256,1,1] (work-items: 512 / 256 = 2 workgroups); #6 reduce_kernel smem 512;
    // #11 hipExtModuleLaunchKernel [512,8,1] / [256,1,1] = [2,8,1]; memcpy #0 size "2560".
    let m = read("hta_mi250_minitoy_train.json.gz");
    let g = &m.gpu;
    assert_eq!(g[1].launcher.as_deref(), Some("hipLaunchKernel"));
    assert_eq!(
        (g[1].grid(), g[1].block(), g[1].shared_memory_bytes()),
        (Some([3, 1, 1]), Some([128, 1, 1]), Some(0))
    );
    assert!(g[2].name.starts_with("Cijk_Alik_Bljk_SB_Bias"));
    assert_eq!(g[2].launcher.as_deref(), Some("hipExtModuleLaunchKernel"));
    assert_eq!((g[2].grid(), g[2].block()), (Some([2, 1, 1]), Some([256, 1, 1])));
    assert_eq!(g[6].shared_memory_bytes(), Some(512));
    assert_eq!(g[11].grid(), Some([2, 8, 1]));
    assert_eq!((g[0].kind, g[0].bytes), (GpuKind::Memcpy, Some(2560)));
}

#[test]
fn cuda_kernel_fields_and_exact_timestamps() {
    // tiny plain trace: the kernel is at ts 1666149715428509 µs (integer), dur 45,
    // registers 240, shared memory 98304, grid [32, 2, 1]... as written in the file.
    let m = read("hta_tiny_plain.json");
    let k = &m.gpu[0];
    assert_eq!(k.ts_ns, 1_666_149_715_428_509_000);
    assert_eq!(k.dur_ns, 45_000);
    assert_eq!(k.registers_per_thread(), Some(240));
    assert_eq!(k.shared_memory_bytes(), Some(98_304));
    assert_eq!(k.launcher.as_deref(), Some("cudaLaunchKernel"));
    // H100 trace: first cpu_op aten::slice at ts 1419247333291.708 µs, dur 22.51 µs,
    // Input Dims [[1, 512], [], [], [], []], types ["long int", "Scalar", ...].
    let m = read("tracelens_h100/gaunernst_bert-small-uncased__1016001.json.gz");
    let op = m.ops.iter().find(|o| o.ts_ns == 1_419_247_333_291_708).unwrap();
    assert_eq!(&*op.name, "aten::slice");
    assert_eq!(op.dur_ns, 22_510);
    assert_eq!(op.args.input_dims[0], Dims::Tensor(vec![1, 512]));
    assert_eq!(op.args.input_dims.len(), 5);
    assert_eq!(op.args.input_types[..2], ["long int".to_string(), "Scalar".to_string()]);
    assert_eq!(op.args.concrete_inputs[3], "9223372036854775807");
    assert_eq!(op.external_id, Some(2));
}

/// The hand-built trace `handmade/nesting_graph.json`: every expected value below is
/// read off the file by hand (times in µs there, ns here).
#[test]
fn handmade_nesting_graph_launch_and_fallbacks() {
    let m = read("handmade/nesting_graph.json");
    let names: Vec<&str> = m.ops.iter().map(|o| o.name.as_ref()).collect();
    // Sorted by (pid, tid, ts, longer first); the negative-duration op is dropped.
    assert_eq!(
        names,
        [
            "aten::linear",
            "aten::t",
            "aten::addmm",
            "aten::add",
            "graph_replay",
            "aten::mul",
            "aten::matmul",
            "aten::mm",
            "aten::copy_"
        ]
    );
    let parents: Vec<Option<u32>> = m.ops.iter().map(|o| o.parent).collect();
    assert_eq!(parents, [None, Some(0), Some(0), None, None, None, None, Some(6), None]);
    assert_eq!(m.ops[0].children, [1, 2]);
    assert_eq!(m.ops[6].children, [7]);
    assert_eq!(m.ops[2].sequence_number, Some(41));
    assert_eq!(m.ops[0].seq, Some(1));
    assert_eq!(m.ops[2].args.input_dims[1], Dims::Tensor(vec![32, 128]));
    assert_eq!(m.ops[2].args.input_strides[2], Dims::Tensor(vec![1, 128]));

    let gpu: Vec<&str> = m.gpu.iter().map(|g| g.name.as_ref()).collect();
    assert_eq!(
        gpu,
        [
            "gemm_kernel",
            "Memcpy HtoD (Pageable -> Device)",
            "Memset (Device)",
            "add_kernel",
            "g1",
            "g2",
            "g3",
            "ext_only_kernel",
            "flow_kernel",
            "orphan_kernel",
            "mm_kernel"
        ]
    );
    let ops: Vec<Option<u32>> = m.gpu.iter().map(|g| g.op).collect();
    // gemm→addmm(2), memcpy→copy_(8, other thread), memset→linear(0, launched
    // directly in it), add→add(3), graph launch → graph_replay(4) ×3, ext-id fallback →
    // add(3), ac2g flow → mul(5), orphan → none, zero-length launch at mm's end with
    // mm's External id → mm(7).
    assert_eq!(
        ops,
        [
            Some(2),
            Some(8),
            Some(0),
            Some(3),
            Some(4),
            Some(4),
            Some(4),
            Some(3),
            Some(5),
            None,
            Some(7)
        ]
    );
    let launchers: Vec<Option<&str>> = m.gpu.iter().map(|g| g.launcher.as_deref()).collect();
    assert_eq!(launchers[4..7], [Some("cudaGraphLaunch"); 3]);
    assert_eq!(launchers[7], None);
    assert_eq!(launchers[8], Some("cuLaunchKernel"));
    assert_eq!(m.gpu[6].stream, 8);
    assert_eq!(m.gpu[0].grid(), Some([8, 2, 1]));
    assert_eq!(m.gpu[0].registers_per_thread(), Some(128));
    assert_eq!(m.gpu[1].bytes, Some(4096));
    assert_eq!(m.ops[4].launched, [4, 5, 6]);
    assert_eq!(m.ops[3].launched, [3, 7]);
    assert_eq!(m.ops[0].launched, [2]);
    assert!(m.ops[1].launched.is_empty());
    assert_eq!(m.rank, Some(3));
    assert_eq!(m.devices[0].num_sms, Some(132));
    assert_eq!(m.annotations.len(), 2);
    assert!(m.annotations.iter().any(|a| a.on_gpu && a.dur_ns == 845_000));

    let warn: BTreeMap<&str, u64> = m.warnings.iter().map(|w| (w.kind.as_str(), w.count)).collect();
    assert_eq!(
        warn,
        BTreeMap::from([
            ("missing_field", 1),
            ("negative_duration", 1),
            ("unknown_category", 1),
            ("unlinked_gpu_event", 1),
            ("unsupported_phase", 1),
        ])
    );
    let neg = m.warnings.iter().find(|w| w.kind == "negative_duration").unwrap();
    // The event starts on line 48 of the file (`grep -n aten::bad`), column 3.
    assert!(
        neg.example.contains("aten::bad") && neg.example.contains("line 48, column 3"),
        "{}",
        neg.example
    );
    let unknown = m.warnings.iter().find(|w| w.kind == "unknown_category").unwrap();
    assert!(unknown.example.contains("my_custom_cat"), "{}", unknown.example);
}

/// `handmade/legacy_2021.json`, built from the 2021 schema (`Operator`, `Runtime`,
/// `Kernel`, `Memcpy`, `Memset`, flow category `async`, lower-case `external id`,
/// `Input dims`, string thread ids, integer µs); expected values read off the file.
#[test]
fn legacy_schema() {
    let m = read("handmade/legacy_2021.json");
    assert_eq!(m.schema, Schema::Legacy);
    let names: Vec<&str> = m.ops.iter().map(|o| o.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            "aten::to",
            "aten::nll_loss_backward"
        ]
    );
    assert_eq!((m.ops[0].tid, m.ops[2].tid), (123, 456));
    assert_eq!(m.ops[1].parent, Some(0));
    assert_eq!(
        m.ops[1].args.input_dims,
        [Dims::Tensor(vec![2, 8, 5]), Dims::Tensor(vec![]), Dims::Tensor(vec![])]
    );
    // The profiler step was an `Operator` then; it becomes an annotation.
    assert_eq!(m.annotations.len(), 1);
    assert_eq!(m.annotations[0].name, "ProfilerStep#1");
    let kinds: Vec<GpuKind> = m.gpu.iter().map(|g| g.kind).collect();
    assert_eq!(kinds, [GpuKind::Memcpy, GpuKind::Memset, GpuKind::Kernel, GpuKind::Kernel]);
    assert!(m.gpu.iter().all(|g| g.op == Some(2) && g.stream == 7 && g.device == 0));
    assert_eq!(m.gpu[0].external_id, Some(4));
    assert_eq!(m.gpu[0].bytes, Some(128_000));
    assert_eq!(m.gpu[2].ts_ns, 430_000);
    // Launch order: memcpy (360), flow-linked kernel (380), memset (390), kernel (405).
    assert_eq!(m.ops[2].launched, [0, 3, 1, 2]);
    assert_eq!(m.gpu[3].launcher.as_deref(), Some("cudaLaunchKernel"));
    assert!(m.warnings.iter().any(|w| w.kind == "missing_device_properties"));
}

#[test]
fn gzip_and_plain_give_the_same_model() {
    let plain = std::fs::read(fixtures().join("handmade/nesting_graph.json")).unwrap();
    let mut gz = Vec::new();
    {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(&mut gz, flate2::Compression::fast());
        enc.write_all(&plain).unwrap();
        enc.finish().unwrap();
    }
    let name = Path::new("x.json");
    let a = read_bytes(&plain, name, &ReadOptions::default(), &mut |_, _| {}).unwrap();
    let b = read_bytes(&gz, name, &ReadOptions::default(), &mut |_, _| {}).unwrap();
    assert_eq!(a, b);
    // A gzip file named .json is still gzip (detected by magic bytes).
    let (_dir_guard, dir) = tempdir("gzname");
    let p = dir.join("trace.json");
    std::fs::write(&p, &gz).unwrap();
    let c = read_path(&p, &ReadOptions::default(), &mut |_, _| {}).unwrap();
    assert_eq!(a, c);
}

/// A fresh, empty scratch directory and its path. The directory is removed when the
/// guard drops, at the end of the test whether it passed or failed: bind the guard to
/// a name (`_x_guard`), not `_`, which would drop it at once.
fn tempdir(tag: &str) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::Builder::new().prefix(&format!("rooftop-ingest-{tag}-")).tempdir().unwrap();
    let p = d.path().to_path_buf();
    (d, p)
}

fn err_of(bytes: &[u8]) -> TraceError {
    read_bytes(bytes, Path::new("bad.json"), &ReadOptions::default(), &mut |_, _| {})
        .expect_err("bad input must be an error")
}

#[test]
fn invalid_json_names_offset_line_and_column() {
    // Line 3 starts at byte 20 (`{\n` and ` "traceEvents": [\n` are 2 + 18 bytes) and is
    // `  {"ph": "X" "cat": ...`: where the comma should be, `"` is at index 13 of the
    // line: byte 33, line 3, column 14.
    let text = b"{\n \"traceEvents\": [\n  {\"ph\": \"X\" \"cat\": \"kernel\"}\n ]\n}\n";
    let e = err_of(text);
    let msg = e.to_string();
    match e {
        TraceError::Json { offset, line, column, .. } => {
            assert_eq!((offset, line, column), (33, 3, 14), "{msg}");
        }
        other => panic!("{other}"),
    }
    assert!(
        msg.starts_with("bad.json: invalid trace JSON at byte 33 (line 3, column 14): "),
        "{msg}"
    );
    assert!(msg.contains("expected `,` or `}`"), "{msg}");
}

#[test]
fn truncated_json_is_an_error_at_the_end() {
    let full = std::fs::read(fixtures().join("handmade/nesting_graph.json")).unwrap();
    let cut = &full[..full.len() / 2];
    let e = err_of(cut);
    let msg = e.to_string();
    let TraceError::Json { offset, .. } = e else { panic!("{msg}") };
    assert_eq!(offset as usize, cut.len(), "{msg}");
    assert!(msg.contains("ends"), "{msg}");
}

#[test]
fn truncated_gzip_is_an_error() {
    let gz = std::fs::read(fixtures().join("hta_a100_alexnet.json.gz")).unwrap();
    let e = err_of(&gz[..gz.len() - 100]);
    let msg = e.to_string();
    assert!(matches!(e, TraceError::Gzip { .. }), "{msg}");
    assert!(
        msg.contains("bad.json: the gzip stream is truncated or corrupt at compressed byte"),
        "{msg}"
    );
    // Corrupt data inside the stream.
    let mut bad = gz.clone();
    for b in &mut bad[1000..1100] {
        *b ^= 0x5a;
    }
    assert!(matches!(err_of(&bad), TraceError::Gzip { .. } | TraceError::Json { .. }));
}

#[test]
fn no_trace_events() {
    let e = err_of(br#"{"schemaVersion": 1, "deviceProperties": []}"#);
    assert!(matches!(e, TraceError::NoTraceEvents { .. }), "{e}");
    assert!(e.to_string().contains("no `traceEvents`"), "{e}");
    let e = err_of(b"42");
    assert!(e.to_string().contains("expected `{`"), "{e}");
    let e = err_of(b"");
    assert!(e.to_string().contains("byte 0 (line 1, column 1)"), "{e}");
    let e = err_of(br#"{"traceEvents": {}}"#);
    assert!(e.to_string().contains("`[`"), "{e}");
    let e = err_of(br#"{"traceEvents": [{"ph":"X"},]}"#);
    assert!(e.to_string().contains("an event after `,`"), "{e}");
    let e = err_of(br#"{"traceEvents": []} trailing"#);
    assert!(e.to_string().contains("after the end"), "{e}");
}

#[test]
fn tolerated_problems_are_counted_warnings() {
    let text = br#"{"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.0},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": "soon", "dur": 1},
        {"ph": "X", "cat": "kernel", "pid": 0, "tid": 7, "ts": 1, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "op", "ts": 1, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": -1},
        {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": -2},
        {"ph": "X", "cat": "weird", "name": "w", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
        {"ph": "X", "name": "nocat", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
        {"cat": "cpu_op", "name": "noph"},
        [1, 2],
        "text",
        {"ph": "X", "cat": "kernel", "name": "good", "pid": 0, "tid": 7, "ts": 2, "dur": 1,
         "args": {"grid": "big", "block": [1, 2, 3, 4], "correlation": {"x": 1}}}
    ]}"#;
    let m = read_bytes(text, Path::new("w.json"), &ReadOptions::default(), &mut |_, _| {}).unwrap();
    let warn: BTreeMap<&str, u64> = m.warnings.iter().map(|w| (w.kind.as_str(), w.count)).collect();
    assert_eq!(warn["missing_field"], 4, "{warn:?}"); // no dur, no name, no pid/tid, no ph
    assert_eq!(warn["bad_timestamp"], 1);
    assert_eq!(warn["negative_duration"], 2);
    assert_eq!(warn["unknown_category"], 2); // `weird` and no cat
    assert_eq!(warn["bad_event"], 2);
    assert_eq!(warn["missing_device_properties"], 1);
    assert_eq!(m.gpu.len(), 1);
    let g = &m.gpu[0];
    assert_eq!((g.grid(), g.block(), g.correlation), (None, None, None));
    let first = m.warnings.iter().find(|w| w.kind == "negative_duration").unwrap();
    assert!(first.example.contains("line 6"), "{}", first.example);
}

/// A time written as a JSON string that spells a number (`"12"`) is read as that number,
/// as Perfetto's JSON importer reads it (`CoerceToTs`, trace_processor's json_utils.cc);
/// a string that is not a number is refused like `null`. The same in memory and
/// streamed from gzip.
#[test]
fn quoted_numeric_times_are_read_as_numbers() {
    let text = br#"{"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 1, "dur": 2},
        {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 3, "dur": "12"},
        {"ph": "X", "cat": "kernel", "name": "c", "pid": 0, "tid": 7, "ts": "100.5", "dur": 1},
        {"ph": "X", "cat": "kernel", "name": "d", "pid": 0, "tid": 7, "ts": "soon", "dur": 1}
    ]}"#;
    let mut gz = Vec::new();
    {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(&mut gz, flate2::Compression::fast());
        enc.write_all(text).unwrap();
        enc.finish().unwrap();
    }
    for bytes in [&text[..], &gz[..]] {
        let m = read_bytes(bytes, Path::new("s.json"), &ReadOptions::default(), &mut |_, _| {})
            .unwrap();
        // `b` lasts 12 µs = 12,000 ns; `c` starts at 100.5 µs = 100,500 ns; `d` is refused.
        let got: Vec<(&str, i64, i64)> =
            m.gpu.iter().map(|g| (&*g.name, g.ts_ns, g.dur_ns)).collect();
        assert_eq!(got, [("a", 1_000, 2_000), ("b", 3_000, 12_000), ("c", 100_500, 1_000)]);
        let bad = m.warnings.iter().find(|w| w.kind == "bad_timestamp").unwrap();
        assert_eq!(bad.count, 1);
        assert!(
            bad.example.starts_with("`d` (kernel) has a `ts` that is not a number"),
            "{}",
            bad.example
        );
    }
}

#[test]
fn a_bare_array_of_events_is_a_trace() {
    let m = read_bytes(
        br#"[{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":0,"dur":5}]"#,
        Path::new("a.json"),
        &ReadOptions::default(),
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(m.ops.len(), 1);
}

#[test]
fn directories() {
    let (_dir_guard, dir) = tempdir("ranks");
    std::fs::copy(fixtures().join("hta_tiny_plain.json"), dir.join("rank0.json")).unwrap();
    std::fs::copy(fixtures().join("hta_a100_alexnet.json.gz"), dir.join("rank1.json.gz")).unwrap();
    std::fs::write(dir.join("rank2.json"), b"{\"traceEvents\": [").unwrap();
    std::fs::write(dir.join("notes.txt"), b"not a trace").unwrap();
    let out = read_dir(&dir, &ReadOptions::default(), &|_, _| {}).unwrap();
    let names: Vec<String> =
        out.iter().map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["rank0.json", "rank1.json.gz", "rank2.json"]);
    assert_eq!(out[0].1.as_ref().unwrap().ops.len(), 3);
    assert_eq!(out[1].1.as_ref().unwrap().ops.len(), 359);
    let e = out[2].1.as_ref().unwrap_err().to_string();
    assert!(e.contains("rank2.json") && e.contains("ends"), "{e}");

    let (_empty_guard, empty) = tempdir("empty");
    std::fs::write(empty.join("notes.txt"), b"x").unwrap();
    let e = read_dir(&empty, &ReadOptions::default(), &|_, _| {}).unwrap_err();
    assert!(matches!(e, TraceError::NoTraces { .. }), "{e}");
    assert!(e.to_string().contains("no traces in this directory"), "{e}");
}

#[test]
fn missing_file_is_an_io_error() {
    let e =
        read_path(Path::new("/nonexistent/trace.json"), &ReadOptions::default(), &mut |_, _| {})
            .unwrap_err();
    assert!(matches!(e, TraceError::Io { .. }));
    assert!(e.to_string().starts_with("cannot read /nonexistent/trace.json"), "{e}");
}

#[test]
fn errors_inside_strings_point_at_the_bad_byte() {
    // `{"traceEvents": [` is bytes 0-16; `{"name": "a\q` puts `q` at byte 29.
    let e = err_of(br#"{"traceEvents": [{"name": "a\q"}]}"#);
    let TraceError::Json { offset, line, column, message, .. } = e else { panic!() };
    assert_eq!((offset, line, column), (29, 1, 30), "{message}");
    assert!(message.contains("escape"), "{message}");
}

mod never_panics {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Vec<u8> {
        std::fs::read(fixtures().join("handmade/nesting_graph.json")).unwrap()
    }

    fn try_read(bytes: &[u8], threads: usize) {
        let opts = ReadOptions { threads };
        // Ok or Err, both fine; a panic fails the test.
        let _ = read_bytes(bytes, Path::new("p.json"), &opts, &mut |_, _| {});
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn truncations(cut in 0usize..6000) {
            let s = sample();
            try_read(&s[..cut.min(s.len())], 1);
        }

        #[test]
        fn byte_flips(flips in proptest::collection::vec((0usize..6000, any::<u8>()), 1..8)) {
            let mut s = sample();
            for (i, b) in flips {
                let n = s.len();
                s[i % n] = b;
            }
            try_read(&s, 2);
        }

        #[test]
        fn random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            try_read(&bytes, 1);
            let mut gz = vec![0x1f, 0x8b];
            gz.extend_from_slice(&bytes);
            try_read(&gz, 1);
        }

        #[test]
        fn json_like_noise(parts in proptest::collection::vec(
            prop_oneof![
                Just("{".to_string()), Just("}".to_string()), Just("[".to_string()),
                Just("]".to_string()), Just(",".to_string()), Just(":".to_string()),
                Just("\"traceEvents\"".to_string()), Just("\"ph\"".to_string()),
                Just("\"X\"".to_string()), Just("\"cat\"".to_string()), Just("\"kernel\"".to_string()),
                Just("\"ts\"".to_string()), Just("\"dur\"".to_string()), Just("\"args\"".to_string()),
                Just("-1.5e400".to_string()), Just("18446744073709551616".to_string()),
                Just("null".to_string()), Just("\"\\u0000\"".to_string()), Just("\n  ".to_string()),
                (0i64..1000).prop_map(|n| n.to_string()),
            ],
            0..60,
        )) {
            let text = format!("{{\"traceEvents\": [{}", parts.concat());
            try_read(text.as_bytes(), 1);
            try_read(parts.concat().as_bytes(), 1);
        }
    }
}

//! One roofline engine: the same FLOPs, bytes, time and roofs give the same bound and
//! attainment through `analyze`'s path ([`analysis::analyze`]), `trace`'s per-op path
//! ([`trace::tables::category_tables`], the GEMM table row of an `aten::mm` call) and
//! the bare-number path ([`roofline::place`], for readers with counted FLOPs and bytes).
//!
//! The oracle is hand arithmetic from the NVIDIA H100 SXM5 datasheet figures (dense BF16
//! tensor-core 989.4 TFLOP/s, HBM3 3.35 TB/s): a BF16 M×N×K GEMM does 2·M·N·K FLOPs and
//! moves (M·K + K·N + M·N)·2 bytes; floor = max(FLOPs / peak, bytes / bandwidth);
//! attainment = floor / time; balanced within ±20% of the ridge 989.4e12 / 3.35e12.
//!
//! `counters` is the fourth leg: the same GEMM as an Nsight Compute dispatch whose
//! counters say the FLOPs (`sm__ops_path_tensor_src_bf16_dst_fp32.sum`), the DRAM bytes
//! (`dram__bytes_read.sum` + `dram__bytes_write.sum`) and the duration.

use rooftop_core::analysis::{analyze, KernelRequest};
use rooftop_core::counters::{
    BoundBasis, CounterFormat, CounterSet, CounterSource, DeviceInfo, Dispatch,
};
use rooftop_core::device::{Catalog, DeviceSpec};
use rooftop_core::ops::gemm::GemmSpec;
use rooftop_core::ops::{OpClass, Work};
use rooftop_core::roofline::{place, Bound, RoofRates, RooflineError, Unclassified};
use rooftop_core::trace::model::{CpuOp, Dims, GpuEvent, GpuKind, OpArgs, TraceModel};
use rooftop_core::trace::tables::category_tables;
use rooftop_core::units::{ExecUnit, Precision};

const PEAK_FLOPS: f64 = 989.4e12;
const PEAK_BW: f64 = 3.35e12;

struct Case {
    n: u64,
    time_ns: u64,
    bound: Bound,
}

/// Cubic GEMMs: intensity n/3 FLOP/B against a 295.3 FLOP/B ridge.
const CASES: [Case; 3] = [
    // 42.7 FLOP/B: memory-bound.
    Case { n: 128, time_ns: 2_000, bound: Bound::Memory },
    // 300 FLOP/B, 1.6% above the ridge: balanced.
    Case { n: 900, time_ns: 3_000, bound: Bound::Balanced },
    // 1365 FLOP/B: compute-bound.
    Case { n: 4096, time_ns: 200_000, bound: Bound::Compute },
];

fn h100() -> DeviceSpec {
    Catalog::builtin().lookup("h100-sxm").expect("h100-sxm is in the catalog").clone()
}

/// Hand arithmetic: (FLOPs, bytes, bound, attainment %).
fn oracle(c: &Case) -> (f64, f64, Bound, f64) {
    let n = c.n as f64;
    let flops = 2.0 * n * n * n;
    let bytes = 3.0 * n * n * 2.0;
    let ridge = PEAK_FLOPS / PEAK_BW;
    let ai = flops / bytes;
    let bound = if ai < 0.8 * ridge {
        Bound::Memory
    } else if ai > 1.2 * ridge {
        Bound::Compute
    } else {
        Bound::Balanced
    };
    let floor = (flops / PEAK_FLOPS).max(bytes / PEAK_BW);
    (flops, bytes, bound, floor / (c.time_ns as f64 * 1e-9) * 100.0)
}

/// A trace of one `aten::mm` call (BF16, M = N = K = n) that launched one kernel of
/// `time_ns`.
fn mm_trace(n: i64, time_ns: i64) -> TraceModel {
    let bf = "c10::BFloat16".to_string();
    let args = OpArgs {
        input_dims: vec![Dims::Tensor(vec![n, n]), Dims::Tensor(vec![n, n])],
        input_types: vec![bf.clone(), bf],
        input_strides: vec![Dims::Tensor(vec![n, 1]), Dims::Tensor(vec![n, 1])],
        concrete_inputs: vec![String::new(), String::new()],
    };
    let op = CpuOp {
        name: "aten::mm".into(),
        ts_ns: 0,
        dur_ns: time_ns + 10_000,
        pid: 1,
        tid: 1,
        args: args.into(),
        launched: vec![0],
        ..CpuOp::default()
    };
    let kernel = GpuEvent {
        kind: GpuKind::Kernel,
        name: "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64".into(),
        ts_ns: 5_000,
        dur_ns: time_ns,
        stream: 7,
        op: Some(0),
        ..GpuEvent::default()
    };
    TraceModel { ops: vec![op], gpu: vec![kernel], ..TraceModel::default() }
}

/// The counters report of one Nsight Compute dispatch with `flops` BF16 tensor-core
/// operations, `bytes` of DRAM traffic (read and written halves) and `time_ns`, on the
/// catalog H100 SXM.
fn counters_of(flops: f64, bytes: f64, time_ns: u64) -> rooftop_core::counters::CounterReport {
    let counters = [
        ("sm__ops_path_tensor_src_bf16_dst_fp32.sum", flops),
        ("dram__bytes_read.sum", bytes / 2.0),
        ("dram__bytes_write.sum", bytes / 2.0),
    ];
    let set = CounterSet {
        source: CounterSource {
            format: CounterFormat::NcuRaw,
            files: vec!["gemm.csv".to_string()],
            tool_version: None,
            notes: Vec::new(),
        },
        device: DeviceInfo::default(),
        measured_roofs: Vec::new(),
        dispatches: vec![Dispatch {
            id: 0,
            name: "gemm".into(),
            duration_ns: Some(time_ns as f64),
            counters: counters.iter().map(|(k, v)| ((*k).into(), *v)).collect(),
            ..Dispatch::default()
        }],
        aggregates: Vec::new(),
        activity: None,
    };
    rooftop_core::counters::analyze(set, Some(&h100()))
}

#[test]
fn datasheet_roofs_are_the_catalog_roofs() {
    let d = h100();
    let peak = d.peak(Precision::Bf16, ExecUnit::Matrix).unwrap().tflops;
    assert_eq!((peak * 1e12, d.peak_bw_gbs * 1e9), (PEAK_FLOPS, PEAK_BW));
}

#[test]
fn analyze_trace_and_bare_numbers_agree_with_the_hand_arithmetic() {
    let dev = h100();
    for c in &CASES {
        let (flops, bytes, bound, attainment) = oracle(c);
        assert_eq!(bound, c.bound, "the case table and the oracle disagree for n = {}", c.n);

        // `analyze`: a GEMM work model and a measured time.
        let work = GemmSpec::new(c.n, c.n, c.n, Precision::Bf16).work().unwrap();
        let mut req = KernelRequest::new(work);
        req.time_ns = Some(c.time_ns);
        let a = analyze(&dev, &req).unwrap();
        assert_eq!((a.roofline.flops, a.roofline.bytes), (flops, bytes), "n = {}", c.n);
        assert_eq!(a.roofline.bound, bound, "analyze, n = {}", c.n);
        let att = a.roofline.achieved.as_ref().unwrap().roofline_attainment_pct;
        assert!((att - attainment).abs() < 1e-9, "analyze, n = {}: {att} vs {attainment}", c.n);

        // `trace`: the GEMM table's row for the `aten::mm` call.
        let n = i64::try_from(c.n).unwrap();
        let tables = category_tables(&mm_trace(n, i64::try_from(c.time_ns).unwrap()), Some(&dev));
        let gemm = tables.iter().find(|t| t.name == "GEMM").expect("a GEMM table");
        let row = &gemm.rows[0];
        assert_eq!((row.flops, row.bytes), (Some(flops), Some(bytes)), "trace, n = {}", c.n);
        assert_eq!(row.bound, Some(bound), "trace, n = {}", c.n);
        let att = row.roofline_attainment_pct.unwrap();
        assert!((att - attainment).abs() < 1e-9, "trace, n = {}: {att} vs {attainment}", c.n);

        // `counters`: one dispatch whose counters hold the same numbers.
        let k = &counters_of(flops, bytes, c.time_ns).kernels[0];
        assert_eq!(k.bound, Some(bound), "counters, n = {}", c.n);
        assert_eq!(k.bound_basis, Some(BoundBasis::Roofline), "counters, n = {}", c.n);
        let att = k.pct_of_roof.unwrap();
        assert!((att - attainment).abs() < 1e-9, "counters, n = {}: {att} vs {attainment}", c.n);

        // Bare numbers against bare roofs.
        let roofs = RoofRates { flops_per_s: Some(PEAK_FLOPS), bytes_per_s: PEAK_BW };
        let p = place(flops, bytes, Some(c.time_ns as f64 * 1e-9), roofs).unwrap();
        assert_eq!(p.bound, bound, "place, n = {}", c.n);
        let att = p.attainment_pct.unwrap();
        assert!((att - attainment).abs() < 1e-9, "place, n = {}: {att} vs {attainment}", c.n);
    }
}

#[test]
fn work_with_no_bound_is_unknown_not_memory() {
    // No FLOPs and no bytes: no bound on either path, an error that says why (it used to
    // be "memory", with 0% attainment and the whole time "at stake").
    let work = Work {
        class: OpClass::Copy,
        shape: "0 B".to_string(),
        flops: 0.0,
        precision: Precision::Bf16,
        unit: ExecUnit::Vector,
        bytes_read: 0.0,
        bytes_written: 0.0,
        flops_formula: String::new(),
        bytes_formula: String::new(),
        assumptions: Vec::new(),
    };
    let mut req = KernelRequest::new(work);
    req.time_ns = Some(1_000);
    let e = analyze(&h100(), &req).unwrap_err();
    assert!(e.to_string().starts_with("no bound: the arithmetic intensity"), "{e}");
    let roofs = RoofRates { flops_per_s: Some(PEAK_FLOPS), bytes_per_s: PEAK_BW };
    assert_eq!(
        place(0.0, 0.0, Some(1e-6), roofs),
        Err(RooflineError::Unclassified(Unclassified::Intensity))
    );
}

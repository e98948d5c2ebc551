use super::*;
use crate::counters::{CounterFormat, CounterSource, DeviceInfo, MeasuredRoof};
use crate::ops::{OpClass, Work};
use crate::units::Precision;

fn set(dispatches: Vec<Dispatch>) -> CounterSet {
    CounterSet {
        source: CounterSource {
            format: CounterFormat::NcuRaw,
            files: vec!["x.csv".to_string()],
            tool_version: None,
            notes: Vec::new(),
        },
        device: DeviceInfo::default(),
        measured_roofs: Vec::new(),
        dispatches,
        aggregates: Vec::new(),
        activity: None,
    }
}

fn dispatch(name: &str, id: u64, dur_ns: Option<f64>, counters: &[(&str, f64)]) -> Dispatch {
    Dispatch {
        id,
        name: name.into(),
        duration_ns: dur_ns,
        counters: counters.iter().map(|(k, v)| ((*k).into(), *v)).collect(),
        ..Dispatch::default()
    }
}

fn copy_kernel(id: u64, dur_ns: f64, bytes: f64) -> Dispatch {
    dispatch(
        "copy",
        id,
        Some(dur_ns),
        &[("dram__bytes_read.sum", bytes), ("dram__bytes_write.sum", bytes)],
    )
}

fn dev(id: &str) -> DeviceSpec {
    Catalog::builtin().lookup(id).expect("catalog device").clone()
}

/// An fp32 kernel: `fma` FFMA thread instructions (2 FLOP each), `bytes` DRAM bytes read.
fn fp32_kernel(name: &str, fma: f64, bytes: f64, ns: f64, extra: &[(&str, f64)]) -> Dispatch {
    let mut c = vec![
        ("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 0.0),
        ("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", 0.0),
        ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", fma),
        ("dram__bytes_read.sum", bytes),
        ("dram__bytes_write.sum", 0.0),
    ];
    c.extend_from_slice(extra);
    dispatch(name, 0, Some(ns), &c)
}

#[test]
fn measured_roofs_win_and_units_convert() {
    let mut s = set(Vec::new());
    for (name, kind, precision, value) in
        [("HBMBw", "hbm", None, 1_000.0), ("MFMAF16Flops", "mfma", Some("fp16"), 500_000.0)]
    {
        s.measured_roofs.push(MeasuredRoof {
            name: name.to_string(),
            kind: kind.to_string(),
            precision: precision.map(str::to_string),
            value,
            low: None,
            high: None,
        });
    }
    let r = analyze(s, None).roofs;
    assert_eq!(r.source, crate::counters::RoofSource::Measured);
    assert_eq!(r.bandwidth(MemLevel::Dram), Some(1_000.0));
    // 500,000 GFLOP/s = 500 TFLOP/s.
    assert_eq!(r.compute(ExecUnit::Matrix, Precision::Fp16).map(|c| c.tflops), Some(500.0));
}

#[test]
fn no_device_no_attainment() {
    let rep = analyze(set(vec![copy_kernel(0, 4_000.0, 2e6)]), None);
    assert_eq!(rep.roofs.source, crate::counters::RoofSource::None);
    assert!(rep.roofs.bandwidth.is_empty());
    let k = &rep.kernels[0];
    assert_eq!(k.pct_of_roof, None);
    assert_eq!(k.bound, None);
    assert!(k.bound_reason.contains("not FLOPs"), "{}", k.bound_reason);
    // FLOPs and bytes counted, but no roofs: still no bound, and the reason says why.
    let rep = analyze(set(vec![fp32_kernel("k", 1e6, 1e6, 1e3, &[])]), None);
    assert_eq!(rep.kernels[0].bound, None);
    assert!(rep.kernels[0].bound_reason.contains("no DRAM roof"));
}

#[test]
fn aggregate_means_and_weights() {
    // Two dispatches: 1 ms with 60% hit, 3 ms with 20% hit → weighted 30%.
    let one_ms = Derived {
        duration_ns: Some(1e6),
        dram_bytes_read: Some(100.0),
        dram_bytes_written: Some(50.0),
        l2_hit_rate_pct: Some(60.0),
        ..Derived::default()
    };
    let three_ms = Derived {
        duration_ns: Some(3e6),
        dram_bytes_read: Some(300.0),
        dram_bytes_written: Some(150.0),
        l2_hit_rate_pct: Some(20.0),
        ..Derived::default()
    };
    let agg = aggregate(&[&one_ms, &three_ms]);
    assert_eq!(agg.duration_ns, Some(2e6));
    assert_eq!(agg.dram_bytes_read, Some(200.0));
    assert_eq!(agg.dram_bytes_written, Some(100.0));
    assert!((agg.l2_hit_rate_pct.unwrap_or(0.0) - 30.0).abs() < 1e-12);
    // A quantity only one dispatch has is the mean of the dispatches that have it.
    let no_bytes = Derived { duration_ns: Some(1e6), ..Derived::default() };
    assert_eq!(aggregate(&[&one_ms, &no_bytes]).dram_bytes_read, Some(100.0));
    // A dispatch without a duration is not weighted as if it lasted 1 ns: its hit rate
    // does not enter the weighted mean of those that have one.
    let no_time_90 = Derived { l2_hit_rate_pct: Some(90.0), ..Derived::default() };
    assert_eq!(aggregate(&[&one_ms, &no_time_90]).l2_hit_rate_pct, Some(60.0));
    // None has a duration: the plain mean, and a formula line says so.
    let no_time_10 = Derived { l2_hit_rate_pct: Some(10.0), ..Derived::default() };
    let agg = aggregate(&[&no_time_90, &no_time_10]);
    assert_eq!(agg.l2_hit_rate_pct, Some(50.0));
    assert!(agg.formulas.iter().any(|f| f.contains("plain means")));
}

#[test]
fn grouping_and_rates_without_roofs() {
    // 2 MB read + 2 MB written in 4 µs → 1000 GB/s per dispatch.
    let s = set(vec![copy_kernel(0, 4_000.0, 2e6), copy_kernel(1, 4_000.0, 2e6)]);
    let rep = analyze(s, None);
    assert_eq!(rep.dispatch_records().all().len(), 2);
    assert_eq!(rep.kernels.len(), 1);
    let k = &rep.kernels[0];
    assert_eq!(k.count, 2);
    assert_eq!(k.total_duration_ns, Some(8_000.0));
    assert_eq!(k.dram_bytes_read, Some(2e6));
    assert!((k.achieved_gbs.unwrap_or(0.0) - 1_000.0).abs() < 1e-9);
}

#[test]
fn counters_and_analyze_give_one_classification() {
    // H100 SXM: fp32 vector 66.9 TFLOP/s over 3350 GB/s → ridge 19.97 FLOP/B. Work at
    // 1.1× the ridge is balanced (±20% band) in both paths, where the old counters
    // classification (no band) said compute-bound.
    let h100 = dev("h100-sxm");
    let roof = h100.peak(Precision::Fp32, ExecUnit::Vector).expect("fp32 peak").tflops;
    let ridge = roof * 1e12 / (h100.peak_bw_gbs * 1e9);
    let bytes = 1.0e9;
    let flops = 1.1 * ridge * bytes;
    let ns = 1_000_000.0;
    let work = Work {
        class: OpClass::Elementwise,
        shape: String::new(),
        flops,
        precision: Precision::Fp32,
        unit: ExecUnit::Vector,
        bytes_read: bytes,
        bytes_written: 0.0,
        flops_formula: String::new(),
        bytes_formula: String::new(),
        assumptions: Vec::new(),
    };
    let a = crate::roofline::roofline(&work, &h100, Some(ns as u64), &[]).expect("roofline");
    let rep = analyze(set(vec![fp32_kernel("k", flops / 2.0, bytes, ns, &[])]), Some(&h100));
    let k = &rep.kernels[0];
    assert_eq!(a.bound, Bound::Balanced);
    assert_eq!(k.bound, Some(a.bound));
    assert_eq!(k.bound_basis, Some(BoundBasis::Roofline));
    let att = a.achieved.map(|x| x.roofline_attainment_pct);
    assert!((k.pct_of_roof.unwrap_or(0.0) - att.unwrap_or(1.0)).abs() < 1e-9, "{k:?}");
    // By hand: flops / peak = 1.1 · ridge · bytes / peak = 1.1 · bytes / bw, above
    // bytes / bw, so the floor is 1.1 · 1e9 B / 3350e9 B/s, over 1 ms.
    let by_hand = 1.1 * bytes / (h100.peak_bw_gbs * 1e9) / 1e-3 * 100.0;
    assert!((k.pct_of_roof.unwrap_or(0.0) - by_hand).abs() < 1e-9);
}

#[test]
fn no_flop_counter_means_no_compute_roof_and_no_guess() {
    // DRAM bytes only, no Speed of Light: no bound, no compute roof (the old code used
    // the fp32 vector roof as if FLOPs had been counted).
    let rep = analyze(
        set(vec![dispatch("k", 0, Some(1e6), &[("dram__bytes.sum", 1e9)])]),
        Some(&dev("a100-sxm-80gb")),
    );
    let k = &rep.kernels[0];
    assert_eq!(k.compute_roof, None);
    assert_eq!(k.bound, None);
    assert!(k.bound_reason.contains("not FLOPs"), "{}", k.bound_reason);
    // 1 GB in 1 ms = 1000 GB/s achieved.
    assert!((k.achieved_gbs.unwrap_or(0.0) - 1000.0).abs() < 1e-9);
}

#[test]
fn speed_of_light_decides_without_counters_and_overrides_compute() {
    let a100 = dev("a100-sxm-80gb");
    // The A100 details page of the fixtures: SM 5.27%, DRAM 46.99%, L1/TEX 33.56%,
    // L2 63.55% → memory-bound by L2 (5.27 < 0.8 × 63.55).
    let sol = [
        ("sm__throughput.avg.pct_of_peak_sustained_elapsed", 5.27),
        ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 46.99),
        ("l1tex__throughput.avg.pct_of_peak_sustained_active", 33.56),
        ("lts__throughput.avg.pct_of_peak_sustained_elapsed", 63.55),
    ];
    let rep = analyze(set(vec![dispatch("k", 0, Some(715_580.0), &sol)]), Some(&a100));
    let k = &rep.kernels[0];
    assert_eq!((k.bound, k.bound_basis), (Some(Bound::Memory), Some(BoundBasis::SpeedOfLight)));
    assert_eq!(k.pct_of_roof, Some(63.55));
    assert!(k.findings.iter().any(|f| f.id == "counters.cache_bound"), "{:?}", k.findings);
    // 20 FLOP/B, above the fp32 ridge (19.5 TFLOP/s over 2039 GB/s = 9.56 FLOP/B), but
    // L1/TEX at 71% against an SM at 20%: never compute-bound.
    let busy = [
        ("sm__throughput.avg.pct_of_peak_sustained_elapsed", 20.0),
        ("l1tex__throughput.avg.pct_of_peak_sustained_active", 71.0),
    ];
    let d = fp32_kernel("k", 10.0 * 1e6, 1e6, 1e5, &busy);
    let rep = analyze(set(vec![d]), Some(&a100));
    let k = &rep.kernels[0];
    assert_eq!(k.bound, Some(Bound::Memory), "{}", k.bound_reason);
    assert_eq!(k.bound_basis, Some(BoundBasis::SpeedOfLight));
    assert!(k.bound_reason.contains("L1/TEX"), "{}", k.bound_reason);
    assert!(k.findings.iter().all(|f| f.id != "counters.compute_low"));
    assert!(k.findings.iter().all(|f| !f.recommendation.contains("tensor cores (")));
}

#[test]
fn compute_advice_fits_the_precision() {
    // fp32 work far above the ridge at low attainment (2 TFLOP in 1 s): no "use the
    // tensor cores" on a V100 (no TF32), TF32 named as such on an A100.
    let d = || fp32_kernel("k", 1e12, 1e6, 1e9, &[]);
    let rep = analyze(set(vec![d()]), Some(&dev("v100-sxm")));
    let f = rep.kernels[0].findings.iter().find(|f| f.id == "counters.compute_low").cloned();
    let rec = f.map(|f| f.recommendation).unwrap_or_default();
    assert!(rec.contains("do not run FP32"), "{rec}");
    assert!(!rec.contains("TF32"), "{rec}");
    let rep = analyze(set(vec![d()]), Some(&dev("a100-sxm-80gb")));
    let f = rep.kernels[0].findings.iter().find(|f| f.id == "counters.compute_low").cloned();
    let rec = f.map(|f| f.recommendation).unwrap_or_default();
    assert!(rec.contains("TF32 tensor cores") && rec.contains("10-bit mantissa"), "{rec}");
}

#[test]
fn communication_kernels_get_communication_advice() {
    let d = dispatch(
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        0,
        Some(1e6),
        &[("launch__waves_per_multiprocessor", 0.25)],
    );
    let rep = analyze(set(vec![d]), Some(&dev("h100-sxm")));
    let ids: Vec<&str> = rep.kernels[0].findings.iter().map(|f| f.id).collect();
    assert_eq!(ids, ["counters.communication"]);
}

#[test]
fn several_candidates_give_only_shared_roofs() {
    let (a, b) = (dev("a100-sxm-40gb"), dev("a100-sxm-80gb"));
    let rep = analyze_on(set(vec![copy_kernel(0, 1e6, 1e9)]), &[&a, &b]);
    let r = &rep.roofs;
    // 1555 vs 2039 GB/s: no DRAM roof; the compute peaks are the same part's.
    assert_eq!(r.bandwidth(MemLevel::Dram), None);
    assert_eq!(r.compute(ExecUnit::Vector, Precision::Fp32).map(|c| c.tflops), Some(19.5));
    assert_eq!(r.candidates, ["a100-sxm-40gb", "a100-sxm-80gb"]);
    assert!(r.notes.iter().any(|n| n.contains("1555") && n.contains("2039")), "{:?}", r.notes);
    assert_eq!(rep.kernels[0].pct_of_roof, None);
}

#[test]
fn tail_and_small_grid_findings() {
    let mk = |w: f64| {
        let d = dispatch("k", 0, Some(1e6), &[("launch__waves_per_multiprocessor", w)]);
        analyze(set(vec![d]), None).kernels[0].findings.clone()
    };
    assert!(mk(0.25).iter().any(|f| f.id == "counters.grid_small"));
    assert!(mk(2.1).iter().any(|f| f.id == "counters.tail_effect"));
    assert!(mk(2.9).iter().all(|f| f.id != "counters.tail_effect"));
    assert!(mk(4.0).is_empty());
}

/// A traced launch (no counters) of 256 threads × 32 registers.
fn traced(id: u64, blocks: u64, dur_ns: Option<f64>) -> Dispatch {
    Dispatch {
        grid: Some([blocks, 1, 1]),
        block: Some([256, 1, 1]),
        vgprs: Some(32),
        shared_bytes: Some(0),
        wave_size: Some(32),
        ..dispatch("k", id, dur_ns, &[])
    }
}

#[test]
fn launches_of_one_shape_keep_their_own_durations() {
    // H100 SXM: 132 SMs, 2048 threads and 64 K registers per SM. 256 threads × 32
    // registers = 8 K registers per block → 8 resident blocks (2048 threads): 100%
    // theoretical occupancy; 1056 blocks = 132 × 8 → 1.0 wave, 528 blocks → 0.5.
    let h100 = dev("h100-sxm");
    let ds = vec![
        traced(0, 1056, Some(1000.0)),
        traced(1, 1056, Some(3000.0)),
        traced(2, 1056, None),
        traced(3, 528, Some(2000.0)),
    ];
    let all = analyze_on(set(ds), &[&h100]);
    let records = all.dispatch_records().all();
    let durations: Vec<Option<f64>> = records.iter().map(|r| r.duration_ns).collect();
    assert_eq!(durations, [Some(1000.0), Some(3000.0), None, Some(2000.0)]);
    assert!(records[2].missing.iter().any(|m| m.quantity == "duration_ns"));
    assert!(!records[1].missing.iter().any(|m| m.quantity == "duration_ns"));
    let waves: Vec<Option<f64>> = records.iter().map(|r| r.derived.grid_waves).collect();
    assert_eq!(waves, [Some(1.0), Some(1.0), Some(1.0), Some(0.5)]);
    assert_eq!(records[0].derived.theoretical_occupancy_pct, Some(100.0));
    let k = &all.kernels[0];
    assert_eq!(k.count, 4);
    assert_eq!(k.duration_ns, Some(2000.0)); // (1000 + 3000 + 2000) / 3 timed launches
    assert_eq!(k.derived.grid_waves, Some(0.875)); // (1 + 1 + 1 + 0.5) / 4
    assert_eq!(k.grid, None); // the grids differ
    assert_eq!(k.block, Some([256, 1, 1]));
}

/// A kernel's total is the sum of the durations that were measured, never the mean of
/// those times the number of dispatches: 3 dispatches, 2 timed at 100 and 250 ns, give
/// 350 ns (not 3 × 175 = 525), and the untimed one is said.
#[test]
fn kernel_total_sums_only_measured_durations() {
    let s = set(vec![
        copy_kernel(0, 100.0, 64.0),
        dispatch("copy", 1, None, &[("dram__bytes_read.sum", 64.0)]),
        copy_kernel(2, 250.0, 64.0),
    ]);
    let r = analyze(s, None);
    let k = &r.kernels[0];
    assert_eq!(k.count, 3);
    assert_eq!(k.duration_ns, Some(175.0));
    assert_eq!(k.total_duration_ns, Some(350.0));
    let m = k.missing.iter().find(|m| m.quantity == "total_duration_ns").expect("said");
    assert!(m.needs.contains("1 of the 3 dispatches"), "{}", m.needs);
    // Every dispatch timed: nothing to say, and the total is their sum (100 + 250).
    let r = analyze(set(vec![copy_kernel(0, 100.0, 64.0), copy_kernel(1, 250.0, 64.0)]), None);
    assert_eq!(r.kernels[0].total_duration_ns, Some(350.0));
    assert!(r.kernels[0].missing.iter().all(|m| m.quantity != "total_duration_ns"));
    // None timed: no total.
    let r = analyze(set(vec![dispatch("copy", 0, None, &[("dram__bytes_read.sum", 64.0)])]), None);
    assert_eq!(r.kernels[0].total_duration_ns, None);
}

/// Tensor instructions without tensor op counters: the record's FLOPs, intensity,
/// bound and attainment are missing (not "0 FLOPs: memory-bound"), and the reason
/// names the counters.
#[test]
fn incomplete_flops_give_no_bound() {
    let k =
        fp32_kernel("gemm", 0.0, 1e8, 1e5, &[("sm__inst_executed_pipe_tensor.sum", 2_097_152.0)]);
    let r = analyze(set(vec![k]), Some(&dev("h200-sxm")));
    let k = &r.kernels[0];
    assert_eq!(k.flops, None);
    assert_eq!(k.arithmetic_intensity, None);
    assert_eq!(k.achieved_tflops, None);
    assert_eq!(k.bound, None);
    assert_eq!(k.pct_of_roof, None);
    assert!(k.bound_reason.contains("sm__ops_path_tensor_src_"), "{}", k.bound_reason);
    assert!(k.roofline.iter().all(|p| p.arithmetic_intensity.is_none()));
    assert!(k.missing.iter().any(|m| m.quantity == "flops"));
}

#[test]
fn the_balanced_band_is_said_only_for_a_balanced_bound() {
    // H100 SXM fp32 vector: ridge = peak / DRAM bandwidth (≈ 20 FLOP/B). Work at 0.5×,
    // 1.1× and 2× the ridge is memory-bound, balanced (within ±20%) and compute-bound.
    let h100 = dev("h100-sxm");
    let roof = h100.peak(Precision::Fp32, ExecUnit::Vector).expect("fp32 peak").tflops;
    let ridge = roof * 1e12 / (h100.peak_bw_gbs * 1e9);
    let bytes = 1.0e9;
    for (x, bound) in [(0.5, Bound::Memory), (1.1, Bound::Balanced), (2.0, Bound::Compute)] {
        let flops = x * ridge * bytes;
        let rep = analyze(set(vec![fp32_kernel("k", flops / 2.0, bytes, 1e6, &[])]), Some(&h100));
        let k = &rep.kernels[0];
        assert_eq!(k.bound, Some(bound), "{}", k.bound_reason);
        assert!(k.bound_reason.contains("ridge"), "{}", k.bound_reason);
        assert_eq!(
            k.bound_reason.contains("(balanced within ±20%)"),
            bound == Bound::Balanced,
            "{bound:?}: {}",
            k.bound_reason
        );
    }
    // Speed of Light: SM 5.27% against L2 63.55% is memory (5.27 < 0.8 × 63.55); SM 50%
    // against L2 55% is balanced (50 ≥ 0.8 × 55 = 44).
    let a100 = dev("a100-sxm-80gb");
    for (sm, l2, bound) in [(5.27, 63.55, Bound::Memory), (50.0, 55.0, Bound::Balanced)] {
        let sol = [
            ("sm__throughput.avg.pct_of_peak_sustained_elapsed", sm),
            ("lts__throughput.avg.pct_of_peak_sustained_elapsed", l2),
        ];
        let rep = analyze(set(vec![dispatch("k", 0, Some(1e6), &sol)]), Some(&a100));
        let k = &rep.kernels[0];
        assert_eq!(k.bound, Some(bound), "{}", k.bound_reason);
        assert_eq!(
            k.bound_reason.contains("(balanced within ±20%)"),
            bound == Bound::Balanced,
            "{}",
            k.bound_reason
        );
    }
}

#[test]
fn an_impossible_speed_of_light_decides_nothing() {
    // The A100 details page's figures decide memory by L2 (see
    // speed_of_light_decides_without_counters_and_overrides_compute); with its DRAM
    // Throughput at 246.99% of peak, which no unit can run at, nothing is decided from
    // them: no bound, no % of roof, no finding drawn from the Speed of Light.
    let a100 = dev("a100-sxm-80gb");
    let sol = [
        ("sm__throughput.avg.pct_of_peak_sustained_elapsed", 5.27),
        ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 246.99),
        ("l1tex__throughput.avg.pct_of_peak_sustained_active", 33.56),
        ("lts__throughput.avg.pct_of_peak_sustained_elapsed", 63.55),
    ];
    let rep = analyze(set(vec![dispatch("k", 0, Some(715_580.0), &sol)]), Some(&a100));
    let k = &rep.kernels[0];
    assert_eq!((k.bound, k.bound_basis, k.pct_of_roof), (None, None, None));
    assert!(k.bound_reason.contains("\"DRAM Throughput\" is 247%"), "{}", k.bound_reason);
    assert!(k.findings.iter().all(|f| f.id != "counters.cache_bound"), "{:?}", k.findings);
    assert!(k.missing.iter().any(|m| m.quantity == "speed_of_light"));
}

/// Past [`DERIVED_AHEAD`] dispatches the values are derived ahead on the pool, a block at
/// a time: each record still gets its own dispatch's values, across the blocks' edges,
/// with counter-less launches between them. 2,600 copies: dispatch i reads and writes
/// i + 1 bytes each (DRAM bytes 2(i + 1)); every 7th has no counters (bytes missing).
#[test]
fn values_derived_ahead_stay_with_their_dispatches() {
    let n = 2 * DERIVED_AHEAD + 552;
    let ds: Vec<Dispatch> = (0..n as u64)
        .map(|i| {
            if i % 7 == 0 {
                traced(i, 64, Some(10.0))
            } else {
                copy_kernel(i, 100.0, (i + 1) as f64)
            }
        })
        .collect();
    let r = analyze_on(set(ds), &[]);
    let records = r.dispatch_records().all();
    assert_eq!(records.len(), n);
    for (i, d) in records.iter().enumerate() {
        assert_eq!(d.id, Some(i as u64));
        let want = (i % 7 != 0).then(|| 2.0 * (i + 1) as f64);
        assert_eq!(d.derived.dram_bytes(), want, "dispatch {i}");
    }
    // The copies' kernel: the mean of 2(i + 1) over the i not divisible by 7.
    let copies: Vec<f64> = (0..n).filter(|i| i % 7 != 0).map(|i| 2.0 * (i + 1) as f64).collect();
    let mean = copies.iter().sum::<f64>() / copies.len() as f64;
    let copy = r.kernels.iter().find(|k| k.name == "copy").expect("the copy kernel");
    assert_eq!(copy.count, copies.len() as u64);
    let got = copy.derived.dram_bytes().expect("bytes");
    assert!((got - mean).abs() <= 1e-12 * mean, "{got} against {mean}");
}

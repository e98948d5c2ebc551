//! The Nsight Compute and Nsight Systems readers, and the NVIDIA formulas applied to what
//! they read, against independent oracles:
//! - the real `ncu --metrics` export `tests/fixtures/ncu/a100_polybench_gemm_metrics.csv`
//!   (expected values are the file's own raw values, read by eye and written here, with
//!   the digit grouping removed by hand);
//! - hand-made files in the documented layouts (`tests/fixtures/{ncu,nsys}/handmade`,
//!   see the READMEs there), whose expected values are the written values converted by
//!   hand arithmetic in the comments below;
//! - malformed inputs, each checked for one sentence naming the file, line and column.

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use rooftop_core::counters::nvidia;
use rooftop_core::counters::{CounterFormat, CounterSet, Derived, Dispatch};
use rooftop_ingest::counters::{ncu, nsys, CounterError};
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn read_ncu(rel: &str) -> CounterSet {
    let p = fixtures().join("ncu").join(rel);
    ncu::read(&p).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn read_nsys(rel: &str) -> CounterSet {
    let p = fixtures().join("nsys").join(rel);
    nsys::read(&p).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Equal to 12 significant digits (the readers multiply by powers of ten).
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
}

#[track_caller]
fn assert_close(a: Option<f64>, b: f64) {
    let a = a.unwrap_or_else(|| panic!("expected {b}, found nothing"));
    assert!(close(a, b), "expected {b}, found {a}");
}

#[track_caller]
fn counter(d: &Dispatch, name: &str, expected: f64) {
    assert_close(d.counter(name), expected);
}

fn derive(set: &CounterSet, i: usize) -> Derived {
    nvidia::derive(&set.dispatches[i], &set.device)
}

fn missing(r: &Derived, quantity: &str) -> bool {
    r.missing.iter().any(|m| m.quantity == quantity)
}

fn has_note(set: &CounterSet, needle: &str) -> bool {
    set.source.notes.iter().any(|n| n.contains(needle))
}

// ---------------------------------------------------------------------------------------
// The real --metrics export (A100, 2022).

const GEMM: &str = "gemm_kernel(int, int, int, float, float, float*, float*, float*)";

#[test]
fn real_metrics_file_runs_names_and_skipped_lines() {
    let set = read_ncu("a100_polybench_gemm_metrics.csv");
    assert_eq!(set.source.format, CounterFormat::NcuDetails);
    // 18 header lines (`grep -c '^"ID"'`), each starting a run whose only launch is ID 0.
    assert_eq!(set.dispatches.len(), 18);
    for d in &set.dispatches {
        assert_eq!(d.id, 0);
        assert_eq!(&*d.name, GEMM);
        assert_eq!(d.stream.as_deref(), Some("7"));
    }
    // Metric rows per run, in file order: 35 in all (`grep -c '^"0"'`).
    let per_run: Vec<usize> = set.dispatches.iter().map(|d| d.counters.len()).collect();
    assert_eq!(per_run, [1, 3, 3, 4, 1, 1, 3, 3, 4, 4, 1, 1, 1, 1, 1, 1, 1, 1]);
    assert_eq!(per_run.iter().sum::<usize>(), 35);
    assert!(has_note(&set, "18 runs concatenated"), "{:?}", set.source.notes);
    // 143 lines − 18 headers − 35 rows = 90 (36 `==PROF==` + 54 program output).
    assert!(has_note(&set, "skipped 90 lines"), "{:?}", set.source.notes);
    // The pre-2023 layout has no Device/CC columns: nothing about the device.
    assert_eq!(set.device.arch, None);
    assert_eq!(set.device.name, None);
}

#[test]
fn real_metrics_file_values_and_grouping() {
    let set = read_ncu("a100_polybench_gemm_metrics.csv");
    let d = &set.dispatches;
    counter(&d[0], "sm__ctas_launched.sum", 4096.0); // "4,096"
    counter(&d[1], "l1tex__t_sector_hit_rate.pct", 93.83);
    counter(&d[1], "l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct", 88.89);
    counter(&d[1], "lts__t_request_hit_rate.pct", 99.56);
    counter(&d[2], "sm__sass_inst_executed_op_global.sum", 100_728_832.0);
    counter(&d[2], "sm__sass_inst_executed_op_global_ld.sum", 67_141_632.0);
    counter(&d[2], "sm__sass_inst_executed_op_global_st.sum", 33_587_200.0);
    counter(&d[3], "gpu__cycles_elapsed.max", 2_583_162.0);
    counter(&d[3], "gpu__time_duration.max", 3_311_808.0); // "3,311,808" nsecond
    counter(&d[4], "sm__cycles_active.sum", 263_036_959.0);
    counter(&d[5], "sm__cycles_elapsed.sum", 273_236_542.0);
    counter(&d[7], "sm__inst_executed_pipe_tensor_op_hmma.sum", 32_768.0);
    counter(&d[9], "sm__pipe_tensor_cycles_active.sum", 65_536.0);
    counter(&d[10], "sm__inst_executed.sum", 244_318_208.0);
    counter(&d[16], "sm__pipe_fma_cycles_active.max", 1_849_680.0);
    // ld + st = all global instructions, as the file's own numbers say.
    assert_eq!(67_141_632.0 + 33_587_200.0, 100_728_832.0);
}

#[test]
fn real_metrics_file_derived() {
    let set = read_ncu("a100_polybench_gemm_metrics.csv");
    // Run 4 collected only gpu__time_duration.max; gpu__ has one instance per launch.
    assert_eq!(set.dispatches[3].duration_ns, Some(3_311_808.0));
    let r = derive(&set, 3);
    assert_eq!(r.duration_ns, Some(3_311_808.0));
    assert!(r.formulas.iter().any(|f| f.contains("gpu__time_duration.max")));
    assert!(has_note(&set, "the duration of 1 launches"), "{:?}", set.source.notes);

    // Run 2: L1 sector hit rate as collected; L2 only per request, said so.
    let r = derive(&set, 1);
    assert_eq!(r.l1_hit_rate_pct, Some(93.83));
    assert_eq!(r.l2_hit_rate_pct, Some(99.56));
    assert!(r.formulas.iter().any(|f| f.contains("lts__t_request_hit_rate.pct")));
    assert!(missing(&r, "duration_ns"));

    // Run 8: tensor instruction counts, which are not FLOPs.
    let r = derive(&set, 7);
    assert!(r.flops.matrix.is_empty());
    assert!(r
        .missing
        .iter()
        .any(|m| m.quantity == "flops.matrix" && m.needs.contains("MMA shape")));

    // No run collected DRAM bytes, SASS FLOP counts or occupancy.
    for i in 0..set.dispatches.len() {
        let r = derive(&set, i);
        for q in ["dram_bytes_read", "dram_bytes_written", "flops.vector", "achieved_occupancy_pct"]
        {
            assert!(missing(&r, q), "run {i}: {q} should be missing");
        }
        assert!(r.flops.is_empty());
    }
}

// ---------------------------------------------------------------------------------------
// Hand-made raw page.

#[test]
fn raw_page_units_are_converted() {
    let set = read_ncu("handmade/raw_page.csv");
    assert_eq!(set.source.format, CounterFormat::NcuRaw);
    assert_eq!(set.dispatches.len(), 2);
    let d = &set.dispatches[0];
    counter(d, "dram__bytes_read.sum", 2_048_500.0); // 2048.5 Kbyte × 1000
    counter(d, "dram__bytes_write.sum", 1024.0); // byte
    counter(d, "dram__bytes.sum.per_second", 1.5e9); // 1.5 Gbyte/second
    counter(d, "gpu__time_duration.sum", 123_456.0); // 123.456 usecond × 1000
    counter(d, "l1tex__t_bytes.sum", 8_250_000.0); // 8.25 Mbyte
    counter(d, "lts__t_bytes.sum", 4_500_000.0); // 4.5 Mbyte
    counter(d, "launch__shared_mem_per_block_static", 1000.0); // 1 Kbyte
    counter(d, "l1tex__t_sector_hit_rate.pct", 87.5);
    assert_eq!(d.duration_ns, Some(123_456.0));
    // Launch 1 left dram__bytes_read.sum empty: not collected, not zero.
    assert_eq!(set.dispatches[1].counter("dram__bytes_read.sum"), None);
    counter(&set.dispatches[1], "dram__bytes_write.sum", 512.0);
    counter(&set.dispatches[1], "gpu__time_duration.sum", 7500.0); // 7.5 us
}

#[test]
fn raw_page_launch_configuration_and_device() {
    let set = read_ncu("handmade/raw_page.csv");
    let d = &set.dispatches[0];
    assert_eq!(d.id, 0);
    assert_eq!(&*d.name, "void gemm<float>(float const*, float const*, float*, int)");
    assert_eq!(d.block, Some([256, 1, 1]));
    assert_eq!(d.grid, Some([1024, 1, 1]));
    assert_eq!(d.vgprs, Some(40));
    assert_eq!(d.shared_bytes, Some(5096)); // 1000 static + 4096 dynamic
    assert_eq!(d.stream.as_deref(), Some("7"));
    assert_eq!(d.gpu.as_deref(), Some("0"));
    let d1 = &set.dispatches[1];
    assert_eq!(&*d1.name, "vector_add(float const*, float const*, float*, int)");
    assert_eq!(d1.grid, Some([80, 2, 1]));
    assert_eq!(d1.block, Some([128, 2, 1]));
    assert_eq!(d1.blocks(), Some(160));
    assert_eq!(set.device.name.as_deref(), Some("NVIDIA A100-SXM4-40GB"));
    assert_eq!(set.device.arch.as_deref(), Some("8.0"));
    assert_eq!(set.device.compute_units, Some(108));
    assert!(set.source.notes.is_empty(), "{:?}", set.source.notes);
}

#[test]
fn raw_page_derived() {
    let set = read_ncu("handmade/raw_page.csv");
    let r = derive(&set, 0);
    assert_close(r.duration_ns, 123_456.0);
    assert_close(r.dram_bytes_read, 2_048_500.0);
    assert_close(r.dram_bytes_written, 1024.0);
    assert_close(r.l1_bytes, 8_250_000.0);
    assert_close(r.l2_bytes, 4_500_000.0);
    // fadd 1000 + fmul 2000 + 2 × ffma 3000 = 9000.
    assert_close(r.flops.vector.get("fp32").copied(), 9000.0);
    assert_eq!(r.l1_hit_rate_pct, Some(87.5));
    assert_eq!(r.l2_hit_rate_pct, Some(61.2));
    assert_eq!(r.achieved_occupancy_pct, Some(48.1));
    assert_eq!(r.theoretical_occupancy_pct, Some(75.0));
    assert_eq!(r.grid_waves, Some(2.37));
    // 1024 blocks × ⌈256 / 32⌉ warps.
    assert_eq!(r.waves_launched, Some(8192.0));
    // 400 sectors / 100 requests × 32 B = 128 B: fully coalesced.
    let c = r.coalescing.as_ref().unwrap();
    assert_eq!((c.bytes_per_request, c.ideal_bytes_per_request), (128.0, 128.0));
    // 100 × 12 conflicts / 96 wavefronts.
    assert_eq!(r.lds_bank_conflict_pct, Some(12.5));
    assert!(missing(&r, "lds_bytes"));
    assert!(missing(&r, "flops.matrix"));

    let r = derive(&set, 1);
    assert_eq!(r.dram_bytes_read, None);
    assert!(missing(&r, "dram_bytes_read"));
    assert_close(r.dram_bytes_written, 512.0);
    assert!(missing(&r, "flops.vector"));
    // No shared-memory wavefronts: no conflict ratio, and nothing missing either.
    assert_eq!(r.lds_bank_conflict_pct, None);
    assert!(!missing(&r, "lds_bank_conflict_pct"));
    // 200 sectors / 50 requests × 32 B = 128 B.
    assert_eq!(r.coalescing.unwrap().bytes_per_request, 128.0);
    // 160 blocks × ⌈256 / 32⌉.
    assert_eq!(r.waves_launched, Some(1280.0));
}

#[test]
fn raw_page_base_units_with_bom_and_preamble_reads_the_same() {
    let scaled = read_ncu("handmade/raw_page.csv");
    let base = read_ncu("handmade/raw_page_base_units_bom.csv");
    assert_eq!(base.dispatches.len(), 2);
    // 4 `==PROF==` lines and 2 lines of program output.
    assert!(has_note(&base, "skipped 6 lines"), "{:?}", base.source.notes);
    for (a, b) in scaled.dispatches.iter().zip(&base.dispatches) {
        assert_eq!(a.name, b.name);
        assert_eq!(a.grid, b.grid);
        assert_eq!(a.shared_bytes, b.shared_bytes);
        assert_eq!(a.counters.keys().collect::<Vec<_>>(), b.counters.keys().collect::<Vec<_>>());
        for (k, v) in &a.counters {
            assert!(close(*v, b.counters[k]), "{k}: {v} vs {}", b.counters[k]);
        }
    }
    assert_eq!(base.device.name.as_deref(), Some("NVIDIA A100-SXM4-40GB"));
}

// ---------------------------------------------------------------------------------------
// Hand-made details page.

#[test]
fn details_page_labels_units_and_grouping() {
    let set = read_ncu("handmade/details_page.csv");
    assert_eq!(set.source.format, CounterFormat::NcuDetails);
    assert_eq!(set.dispatches.len(), 2);
    let d = &set.dispatches[0];
    assert_eq!(&*d.name, "ampere_sgemm_128x64_nn");
    counter(d, "dram__cycles_elapsed.avg.per_second", 1.21e9); // 1.21 Ghz
    counter(d, "gpc__cycles_elapsed.avg.per_second", 1.41e9);
    counter(d, "gpc__cycles_elapsed.max", 1_234_567.0); // "1,234,567" cycle
    counter(d, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 71.52);
    counter(d, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 42.1);
    counter(d, "gpu__time_duration.sum", 875_420.0); // 875.42 usecond
    counter(d, "sm__throughput.avg.pct_of_peak_sustained_elapsed", 88.03);
    counter(d, "dram__bytes.sum.per_second", 655.36e9); // Memory Workload Analysis, Gbyte/s
    counter(d, "launch__grid_size", 8192.0); // "8,192"
    counter(d, "launch__shared_mem_config_size", 102_400.0); // 102.40 Kbyte
    counter(d, "launch__shared_mem_per_block_static", 33_280.0); // 33.28 Kbyte
    counter(d, "dram__bytes_write.sum", 4_194_300.0); // "4,194.30" Kbyte
    counter(d, "dram__bytes_read.sum", 402_650_000.0); // 402.65 Mbyte
    assert_eq!(d.grid, Some([4096, 2, 1]));
    assert_eq!(d.block, Some([256, 1, 1]));
    assert_eq!(d.vgprs, Some(122));
    assert_eq!(d.shared_bytes, Some(33_280));
    let d1 = &set.dispatches[1];
    assert_eq!(&*d1.name, "reduce_kernel(float*, int)");
    counter(d1, "gpu__time_duration.sum", 1_020_000.0); // 1.02 msecond
    counter(d1, "dram__bytes.sum.per_second", 1.45e12); // 1.45 Tbyte/second
    counter(d1, "dram__bytes_read.sum", 1.47e9); // 1.47 Gbyte
    assert_eq!(set.device.arch.as_deref(), Some("8.0"));
    assert!(has_note(&set, "Function Cache Configuration"), "{:?}", set.source.notes);
    // The program's line between the rows.
    assert!(has_note(&set, "skipped 1 lines"), "{:?}", set.source.notes);
}

#[test]
fn details_page_derived() {
    let set = read_ncu("handmade/details_page.csv");
    let r = derive(&set, 0);
    assert_close(r.duration_ns, 875_420.0);
    assert_close(r.dram_bytes_read, 402_650_000.0);
    assert_close(r.dram_bytes_written, 4_194_300.0);
    // 0 + 4096 + 2 × 536,870,912 = 1,073,745,920.
    assert_close(r.flops.vector.get("fp32").copied(), 1_073_745_920.0);
    assert_eq!(r.l1_hit_rate_pct, Some(3.95));
    assert_eq!(r.l2_hit_rate_pct, Some(87.61));
    assert_eq!(r.achieved_occupancy_pct, Some(24.61));
    assert_eq!(r.theoretical_occupancy_pct, Some(25.0));
    assert_eq!(r.grid_waves, Some(18.96));
    // 8192 blocks × 256 / 32 warps.
    assert_eq!(r.waves_launched, Some(65_536.0));
    let r = derive(&set, 1);
    assert_close(r.duration_ns, 1_020_000.0);
    assert_eq!(r.l2_hit_rate_pct, Some(0.51));
    assert_eq!(r.grid_waves, Some(1.0));
    assert!(missing(&r, "theoretical_occupancy_pct"));
}

// ---------------------------------------------------------------------------------------
// nsys stats.

#[test]
fn nsys_kern_sum_aggregates() {
    let set = read_nsys("handmade/cuda_gpu_kern_sum.csv");
    assert_eq!(set.source.format, CounterFormat::NsysKernSum);
    assert!(set.dispatches.is_empty());
    assert_eq!(set.aggregates.len(), 3);
    let a = &set.aggregates[0];
    assert_eq!(a.name, "ampere_sgemm_128x64_nn");
    assert_eq!(a.count, 10);
    assert_eq!(a.total_ns, 4_500_000.0);
    assert_eq!(a.mean_ns, Some(450_000.0));
    assert_eq!(a.median_ns, Some(449_500.0));
    assert_eq!(a.min_ns, Some(440_000.0));
    assert_eq!(a.max_ns, Some(465_000.0));
    assert_eq!(a.stddev_ns, Some(7071.1));
    let b = &set.aggregates[1];
    assert_eq!(
        b.name,
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, \
         at::detail::Array<char *, 1>>(int, T2, T3)"
    );
    assert_eq!((b.count, b.total_ns), (70, 1_400_000.0));
    assert_eq!(set.aggregates[2].count, 1);
    assert!(has_note(&set, "skipped 2 lines"), "{:?}", set.source.notes);
}

#[test]
fn nsys_kern_sum_in_microseconds() {
    let set = read_nsys("handmade/cuda_gpu_kern_sum_usec.csv");
    assert_eq!(set.aggregates.len(), 1);
    let a = &set.aggregates[0];
    assert_eq!(a.name, "gemm_kernel(int, int)");
    assert_eq!(a.count, 3);
    assert_close(Some(a.total_ns), 1_234_567.0); // 1234.567 us
    assert_close(a.mean_ns, 411_522.0);
    assert_close(a.median_ns, 410_000.0);
    assert_close(a.min_ns, 400_250.0);
    assert_close(a.max_ns, 424_317.0);
    assert_close(a.stddev_ns, 12_150.0);
    assert!(has_note(&set, "converted to ns"), "{:?}", set.source.notes);
}

#[test]
fn nsys_gpu_trace_dispatches() {
    let set = read_nsys("handmade/cuda_gpu_trace.csv");
    assert_eq!(set.source.format, CounterFormat::NsysGpuTrace);
    assert!(set.aggregates.is_empty());
    // 5 rows: 2 memcpy, 1 memset, 2 kernels.
    assert_eq!(set.dispatches.len(), 2);
    let d = &set.dispatches[0];
    assert_eq!(&*d.name, "ampere_sgemm_128x64_nn");
    assert_eq!(d.start_ns, Some(1_070_000));
    assert_eq!(d.duration_ns, Some(450_000.0));
    assert_eq!(d.end_ns, Some(1_520_000));
    assert_eq!(d.grid, Some([4096, 2, 1]));
    assert_eq!(d.block, Some([256, 1, 1]));
    assert_eq!(d.vgprs, Some(122));
    assert_eq!(d.shared_bytes, Some(33_000)); // 0.033 MB + 0.000 MB
    assert_eq!(d.stream.as_deref(), Some("7"));
    assert_eq!(d.gpu.as_deref(), Some("NVIDIA H100 80GB HBM3 (0)"));
    let d = &set.dispatches[1];
    assert_eq!(&*d.name, "void reduce<float, 256>(float const*, float*, int)");
    assert_eq!(d.id, 1);
    assert_eq!(d.grid, Some([216, 1, 1]));
    assert_eq!(d.shared_bytes, Some(49_000)); // 0.049 MB dynamic
    assert_eq!(d.stream.as_deref(), Some("13"));
    assert_eq!(set.device.name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    assert!(has_note(&set, "2 memcpy and 1 memset"), "{:?}", set.source.notes);
    assert!(has_note(&set, "±500 bytes"), "{:?}", set.source.notes);
    assert!(has_note(&set, "skipped 1 tables"), "{:?}", set.source.notes);
    // nsys has durations and launch shapes, no counters.
    let r = nvidia::derive(&set.dispatches[0], &set.device);
    assert_eq!(r.duration_ns, Some(450_000.0));
    assert_eq!(r.waves_launched, Some(65_536.0)); // 8192 blocks × 8 warps
    assert!(missing(&r, "dram_bytes_read"));
}

#[test]
fn nsys_old_column_names() {
    // Column names as recalled from 2021-era `gpukernsum` (not verified against a real
    // file): Average/Minimum/Maximum, units only on the total.
    let text = "Time(%),Total Time (ns),Instances,Average,Minimum,Maximum,Name\n\
                100.0,3000,3,1000.0,900,1100,k\n";
    let set = nsys::read_str("old.csv", text).unwrap();
    let a = &set.aggregates[0];
    assert_eq!(
        (a.count, a.total_ns, a.mean_ns, a.min_ns, a.max_ns),
        (3, 3000.0, Some(1000.0), Some(900.0), Some(1100.0))
    );
    assert_eq!(a.median_ns, None);
}

#[test]
fn nsys_both_reports_in_one_stream_prefers_the_trace() {
    let text = "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n\
                100.0,500,1,500.0,500.0,500,500,0.0,k\n\
                \n\
                Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),DymSMem (MB),Bytes (MB),Throughput (MB/s),SrcMemKd,DstMemKd,Device,Ctx,GreenCtx,Strm,Name\n\
                10,500,1,1,1,1,32,1,1,8,0.000,0.000,,,,,GPU (0),1,,7,k\n";
    let set = nsys::read_str("both.csv", text).unwrap();
    assert_eq!(set.source.format, CounterFormat::NsysGpuTrace);
    assert_eq!(set.dispatches.len(), 1);
    assert!(set.aggregates.is_empty());
    assert!(has_note(&set, "cuda_gpu_kern_sum table (1 kernels)"), "{:?}", set.source.notes);
}

// ---------------------------------------------------------------------------------------
// Bad input: one sentence with the file, the line and the column.

fn ncu_err(text: &str) -> CounterError {
    ncu::read_str("bad.csv", text).expect_err("should fail")
}

fn nsys_err(text: &str) -> CounterError {
    nsys::read_str("bad.csv", text).expect_err("should fail")
}

#[test]
fn ncu_missing_kernel_name_column() {
    let e = ncu_err(
        "==PROF== Connected\n\"ID\",\"Process ID\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n",
    );
    assert_eq!(e.place.line, Some(2));
    assert_eq!(e.place.field.as_deref(), Some("Kernel Name"));
    assert!(e.to_string().starts_with("bad.csv, line 2, column `Kernel Name`: "), "{e}");
}

#[test]
fn ncu_missing_id_column() {
    let e = ncu_err("\"Kernel Name\",\"gpu__time_duration.sum\"\n\"\",\"nsecond\"\n\"k\",\"5\"\n");
    assert_eq!(e.place.line, Some(1));
    assert_eq!(e.place.field.as_deref(), Some("ID"));
}

#[test]
fn ncu_units_row_that_does_not_match() {
    // The line after a raw-page header is a data row, not the units row.
    let e = ncu_err("\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"0\",\"k\",\"1234\"\n");
    assert_eq!(e.place.line, Some(2));
    assert!(e.message.contains("units row"), "{e}");
    // A units row with a different number of fields.
    let e = ncu_err("\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"\",\"\"\n");
    assert_eq!(e.place.line, Some(2));
    assert!(e.message.contains("expected 3"), "{e}");
    // A header and nothing else.
    let e = ncu_err("\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n");
    assert!(e.message.contains("units row"), "{e}");
}

#[test]
fn ncu_non_numeric_value_names_line_and_column() {
    let e = ncu_err(
        "\"ID\",\"Kernel Name\",\"dram__bytes_read.sum\",\"gpu__time_duration.sum\"\n\
         \"\",\"\",\"byte\",\"nsecond\"\n\
         \"0\",\"k\",\"10\",\"12\"\n\
         \"1\",\"k\",\"11\",\"twelve\"\n",
    );
    assert_eq!(e.place.line, Some(4));
    assert_eq!(e.place.field.as_deref(), Some("gpu__time_duration.sum"));
    assert!(e.message.contains("`twelve`") && e.message.contains("nsecond"), "{e}");

    let e = ncu_err(
        "\"ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
         \"0\",\"k\",\"S\",\"Duration\",\"usecond\",\"1,2\"\n",
    );
    assert_eq!(e.place.line, Some(2));
    assert_eq!(e.place.field.as_deref(), Some("Metric Value"));
    assert!(e.message.contains("gpu__time_duration.sum"), "{e}");

    let e = ncu_err(
        "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
         \"x\",\"k\",\"Duration\",\"ns\",\"1\"\n",
    );
    assert_eq!(e.place.field.as_deref(), Some("ID"));
}

#[test]
fn ncu_bad_tuple_and_unclosed_quote() {
    let e = ncu_err(
        "\"ID\",\"Kernel Name\",\"Block Size\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
         \"0\",\"k\",\"(256, 1)\",\"Duration\",\"ns\",\"1\"\n",
    );
    assert_eq!(e.place.field.as_deref(), Some("Block Size"));
    let e = ncu_err(
        "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
         \"0\",\"k\",\"Duration\",\"ns\n",
    );
    assert_eq!(e.place.line, Some(2));
    let e = ncu_err(
        "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
         \"0\",\"k\",\"Duration\"\n",
    );
    assert!(e.message.contains("expected 5"), "{e}");
}

#[test]
fn ncu_empty_or_headerless() {
    let e = ncu_err("");
    assert!(e.message.contains("empty"), "{e}");
    let e = ncu_err("\u{feff}  \n\n");
    assert!(e.message.contains("empty"), "{e}");
    let e = ncu_err("==PROF== Connected to process 1\nhello\n==PROF== Disconnected\n");
    assert!(e.message.contains("no Nsight Compute CSV header"), "{e}");
    let missing = fixtures().join("ncu/handmade/does_not_exist.csv");
    let e = ncu::read(&missing).unwrap_err();
    assert!(e.message.contains("cannot read"), "{e}");
}

#[test]
fn ncu_unknown_unit_is_kept_and_noted() {
    let set = ncu::read_str(
        "odd.csv",
        "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
         \"0\",\"k\",\"foo__bar.sum\",\"furlong\",\"7\"\n\
         \"0\",\"k\",\"Duration\",\"msecond\",\"n/a\"\n",
    )
    .unwrap();
    assert_eq!(set.dispatches[0].counter("foo__bar.sum"), Some(7.0));
    assert_eq!(set.dispatches[0].duration_ns, None);
    assert!(has_note(&set, "unit `furlong` of `foo__bar.sum`"), "{:?}", set.source.notes);
    assert!(has_note(&set, "1 values were `n/a`"), "{:?}", set.source.notes);
}

#[test]
fn ncu_ids_restart_without_header_start_a_new_run() {
    let set = ncu::read_str(
        "two.csv",
        "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
         \"0\",\"a\",\"Duration\",\"ns\",\"1\"\n\
         \"1\",\"b\",\"Duration\",\"ns\",\"2\"\n\
         \"0\",\"c\",\"Duration\",\"ns\",\"3\"\n",
    )
    .unwrap();
    let names: Vec<&str> = set.dispatches.iter().map(|d| &*d.name).collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert!(has_note(&set, "2 runs concatenated"), "{:?}", set.source.notes);
}

#[test]
fn ncu_files_concatenated_with_their_boms() {
    let one = "\u{feff}==PROF== Connected\n\
               \"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
               \"0\",\"a\",\"Duration\",\"usecond\",\"2\"\n";
    let set = ncu::read_str("cat.csv", &format!("{one}{one}")).unwrap();
    assert_eq!(set.dispatches.len(), 2);
    assert_eq!(set.dispatches[1].duration_ns, Some(2000.0));
    assert!(has_note(&set, "2 runs concatenated"), "{:?}", set.source.notes);
}

#[test]
fn nsys_bad_input() {
    let e = nsys_err("");
    assert!(e.message.contains("empty"), "{e}");
    let e = nsys_err("Generating SQLite file x.sqlite\nProcessing [x] with [y]...\n");
    assert!(e.message.contains("no nsys stats CSV header"), "{e}");
    let e = nsys_err("Time (%),Total Time (ns),Instances,Avg (ns)\n1,2,3,4\n");
    assert_eq!(e.place.line, Some(1));
    assert_eq!(e.place.field.as_deref(), Some("Name"));
    let e = nsys_err("Time (%),Total Time (ns),Num Calls,Name\n1,2,3,cudaMalloc\n");
    assert!(e.message.contains("only tables of other reports"), "{e}");
    let e = nsys_err(
        "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,Name\n\
         1,abc,1,1,1,1,k\n",
    );
    assert_eq!(e.place.line, Some(2));
    assert_eq!(e.place.field.as_deref(), Some("Duration"));
    let e = nsys_err("Start (ns),CorrId,GrdX,GrdY,GrdZ,Name\n1,1,1,1,1,k\n");
    assert_eq!(e.place.field.as_deref(), Some("Duration (ns)"));
    let e = nsys_err("Time (%),Total Time (ns),Instances,Name\n1,2,many,k\n");
    assert_eq!((e.place.line, e.place.field.as_deref()), (Some(2), Some("Instances")));
    let e = nsys_err("Time (%),Total Time (ns),Instances,Name\n1,2,3\n");
    assert!(e.message.contains("expected 4"), "{e}");
    let e = nsys_err("Time (%),Total Time (fortnights),Instances,Name\n1,2,3,k\n");
    assert!(e.message.contains("time unit"), "{e}");
}

// ---------------------------------------------------------------------------------------
// Never a panic, whatever the bytes.

fn fragments() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n",
        "\"ID\",\"Kernel Name\",\"Block Size\",\"gpu__time_duration.sum\"\n",
        "\"\",\"\",\"\",\"usecond\"\n",
        "\"0\",\"k\",\"(1, 2, 3)\",\"1,234\"\n",
        "\"0\",\"k\",\"Duration\",\"ms\",\"1.5\"\n",
        "\"1\",\"k\",\"Grid Size\",\"\",\"8,192\"\n",
        "==PROF== x\n",
        "\"0\",\"k\"\n",
        "\"\n",
        ",,,\n",
        "\u{feff}",
        "Time (%),Total Time (ns),Instances,Avg (ns),Name\n",
        "1,2,3,4,k\n",
        "Start (us),Duration (us),GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,StcSMem (MB),DymSMem (MB),Name\n",
        "1,2,3,4,5,6,7,8,0.5,0.1,k\n",
        "1,2,,,,,,,,,[CUDA memset]\n",
        "\n",
    ]);
    prop::collection::vec(pieces, 0..12).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn readers_never_panic_on_arbitrary_text(s in ".{0,300}") {
        let _ = ncu::read_str("p.csv", &s);
        let _ = nsys::read_str("p.csv", &s);
    }

    #[test]
    fn readers_never_panic_on_shuffled_fragments(s in fragments()) {
        let _ = ncu::read_str("p.csv", &s);
        let _ = nsys::read_str("p.csv", &s);
        if let Ok(set) = ncu::read_str("p.csv", &s) {
            for d in &set.dispatches {
                let _ = nvidia::derive(d, &set.device);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// rooftop's own `roofline` preset against the real H200 export.

/// Whether ncu collects the metric `id` for the preset entry `entry`: the entry itself,
/// or, for `regex:^X`, every id that starts with `X` (the only form the presets use).
fn preset_takes(entry: &str, id: &str) -> bool {
    match entry.strip_prefix("regex:^") {
        Some(prefix) => id.starts_with(prefix),
        None => entry == id,
    }
}

/// The real H200 raw page (`ncu/h200/torch_raw.csv`, a `--set full` report) cut down to
/// the launch columns and the columns the ncu `roofline` preset collects, with the
/// file's own values: what `rooftop profile --with ncu --preset roofline` would have
/// written for the same launches, less what `--set full` did not collect.
fn roofline_preset_columns_of_torch_raw() -> String {
    let preset = rooftop_ingest::session::presets::counters(
        rooftop_ingest::session::Preset::Roofline,
        false,
    );
    let path = fixtures().join("ncu/h200/torch_raw.csv");
    let mut rd = csv::ReaderBuilder::new().has_headers(false).from_path(&path).unwrap();
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    // Launch attributes have no `__` in their name (ID, Kernel Name, Device, NVTX ranges).
    let keep: Vec<usize> = rows[0]
        .iter()
        .enumerate()
        .filter(|(_, h)| !h.contains("__") || preset.iter().any(|p| preset_takes(p, h)))
        .map(|(i, _)| i)
        .collect();
    let mut w = csv::WriterBuilder::new().quote_style(csv::QuoteStyle::Always).from_writer(vec![]);
    for r in &rows {
        w.write_record(keep.iter().map(|&i| &r[i])).unwrap();
    }
    String::from_utf8(w.into_inner().unwrap()).unwrap()
}

#[test]
fn roofline_preset_gives_the_tensor_flops_of_the_full_export() {
    let text = roofline_preset_columns_of_torch_raw();
    let header = text.lines().next().unwrap();
    // The preset's tensor op counters are in the cut file; the vector SASS counts are
    // not: `--set full` collects them only as `.sum.per_cycle_elapsed` rates.
    assert!(header.contains("\"sm__ops_path_tensor_src_bf16_dst_fp32.sum\""), "{header}");
    assert!(header.contains("\"dram__bytes_read.sum\""), "{header}");
    assert!(!header.contains("smsp__sass_thread_inst_executed_op_ffma_pred_on"), "{header}");

    let cut = ncu::read_str("torch_raw_roofline_preset.csv", &text).unwrap();
    let full = read_ncu("h200/torch_raw.csv");
    assert_eq!(cut.dispatches.len(), 8);
    assert!(cut.dispatches[0].name.starts_with("nvjet_sm90_tst_256x128_64x4_1x2"));

    // The bf16 GEMM of 4096 × 4096 × 4096: one multiply-add per (m, n, k) = 2 FLOP, so
    // 2 · 4096³ = 2 · 68,719,476,736 = 137,438,953,472 FLOP, the file's own
    // `sm__ops_path_tensor_src_bf16_dst_fp32.sum` ("137,438,953,472") of ID 0 and ID 4.
    for i in [0, 4] {
        let r = derive(&cut, i);
        assert_eq!(r.flops.matrix.get("bf16"), Some(&137_438_953_472.0), "launch {i}");
        assert!(!missing(&r, "flops.matrix"), "launch {i}: {:?}", r.missing);
        // The full export gives the same total (its vector counts are rates × cycles,
        // zero for this GEMM).
        let f = derive(&full, i);
        assert_eq!(f.flops.total(), 137_438_953_472.0, "launch {i}");
        assert_eq!(r.flops.matrix.values().sum::<f64>(), 137_438_953_472.0, "launch {i}");
    }
    // SDPA (ID 3): 38,654,705,664 bf16 tensor ops in the file, here and in the full one.
    assert_eq!(derive(&cut, 3).flops.matrix.get("bf16"), Some(&38_654_705_664.0));
    assert_eq!(derive(&full, 3).flops.matrix.get("bf16"), Some(&38_654_705_664.0));

    // The bound on an H200: DRAM of the two launches (the file's Mbyte values, read +
    // write) 148.2688 + 28.038144 + 148.079872 + 28.053248 MB = 352,440,064 B for
    // 2 · 137,438,953,472 = 274,877,906,944 FLOP, an intensity of ≈ 779.93 FLOP/B, far
    // right of the bf16 ridge (989 TFLOP/s dense / 4.8 TB/s ≈ 206 FLOP/B, NVIDIA's H200
    // datasheet): compute-bound, never "no floating-point work".
    let spec = rooftop_core::device::Catalog::builtin().lookup("h200-sxm").unwrap();
    let rep = rooftop_core::counters::analyze(cut, Some(spec));
    let gemm = rep.kernels.iter().find(|k| k.name.starts_with("nvjet_sm90")).unwrap();
    assert_eq!(gemm.bound, Some(rooftop_core::roofline::Bound::Compute), "{}", gemm.bound_reason);
    let ai = gemm.arithmetic_intensity.unwrap();
    assert!((ai - 274_877_906_944.0 / 352_440_064.0).abs() < 0.01, "{ai}");
}

// ---------------------------------------------------------------------------------------
// Implausible values: refused where no measurement can give them, noted and unused where
// they are Nsight Compute's own computed percentages.

/// The hand-made raw page with one cell replaced: `row` is the 0-based line, `col` the
/// header's column name. The file has the header on line 1 and the units row on line 2.
#[allow(clippy::unwrap_used)]
fn raw_page_with(row: usize, col: &str, value: &str) -> String {
    let text = std::fs::read_to_string(fixtures().join("ncu/handmade/raw_page.csv")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let header: Vec<&str> = lines[0].split("\",\"").collect();
    let i = header.iter().position(|h| h.trim_matches('"') == col).unwrap();
    let mut cells: Vec<String> = lines[row].split("\",\"").map(str::to_string).collect();
    let last = cells.len() - 1;
    let (open, close) = (if i == 0 { "\"" } else { "" }, if i == last { "\"" } else { "" });
    cells[i] = format!("{open}{value}{close}");
    lines[row] = cells.join("\",\"");
    lines.join("\n") + "\n"
}

#[test]
fn ncu_unknown_unit_in_the_units_row_is_an_error() {
    // The fixture's units row (line 2) says `Kbyte` under `dram__bytes_read.sum`.
    let ok = ncu::read_str("raw.csv", &raw_page_with(1, "dram__bytes_read.sum", "Kbyte")).unwrap();
    // 2048.5 Kbyte = 2,048,500 bytes (decimal prefix, as ncu writes it).
    assert_eq!(ok.dispatches[0].counter("dram__bytes_read.sum"), Some(2_048_500.0));
    let e = ncu_err(&raw_page_with(1, "dram__bytes_read.sum", "furlong"));
    assert_eq!(e.place.line, Some(2));
    assert_eq!(e.place.field.as_deref(), Some("dram__bytes_read.sum"));
    assert!(e.to_string().starts_with("bad.csv, line 2, column `dram__bytes_read.sum`"), "{e}");
    assert!(e.message.contains("`furlong`"), "{e}");
    // Details page: a figure rooftop reads ("Duration") in an unknown unit is an error at
    // its row; a figure it does not read keeps the note (ncu_unknown_unit_is_kept_and_noted).
    let e = ncu_err(
        "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
         \"0\",\"k\",\"Duration\",\"fortnight\",\"7\"\n",
    );
    assert_eq!((e.place.line, e.place.field.as_deref()), (Some(2), Some("Metric Unit")));
    assert!(e.message.contains("`fortnight`") && e.message.contains("Duration"), "{e}");
}

#[test]
fn ncu_negative_byte_count_is_an_error() {
    // gemm's row is line 3; -5 Kbyte of DRAM reads is no measurement.
    let e = ncu_err(&raw_page_with(2, "dram__bytes_read.sum", "-5"));
    assert_eq!(e.place.line, Some(3));
    assert_eq!(e.place.field.as_deref(), Some("dram__bytes_read.sum"));
    assert!(e.message.contains("-5 Kbyte") && e.message.contains("byte count"), "{e}");
    // A negative duration too (gpu__time_duration.sum in usecond).
    let e = ncu_err(&raw_page_with(2, "gpu__time_duration.sum", "-1"));
    assert_eq!(e.place.field.as_deref(), Some("gpu__time_duration.sum"));
    assert!(e.message.contains("duration"), "{e}");
    // Zero is a measurement.
    assert!(ncu::read_str("raw.csv", &raw_page_with(2, "dram__bytes_read.sum", "0")).is_ok());
}

#[test]
fn ncu_hit_rate_over_100_is_noted_and_not_used() {
    // The fixture's gemm row has lts__t_sector_hit_rate.pct = 61.2: read as is.
    let set =
        ncu::read_str("raw.csv", &raw_page_with(2, "lts__t_sector_hit_rate.pct", "61.2")).unwrap();
    assert_eq!(derive(&set, 0).l2_hit_rate_pct, Some(61.2));
    // 250% is no hit rate: the value stays in the counters, a warning names line 3 and
    // the column, and no L2 hit rate is derived (nor anything drawn from one).
    let set =
        ncu::read_str("raw.csv", &raw_page_with(2, "lts__t_sector_hit_rate.pct", "250")).unwrap();
    assert_eq!(set.dispatches[0].counter("lts__t_sector_hit_rate.pct"), Some(250.0));
    assert!(
        has_note(&set, "warning: raw.csv, line 3, column `lts__t_sector_hit_rate.pct`"),
        "{:?}",
        set.source.notes
    );
    assert!(has_note(&set, "is 250%, which is impossible for a hit rate"));
    let x = derive(&set, 0);
    assert_eq!(x.l2_hit_rate_pct, None);
    assert!(x.missing.iter().any(|m| m.quantity == "l2_hit_rate_pct" && m.needs.contains("250%")));
    // Within ncu's own noise (a real H200 export holds 100.007616%): kept, no warning.
    let set =
        ncu::read_str("raw.csv", &raw_page_with(2, "lts__t_sector_hit_rate.pct", "100.5")).unwrap();
    assert_eq!(derive(&set, 0).l2_hit_rate_pct, Some(100.5));
    assert!(!has_note(&set, "warning:"), "{:?}", set.source.notes);
}

#[test]
fn ncu_speed_of_light_over_100_is_noted_and_decides_nothing() {
    // The A100 details excerpt: "DRAM Throughput" 46.99% on line 6, L2 63.55%, SM 5.27%.
    let text =
        std::fs::read_to_string(fixtures().join("ncu/clima_a100_details_excerpt.csv")).unwrap();
    let line6 = text.lines().nth(5).unwrap();
    assert!(line6.contains("\"DRAM Throughput\",\"%\",\"46.99\""), "{line6}");
    let set = ncu::read_str("clima.csv", &text).unwrap();
    let sol = derive(&set, 0).speed_of_light;
    assert_eq!((sol.dram_pct, sol.l2_pct, sol.sm_pct), (Some(46.99), Some(63.55), Some(5.27)));

    let bad = text.replacen(
        "\"DRAM Throughput\",\"%\",\"46.99\"",
        "\"DRAM Throughput\",\"%\",\"246.99\"",
        1,
    );
    let set = ncu::read_str("clima.csv", &bad).unwrap();
    let id = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed";
    assert_eq!(set.dispatches[0].counter(id), Some(246.99));
    assert!(
        has_note(&set, "warning: clima.csv, line 6, column `Metric Value`: \"DRAM Throughput\""),
        "{:?}",
        set.source.notes
    );
    assert!(has_note(&set, "246.99% of its peak, which is impossible"));
    let x = derive(&set, 0);
    assert!(x.speed_of_light.is_empty(), "{:?}", x.speed_of_light);
    assert!(x.missing.iter().any(|m| m.quantity == "speed_of_light" && m.needs.contains("247%")));
}

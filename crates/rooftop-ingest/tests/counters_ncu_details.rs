//! Nsight Compute details pages as people share them, read and judged end to end, against
//! the values Nsight Compute printed:
//! - a real A100 `--page details` export of a climate model
//!   (`tests/fixtures/ncu/clima_a100_details_excerpt.csv`): every figure of the Speed of
//!   Light, Memory Workload Analysis, Launch Statistics and Occupancy sections with its
//!   unit, DRAM bytes derived from "Memory Throughput" (GB/s) × "Duration" where no byte
//!   counter was collected, and the device identified from its facts;
//! - the same launch as `--print-units base` writes it (hand-converted, `handmade/`);
//! - a pre-2021 details page with the "SOL DRAM / SOL L1/TEX Cache / SOL L2 Cache"
//!   labels and FP32 FLOP counters (`handmade/v100_sol_labels_details.csv`).
//!
//! Expected values are the numbers in the files, converted by hand in the comments.

#![allow(clippy::unwrap_used)]

use rooftop_core::counters::{analyze_in, BoundBasis, ByteSource, CounterSet};
use rooftop_core::device::{Catalog, MemLevel};
use rooftop_core::roofline::Bound;
use rooftop_ingest::counters::ncu;
use std::path::PathBuf;

fn read(rel: &str) -> CounterSet {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/ncu").join(rel);
    ncu::read(&p).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[track_caller]
fn close(a: Option<f64>, b: f64, rel: f64) {
    let a = a.unwrap_or_else(|| panic!("expected {b}, found nothing"));
    assert!((a - b).abs() <= rel * b.abs().max(1e-300), "{a} vs {b}");
}

/// The figures of the A100 launch, metric id → value in base units, by hand from the
/// file: 715.58 us = 715 580 ns; 958.04 Gbyte/s = 958.04e9 B/s; 1.59 Ghz = 1.59e9 Hz.
const A100: &[(&str, f64)] = &[
    ("gpu__time_duration.sum", 715_580.0),
    ("dram__bytes.sum.per_second", 958.04e9),
    ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 46.99),
    ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 50.0),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", 5.27),
    ("l1tex__throughput.avg.pct_of_peak_sustained_active", 33.56),
    ("lts__throughput.avg.pct_of_peak_sustained_elapsed", 63.55),
    ("l1tex__t_sector_hit_rate.pct", 57.38),
    ("lts__t_sector_hit_rate.pct", 76.71),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", 38.29),
    ("sm__maximum_warps_per_active_cycle_pct", 75.0),
    ("launch__waves_per_multiprocessor", 0.59),
    ("launch__registers_per_thread", 40.0),
    ("launch__sm_count", 108.0),
    ("gpc__cycles_elapsed.avg.per_second", 1.14e9),
    ("dram__cycles_elapsed.avg.per_second", 1.59e9),
    ("launch__shared_mem_per_block_driver", 1020.0),
];

#[test]
fn a100_details_page_every_figure_with_its_unit() {
    let set = read("clima_a100_details_excerpt.csv");
    assert_eq!(set.dispatches.len(), 1);
    let d = &set.dispatches[0];
    for (id, v) in A100 {
        close(d.counter(id), *v, 1e-12);
    }
    // Figures rooftop's formulas do not use are kept, under their labels.
    close(
        d.counter("Executed Ipc Active").or(d.counter("sm__inst_executed.avg.per_cycle_active")),
        0.14,
        1e-12,
    );
    close(d.counter("Average DRAM Active Cycles"), 535_592.60, 1e-12);
    assert!(set.source.notes.iter().all(|n| !n.contains("left out")), "{:?}", set.source.notes);
    assert!(
        set.source.notes.iter().all(|n| !n.contains("not known to rooftop")),
        "{:?}",
        set.source.notes
    );
    assert_eq!(d.grid, Some([384, 1, 1]));
    assert_eq!(d.block, Some([256, 1, 1]));
    assert_eq!(set.device.arch.as_deref(), Some("8.0"));
    assert_eq!(set.device.compute_units, Some(108));
}

#[test]
fn a100_achieved_bandwidth_is_what_ncu_printed_and_the_device_is_known() {
    let rep = analyze_in(read("clima_a100_details_excerpt.csv"), Catalog::builtin(), None).unwrap();
    let k = &rep.kernels[0];
    // Bytes = 958.04e9 B/s × 715.58e-6 s = 685.55 MB, derived (no byte counter).
    close(k.derived.dram_bytes_total, 958.04e9 * 715.58e-6, 1e-12);
    assert_eq!(k.derived.byte_sources.get(&MemLevel::Dram), Some(&ByteSource::Derived));
    // Achieved = bytes / duration = 958.04 GB/s, Nsight Compute's "Memory Throughput".
    close(k.achieved_gbs, 958.04, 1e-12);
    close(k.l1_hit_rate_pct, 57.38, 1e-12);
    close(k.l2_hit_rate_pct, 76.71, 1e-12);
    close(k.derived.achieved_occupancy_pct, 38.29, 1e-12);
    close(k.derived.grid_waves, 0.59, 1e-12);
    // No FLOP counter: the Speed of Light decides. SM 5.27% < 0.8 × L2 63.55%: memory.
    assert_eq!(k.bound, Some(Bound::Memory));
    assert_eq!(k.bound_basis, Some(BoundBasis::SpeedOfLight));
    assert_eq!(k.pct_of_roof, Some(63.55));
    assert_eq!(k.compute_roof, None);
    // 108 SMs at CC 8.0: the A100s and A800s; 958.04 / 0.4699 = 2038.8 GB/s, the SXM4
    // 80 GB parts' 2039 GB/s, which they share with every other roof.
    let r = &rep.roofs;
    assert_eq!(r.candidates, ["a100-sxm-80gb", "a800-sxm-80gb"]);
    assert_eq!(r.bandwidth(MemLevel::Dram), Some(2039.0));
    let note = r.notes.first().cloned().unwrap_or_default();
    assert!(note.contains("2039 GB/s") && note.contains("108 SMs"), "{note}");
    // 958.04 of 2039 GB/s is 47.0%, the DRAM Throughput the file states (46.99%).
    close(k.roofline.first().and_then(|p| p.pct_of_roof), 100.0 * 958.04 / 2039.0, 1e-12);
    // An fp32-free, communication-free kernel with 0.59 waves: the small-grid finding.
    assert!(k.findings.iter().any(|f| f.id == "counters.grid_small"));
    assert!(k.findings.iter().any(|f| f.id == "counters.cache_bound"));
}

#[test]
fn print_units_base_reads_the_same_launch() {
    let scaled = read("clima_a100_details_excerpt.csv");
    let base = read("handmade/clima_a100_details_base_units.csv");
    let (s, b) = (&scaled.dispatches[0], &base.dispatches[0]);
    let mut compared = 0;
    for (id, v) in &b.counters {
        if let Some(w) = s.counter(id) {
            assert!((v - w).abs() <= 1e-9 * w.abs().max(1.0), "{id}: {v} vs {w}");
            compared += 1;
        }
    }
    // Every metric row of the four sections.
    assert_eq!(compared, b.counters.len());
    assert!(compared >= 40, "{compared}");
    for (id, v) in A100 {
        close(b.counter(id), *v, 1e-12);
    }
}

#[test]
fn pre_2021_sol_labels_decide_the_bound_of_an_fp32_kernel() {
    let set = read("handmade/v100_sol_labels_details.csv");
    let d = &set.dispatches[0];
    close(d.counter("dram__throughput.avg.pct_of_peak_sustained_elapsed"), 9.31, 1e-12);
    close(d.counter("l1tex__throughput.avg.pct_of_peak_sustained_active"), 71.2, 1e-12);
    close(d.counter("lts__throughput.avg.pct_of_peak_sustained_elapsed"), 24.1, 1e-12);
    close(d.counter("sm__throughput.avg.pct_of_peak_sustained_elapsed"), 20.4, 1e-12);
    // 0.87 cycle/nsecond = 0.87e9 Hz.
    close(d.counter("dram__cycles_elapsed.avg.per_second"), 0.87e9, 1e-12);
    assert!(set.source.notes.iter().all(|n| !n.contains("SOL")), "{:?}", set.source.notes);
    // Without a device: the Speed of Light alone says memory (L1/TEX 71.2% vs SM 20.4%).
    let rep = analyze_in(set.clone(), Catalog::builtin(), None).unwrap();
    let k = &rep.kernels[0];
    assert_eq!((k.bound, k.bound_basis), (Some(Bound::Memory), Some(BoundBasis::SpeedOfLight)));
    assert!(k.findings.iter().any(|f| f.id == "counters.cache_bound"));
    // On a V100: 2·108.33e6 = 216.66e6 FLOP over 6.5 MB + 722 kB = 7.222 MB is 30.0
    // FLOP/B, above the fp32 ridge 15.7e12 / 900e9 = 17.4: the roofline alone would say
    // compute-bound at 216.66e6 / 15.7e12 = 13.8 µs of 100 µs (13.8%). The L1/TEX is the
    // busiest unit: bound by memory, and no tensor-core advice for FP32 on a V100.
    let rep = analyze_in(set, Catalog::builtin(), Some("v100-sxm")).unwrap();
    let k = &rep.kernels[0];
    close(k.arithmetic_intensity, 216.66e6 / 7.222e6, 1e-9);
    assert_eq!(k.bound, Some(Bound::Memory), "{}", k.bound_reason);
    assert!(
        k.bound_reason.contains("17.4") && k.bound_reason.contains("L1/TEX"),
        "{}",
        k.bound_reason
    );
    assert!(k.findings.iter().all(|f| f.id != "counters.compute_low"));
    assert!(
        k.findings.iter().all(|f| !f.recommendation.contains("tensor cores (")),
        "{:?}",
        k.findings
    );
}

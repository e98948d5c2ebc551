//! Nsight Compute details exports with rule columns (2023.2 and later), against the
//! values Nsight Compute printed in a real export:
//! `tests/fixtures/ncu/superbench_cc100_cublaslt_details.csv` (microsoft/superbenchmark
//! `tests/data/cublaslt_ncu.log`, MIT), one cuBLASLt FP8 GEMM on a CC 10.0 GPU.
//!
//! Oracles: the file's own printed values (Duration, Theoretical Occupancy, Achieved
//! Occupancy, Waves Per SM, Threads, the rules' estimated speedups), compared with what
//! rooftop computes itself from the other fields (occupancy calculator, grid waves from
//! the block limits) within 2%, and with hand arithmetic written below.

#![allow(clippy::unwrap_used)]

use rooftop_core::counters::{analyze, nvidia, CounterFormat, CounterSet};
use rooftop_core::device::Catalog;
use rooftop_core::diagnose::Severity;
use rooftop_core::occupancy::{occupancy, KernelResources};
use rooftop_ingest::counters::{ncu, read_path};
use std::io::Write as _;
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/ncu/superbench_cc100_cublaslt_details.csv")
}

fn read() -> CounterSet {
    ncu::read(&fixture()).unwrap_or_else(|e| panic!("{e}"))
}

#[track_caller]
fn within(got: f64, ncu_printed: f64, rel: f64) {
    assert!(
        (got - ncu_printed).abs() <= rel * ncu_printed.abs(),
        "rooftop {got} vs Nsight Compute {ncu_printed}"
    );
}

#[test]
fn twenty_column_export_reads_metrics_and_rules() {
    let set = read();
    assert_eq!(set.source.format, CounterFormat::NcuDetails);
    assert_eq!(set.dispatches.len(), 1);
    let d = &set.dispatches[0];
    assert!(d.name.starts_with("cutlass3x_sm100_tensorop_s64x256x32gemm_f8_f8_f32"), "{}", d.name);
    // "Duration","ns","406240".
    assert_eq!(d.duration_ns, Some(406_240.0));
    // Header columns "(384, 1, 1)", "(9, 32, 1)"; "Registers Per Thread" 168;
    // static 0 + dynamic 205696 bytes of shared memory.
    assert_eq!((d.block, d.grid), (Some([384, 1, 1]), Some([9, 32, 1])));
    assert_eq!(d.vgprs, Some(168));
    assert_eq!(d.shared_bytes, Some(205_696));
    // "DRAM Frequency","hz","3995313115.40" read in its unit (Hz).
    assert_eq!(d.counter("dram__cycles_elapsed.avg.per_second"), Some(3_995_313_115.40));
    assert_eq!(set.device.arch.as_deref(), Some("10.0"));
    assert_eq!(set.device.compute_units, Some(152));
    // 3 lines before the header: two ==PROF== lines and the program's output.
    assert!(
        set.source.notes.iter().any(|n| n.contains("skipped 3 lines")),
        "{:?}",
        set.source.notes
    );

    // The 8 rule rows, as written.
    let rules = &d.tool_rules;
    assert_eq!(rules.len(), 8);
    let names: Vec<&str> = rules.iter().map(|r| r.rule.as_str()).collect();
    assert_eq!(
        names,
        [
            "SOLBottleneck",
            "LaunchConfiguration",
            "LaunchConfiguration",
            "TheoreticalOccupancy",
            "WorkloadImbalance",
            "WorkloadImbalance",
            "WorkloadImbalance",
            "WorkloadImbalance"
        ]
    );
    assert!(rules.iter().all(|r| r.tool == "Nsight Compute" && r.rule_type == "OPT"));
    let theo = &rules[3];
    assert_eq!(theo.section.as_deref(), Some("Occupancy"));
    assert_eq!(
        (theo.speedup_type.as_deref(), theo.estimated_speedup_pct),
        (Some("local"), Some(81.25))
    );
    assert!(theo.description.contains("limited by the number of required registers"));
    assert_eq!(rules[2].estimated_speedup_pct, Some(50.0));
    assert_eq!(rules[0].estimated_speedup_pct, None);
    assert_eq!(rules[7].estimated_speedup_pct, Some(14.55));
}

#[test]
fn rooftop_agrees_with_the_values_nsight_compute_printed() {
    let set = read();
    let d = &set.dispatches[0];
    // Threads: 9 x 32 blocks x 384 threads = 110592 ("Threads","thread","110592").
    assert_eq!(d.blocks().zip(d.threads_per_block()).map(|(b, t)| b * t), Some(110_592));

    // Theoretical occupancy from rooftop's calculator with the CC 10.0 rules of the
    // catalog: 168 registers x 384 threads and 205696 + 1024 (driver) bytes of shared
    // memory allow 1 block of 12 warps out of 64 -> 18.75% ("Theoretical Occupancy").
    let cat = Catalog::builtin();
    let b200 = cat.lookup("b200").unwrap();
    let res = KernelResources {
        threads_per_block: 384,
        regs_per_thread: d.vgprs,
        smem_bytes: d.shared_bytes.unwrap(),
        ..KernelResources::default()
    };
    let o = occupancy(b200, &res).unwrap();
    assert_eq!(o.blocks_per_cu, 1);
    within(o.occupancy_pct, 18.75, 0.02);
    // Achieved occupancy: "Achieved Active Warps Per SM" 9.94 over the 64 warp slots of
    // the same calculation = 15.53% ("Achieved Occupancy","%","15.53").
    let warps = d.counter("sm__warps_active.avg.per_cycle_active").unwrap();
    within(100.0 * warps / f64::from(o.max_warps_per_cu), 15.53, 0.02);

    // Grid waves without the printed "Waves Per SM": rooftop's blocks / (SMs x the
    // tightest block limit) = 288 / (152 x 1) = 1.895 ("Waves Per SM","","1.89").
    let mut no_waves = d.clone();
    no_waves.counters.remove("launch__waves_per_multiprocessor");
    let x = nvidia::derive(&no_waves, &set.device);
    within(x.grid_waves.unwrap(), 1.89, 0.02);
    // And with it, rooftop reports Nsight Compute's own figure.
    assert_eq!(nvidia::derive(d, &set.device).grid_waves, Some(1.89));
}

#[test]
fn nsight_compute_findings_rank_beside_rooftops() {
    let cat = Catalog::builtin();
    let rep = analyze(read(), cat.lookup("b200").ok());
    let k = &rep.kernels[0];
    // Merged per kernel: WorkloadImbalance fired 4 times with 4 descriptions, the two
    // LaunchConfiguration rows have different descriptions: 8 findings, ranked by their
    // time at stake, the estimated speedup of the kernel's time (the severity rule of
    // every command: critical from 50%, warning from 5%, info below or without one).
    assert_eq!(k.tool_findings.len(), 8);
    let speedups: Vec<Option<f64>> =
        k.tool_findings.iter().map(|f| f.estimated_speedup_pct).take(4).collect();
    assert_eq!(speedups, [Some(81.25), Some(50.0), Some(14.55), Some(6.24)]);
    let duration_us = k.duration_ns.unwrap() / 1e3;
    for f in &k.tool_findings {
        let want = match f.estimated_speedup_pct {
            Some(p) if p >= 50.0 => Severity::Critical,
            Some(p) if p >= 5.0 => Severity::Warning,
            _ => Severity::Info,
        };
        assert_eq!(f.severity, want, "{} ({:?}%)", f.rule, f.estimated_speedup_pct);
        if let Some(p) = f.estimated_speedup_pct {
            let t = f.time_at_stake_us.unwrap();
            assert!((t - duration_us * p / 100.0).abs() < 1e-9, "{}: {t} µs", f.rule);
        }
    }
    // rooftop's own findings keep their ids; the tool's keep its rule names.
    assert!(k.findings.iter().all(|f| f.id.starts_with("counters.")));
}

/// Writes `text` to the file `name` in `dir` (gzipped when asked) and returns its path.
fn temp(dir: &Path, name: &str, text: &[u8], gzip: bool) -> PathBuf {
    let p = dir.join(name);
    let bytes = if gzip {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(text).unwrap();
        e.finish().unwrap()
    } else {
        text.to_vec()
    };
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn gzipped_export_reads_like_the_plain_one() {
    let text = std::fs::read(fixture()).unwrap();
    let plain = read();
    let dir = tempfile::Builder::new().prefix("rooftop-ncu-rules-").tempdir().unwrap();
    for name in ["details.csv.gz", "details_without_suffix.csv"] {
        let p = temp(dir.path(), name, &text, true);
        let z = read_path(&p).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(z.dispatches, plain.dispatches, "{name}");
    }
}

const HEADER: &str = "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\",\"Rule Name\",\"Rule Type\",\"Rule Description\",\"Estimated Speedup Type\",\"Estimated Speedup\"";
const PREFIX: &str =
    "\"0\",\"1\",\"app\",\"host\",\"k\",\"1\",\"7\",\"(256, 1, 1)\",\"(4, 1, 1)\",\"0\",\"9.0\",";

#[test]
fn metric_rows_with_and_without_the_rule_columns() {
    // 16 fields (trailing comma), 15 (no trailing comma) and 20 (padded) all read.
    let text = format!(
        "{HEADER}\n{PREFIX}\"S\",\"Duration\",\"us\",\"2.50\",\n{PREFIX}\"S\",\"DRAM Throughput\",\"%\",\"40\"\n{PREFIX}\"S\",\"L2 Hit Rate\",\"%\",\"75\",\"\",\"\",\"\",\"\",\"\"\n{PREFIX}\"X\",\"\",\"\",\"\",\"R\",\"WRN\",\"careful\",\"global\",\"n/a\"\n"
    );
    let set = ncu::read_str("t.csv", &text).unwrap_or_else(|e| panic!("{e}"));
    let d = &set.dispatches[0];
    // 2.50 us = 2500 ns.
    assert_eq!(d.duration_ns, Some(2500.0));
    assert_eq!(d.counter("lts__t_sector_hit_rate.pct"), Some(75.0));
    assert_eq!(d.tool_rules.len(), 1);
    assert_eq!(d.tool_rules[0].estimated_speedup_pct, None);
    // A speedup that is not a number is kept out and said.
    assert!(set.source.notes.iter().any(|n| n.contains("`n/a`")), "{:?}", set.source.notes);
    // More fields than the header is still an error naming the line.
    let bad = format!(
        "{HEADER}\n{PREFIX}\"S\",\"Duration\",\"us\",\"2\",\"\",\"\",\"\",\"\",\"\",\"extra\"\n"
    );
    let e = ncu::read_str("bad.csv", &bad).unwrap_err().to_string();
    assert!(e.contains("bad.csv, line 2") && e.contains("20"), "{e}");
}

//! Measures GEMM (ours vs matrixmultiply), FMA peaks and, with `ceilings`, the full
//! ceilings on this machine through the harness, as `rooftop bench` / `rooftop ceilings`
//! will. Usage: `cargo run --release -p rooftop-bench --example cpu_roofs -- [gemm|fma|info|ceilings|quick] [THREADS]`.

#![allow(clippy::print_stdout)]

use rooftop_bench::backend::{Backend, Launch};
use rooftop_bench::ceilings::{self, CeilingOptions};
use rooftop_bench::cpu::CpuBackend;
use rooftop_bench::harness::{self, Progress, TimingOptions};
use rooftop_bench::suite::{self, Kernel, KernelId};
use rooftop_bench::Case;
use rooftop_core::units::Precision;
use std::sync::atomic::AtomicBool;

fn time(be: &mut CpuBackend, kernel: &dyn Kernel, case: &Case, imp: &str, launch: Launch) {
    let stop = AtomicBool::new(false);
    let Some(implementation) = be.implementations(case.kernel).into_iter().find(|i| i.id == imp)
    else {
        println!("no implementation {imp}");
        return;
    };
    let opts = TimingOptions::default();
    match harness::run_case(
        be,
        kernel,
        case,
        &implementation,
        Some(launch),
        &opts,
        &stop,
        &mut |_| {},
    ) {
        Ok(r) => {
            let Some(t) = &r.timing else {
                println!("{} [{imp}]: check failed: {:?}", case.label(), r.check.first_failure);
                return;
            };
            let flops = kernel.work(case).map_or(0.0, |w| w.flops);
            println!(
                "{:<34} [{imp:<14}] {:<16} median {:>10.3} ms  {:>8.1} GFLOP/s  (min {:.1}, {} samples, check max rel {:.1e})",
                format!("{} {}", case.kernel, case.label()),
                launch.label(),
                t.stats.median_s * 1e3,
                flops / t.stats.median_s / 1e9,
                flops / t.stats.min_s / 1e9,
                t.stats.n,
                r.check.max_rel_error,
            );
        }
        Err(e) => println!("{}: {e}", case.label()),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let what = args.get(1).map_or("gemm", String::as_str);
    let mut be = CpuBackend::new();
    let threads = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(be.info().parallelism);
    let tile = args.get(3).and_then(|s| s.parse().ok());
    let launch = Launch { threads: Some(threads), tile, ..Launch::default() };
    match what {
        "gemm" => {
            let kernel = KernelId::Gemm.def();
            let shapes: Vec<(u64, u64, u64)> = match args.get(4) {
                Some(text) => {
                    let dims: Vec<u64> = text.split(',').filter_map(|x| x.parse().ok()).collect();
                    let [m, n, k] = dims[..] else {
                        println!("expected M,N,K, got {text}");
                        return;
                    };
                    vec![(m, n, k)]
                }
                None => suite::gemm::DEFAULT_SHAPES.to_vec(),
            };
            for dtype in [Precision::Fp32, Precision::Fp64] {
                for &(m, n, kk) in &shapes {
                    let case = Case {
                        kernel: KernelId::Gemm.into(),
                        sizes: vec![("m", m), ("n", n), ("k", kk)],
                        dtype,
                        weights: None,
                        variant: None,
                    };
                    time(&mut be, kernel, &case, "rooftop", launch);
                    time(&mut be, kernel, &case, "matrixmultiply", launch);
                }
            }
        }
        "fma" => {
            let kernel = KernelId::Fma.def();
            for dtype in [Precision::Fp32, Precision::Fp64] {
                for scalar in [false, true] {
                    time(
                        &mut be,
                        kernel,
                        &suite::fma::ceiling_case(dtype, scalar),
                        "rooftop",
                        launch,
                    );
                }
            }
            println!("{:#?}", be.cpu());
        }
        "info" => println!("{:#?}", be.cpu()),
        _ => {
            let t0 = std::time::Instant::now();
            let quick = what == "quick";
            let opts = CeilingOptions::for_cpu(
                be.cpu(),
                quick,
                TimingOptions { min_time_s: 0.1, min_runs: 5, ..TimingOptions::default() },
            );
            let stop = AtomicBool::new(false);
            let verbose = std::env::var_os("ROOFTOP_EXAMPLE_VERBOSE").is_some();
            let mut last = String::new();
            let mut progress = |p: Progress<'_>| {
                let (tag, label) = match p {
                    Progress::Checking { label } => ("check", label),
                    Progress::Sampling { label, .. } => ("sample", label),
                };
                let key = format!("{tag} {label}");
                if verbose && key != last {
                    println!("{:7.3} s  {key}", t0.elapsed().as_secs_f64());
                    last = key;
                }
            };
            let c = match ceilings::measure(&mut be, &opts, &stop, &mut progress) {
                Ok(c) => c,
                Err(e) => {
                    println!("ceilings failed: {e}");
                    return;
                }
            };
            let took = t0.elapsed().as_secs_f64();
            for p in &c.sweep {
                println!(
                    "sweep {:<6} {:>12} B {:>8.1} GB/s",
                    p.pattern.as_str(),
                    p.working_set_bytes,
                    p.gbs
                );
            }
            for b in &c.bandwidth {
                println!(
                    "ceiling {:<5} {:<6} {:>8.1} GB/s at {} B",
                    b.level.as_str(),
                    b.pattern.as_str(),
                    b.gbs,
                    b.working_set_bytes
                );
            }
            for f in &c.compute {
                println!(
                    "compute {} {:<6} {:>8.1} GFLOP/s  theoretical {:?} ({:.1}%)  {}",
                    f.precision.as_str(),
                    f.variant,
                    f.gflops,
                    f.theoretical_gflops,
                    f.theoretical_gflops.map_or(f64::NAN, |t| 100.0 * f.gflops / t),
                    f.theoretical_formula.as_deref().unwrap_or("")
                );
            }
            for n in &c.notes {
                println!("note: {n}");
            }
            println!("took {took:.1} s");
        }
    }
}

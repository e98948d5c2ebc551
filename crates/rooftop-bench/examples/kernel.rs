//! Times one suite kernel on the CPU backend through the harness and prints its achieved
//! rates, without the CLI (used by `bench/stream/compare.sh`).
//!
//! `cargo run --release -p rooftop-bench --example kernel -- KERNEL SIZES [THREADS] [fp64]
//! [wformat=q4_0|q8_0|affine] [bits=B] [group=G] [variant=V] [tile=T]`
//! where SIZES is the kernel's `--single-config` (`33554432`, or `128,4096,4096`).
//! Prints one line: `kernel=triad case=... median_s=... best_s=... median_gbs=...
//! best_gbs=... median_gflops=...` (GB/s in decimal units, from the kernel's work model).

// An example program: printing its result is its job.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use rooftop_bench::backend::{Backend, Launch};
use rooftop_bench::cpu::CpuBackend;
use rooftop_bench::harness::{run_case, TimingOptions};
use rooftop_bench::job::parse_flag;
use rooftop_bench::{suite, Selection};
use rooftop_core::units::Precision;
use std::sync::atomic::AtomicBool;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [name, sizes, rest @ ..] = args.as_slice() else {
        return Err("usage: kernel KERNEL SIZES [THREADS] [fp64]".to_string());
    };
    let single: Vec<u64> = sizes
        .split(',')
        .map(|s| s.trim().parse::<u64>().map_err(|e| format!("size `{s}`: {e}")))
        .collect::<Result<_, _>>()?;
    let threads = rest.iter().find_map(|s| s.parse::<u32>().ok());
    let dtype = rest.iter().any(|s| s == "fp64").then_some(Precision::Fp64);
    let opt = |key: &str| rest.iter().find_map(|s| s.strip_prefix(key)?.strip_prefix('='));
    let num = |key: &str| -> Result<Option<u32>, String> {
        opt(key).map(|v| v.parse::<u32>().map_err(|e| format!("{key}={v}: {e}"))).transpose()
    };
    let err = |e: rooftop_bench::job::JobError| e.to_string();
    let kernel = suite::find(name).map_err(|e| e.to_string())?;
    let sel = Selection {
        single_config: Some(single),
        dtype,
        bits: num("bits")?,
        group_size: num("group")?,
        wformat: opt("wformat").map(|v| parse_flag(v, "wformat")).transpose().map_err(err)?,
        variant: opt("variant").map(|v| parse_flag(v, "variant")).transpose().map_err(err)?,
        ..Selection::default()
    };
    let tile = num("tile")?;
    let cases = kernel.cases(&sel).map_err(|e| e.to_string())?;
    let mut cpu = CpuBackend::new();
    let imp = cpu
        .implementations(kernel.id())
        .into_iter()
        .next()
        .ok_or_else(|| format!("no CPU implementation of {name}"))?;
    let launch = (threads.is_some() || tile.is_some()).then(|| Launch {
        threads: threads.or(Some(cpu.info().parallelism)),
        tile,
        ..Launch::default()
    });
    for case in cases {
        let r = run_case(
            &mut cpu,
            kernel,
            &case,
            &imp,
            launch,
            &TimingOptions::default(),
            &AtomicBool::new(false),
            &mut |_| {},
        )
        .map_err(|e| e.to_string())?;
        let Some(t) = r.timing else {
            return Err(format!("{}: not timed: {:?}", case.label(), r.check.first_failure));
        };
        let w = kernel.work(&case).map_err(|e| e.to_string())?;
        let (med, best) = (t.stats.median_s, t.stats.min_s);
        println!(
            "kernel={} case=\"{}\" launch=\"{}\" runs={} median_s={med:.6e} best_s={best:.6e} \
             median_gbs={:.2} best_gbs={:.2} median_gflops={:.2}",
            case.kernel,
            case.label(),
            r.launch.label(),
            t.times_s.len(),
            w.bytes() / med / 1e9,
            w.bytes() / best / 1e9,
            w.flops / med / 1e9,
        );
    }
    Ok(())
}

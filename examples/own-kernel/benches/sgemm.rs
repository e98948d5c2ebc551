//! Benchmarks two SGEMMs written as Rust closures with rooftop's harness: checked
//! against a reference, timed, and judged against this CPU's measured roofs.

// The bench binary reports on standard output, like `rooftop bench`.
#![allow(clippy::print_stdout)]
// m, n, k, a, b, c: the names of the GEMM formulas.
#![allow(clippy::many_single_char_names)]

use rooftop_bench::backend::{DType, HostBuf};
use rooftop_bench::ceilings::{self, CeilingOptions};
use rooftop_bench::cpu::CpuBackend;
use rooftop_bench::export::{self, BenchReport, Roofs};
use rooftop_bench::harness::TimingOptions;
use rooftop_bench::spec::{self, BufferDecl, HostBackend, HostCall, KernelSpec, SpecSet};
use rooftop_bench::suite::KernelId;
use rooftop_bench::Selection;
use std::sync::atomic::AtomicBool;

/// C = A B, row-major: the spec of an SGEMM kernel called `name`.
fn sgemm_spec(name: &str) -> Result<KernelSpec, Box<dyn std::error::Error>> {
    Ok(KernelSpec::builtin(name, KernelId::Gemm, &[("m", "M"), ("n", "N"), ("k", "K")])?
        .sizes(&["M", "N", "K"], &[&[128, 128, 128], &[384, 256, 320]])
        .buffer(BufferDecl::input("A", DType::F32, "M*K")?)
        .buffer(BufferDecl::input("B", DType::F32, "K*N")?)
        .buffer(BufferDecl::output("C", DType::F32, "M*N")?))
}

/// A, B, C and M, N, K of a call.
type GemmArgs<'c> = (&'c [f32], &'c [f32], &'c mut [f32], usize, usize, usize);

/// The three f32 buffers of a call, and M, N, K.
fn gemm_args<'c>(call: &'c mut HostCall<'_>) -> Result<GemmArgs<'c>, String> {
    let (m, n, k) = (call.size("M"), call.size("N"), call.size("K"));
    match &mut call.buffers[..] {
        [HostBuf::F32(a), HostBuf::F32(b), HostBuf::F32(c)] => Ok((a, b, c, m, n, k)),
        _ => Err("expected three f32 buffers".to_string()),
    }
}

fn naive(call: &mut HostCall<'_>) -> Result<(), String> {
    let (a, b, c, m, n, k) = gemm_args(call)?;
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f32;
            for p in 0..k {
                acc += a[i * k + p] * b[p * n + j];
            }
            c[i * n + j] = acc;
        }
    }
    Ok(())
}

/// i-p-j loop order in 64-wide blocks of K: the inner loop streams rows of B and C.
fn blocked(call: &mut HostCall<'_>) -> Result<(), String> {
    const KB: usize = 64;
    let (a, b, c, m, n, k) = gemm_args(call)?;
    c[..m * n].fill(0.0);
    for p0 in (0..k).step_by(KB) {
        for i in 0..m {
            let crow = &mut c[i * n..(i + 1) * n];
            for p in p0..(p0 + KB).min(k) {
                let aip = a[i * k + p];
                for (cj, bj) in crow.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                    *cj += aip * bj;
                }
            }
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let set = SpecSet::new(&[
        sgemm_spec("naive_sgemm")?,
        // Checked against the naive kernel on the same inputs, with gemm's tolerance.
        sgemm_spec("blocked_sgemm")?.reference_kernel("naive_sgemm"),
    ])?;
    let mut host = HostBackend::new();
    host.register("naive_sgemm", naive);
    host.register("blocked_sgemm", blocked);

    let timing = TimingOptions { min_time_s: 0.2, ..TimingOptions::default() };
    let mut results = Vec::new();
    for name in ["naive_sgemm", "blocked_sgemm"] {
        results.extend(spec::run::bench_kernel(
            &mut host,
            &set,
            name,
            &Selection::default(),
            false,
            &timing,
        )?);
    }

    // This CPU's roofs: its quick ceilings (DRAM bandwidth, FMA peak) measured by
    // rooftop's own kernels, merged into what the CPU reports about itself.
    let mut cpu = CpuBackend::new();
    let opts = CeilingOptions::for_cpu(cpu.cpu(), true, timing.clone());
    let ceil = ceilings::measure(&mut cpu, &opts, &AtomicBool::new(false), &mut |_| {})?;
    let theoretical = cpu.cpu().device_spec(Some(&ceil))?;
    let analysis = ceilings::calibrated_spec(&theoretical, &ceil);
    let roofs = Roofs { theoretical: &theoretical, analysis: &analysis, ceilings: Some(&ceil) };

    let info = rooftop_bench::backend::Backend::info(&host).clone();
    let mut report = BenchReport {
        schema_version: export::SCHEMA_VERSION,
        tool: "own-kernel example".to_string(),
        backend: info.clone(),
        device: export::device_record(&analysis),
        ceilings: Some(ceil.clone()),
        timing: export::timing_record(&timing, &info.timer),
        results: Vec::new(),
        warnings: Vec::new(),
        interrupted: false,
        time_spent: export::RunTime::default(),
    };
    for r in &results {
        let kernel = set.find(r.case.kernel.name())?;
        report.results.push(export::evaluate(kernel, r, roofs)?);
    }
    println!("{}", rooftop_report::bench::table_report(&report));

    let comparisons: Vec<_> = results
        .iter()
        .filter(|r| r.case.kernel.name() == "naive_sgemm")
        .filter_map(|a| {
            results
                .iter()
                .find(|b| b.case.kernel.name() == "blocked_sgemm" && b.case.sizes == a.case.sizes)
                .map(|b| spec::compare::compare(a, b))
        })
        .collect();
    println!("{}", rooftop_report::compare::text(&comparisons));
    if results.iter().any(|r| !r.check.passed) {
        return Err("a kernel failed its check against the reference (not timed)".into());
    }
    Ok(())
}

//! Reads Kineto traces and prints what the reader found and how fast: the benchmark of
//! the reader alone (`bench/trace/run.sh`).
//!
//! `cargo run --release -p rooftop-ingest --example read_trace -- [--threads N] FILE...`

#![allow(clippy::print_stdout, clippy::print_stderr)]

use rooftop_core::trace::GpuKind;
use rooftop_ingest::kineto::{read_path, ReadOptions};
use std::time::Instant;

fn main() -> std::process::ExitCode {
    let mut opts = ReadOptions::default();
    let mut args = std::env::args().skip(1).peekable();
    let mut files = Vec::new();
    while let Some(a) = args.next() {
        if a == "--threads" {
            opts.threads = args.next().and_then(|n| n.parse().ok()).unwrap_or(0);
        } else {
            files.push(a);
        }
    }
    let mut failed = false;
    for f in files {
        let path = std::path::Path::new(&f);
        let len = std::fs::metadata(path).map_or(0, |m| m.len());
        let t = Instant::now();
        match read_path(path, &opts, &mut |_, _| {}) {
            Ok(m) => {
                let secs = t.elapsed().as_secs_f64();
                let count = |k: GpuKind| m.gpu.iter().filter(|g| g.kind == k).count();
                let kernels = count(GpuKind::Kernel);
                let linked =
                    m.gpu.iter().filter(|g| g.kind == GpuKind::Kernel && g.op.is_some()).count();
                println!(
                    "{f}: {:.1} MB in {secs:.3} s = {:.0} MB/s; schema {:?}, {} devices, rank {:?}; \
                     {} ops, {kernels} kernels ({linked} with an op), {} memcpy, {} memset, {} annotations, \
                     {} runtime calls, {} syncs, {} modules, {} memory events",
                    len as f64 / 1e6,
                    len as f64 / 1e6 / secs,
                    m.schema,
                    m.devices.len(),
                    m.rank,
                    m.ops.len(),
                    count(GpuKind::Memcpy),
                    count(GpuKind::Memset),
                    m.annotations.len(),
                    m.runtime.len(),
                    m.syncs.len(),
                    m.modules.len(),
                    m.memory.len()
                );
                for w in &m.warnings {
                    println!("  warning {} ×{}: {}", w.kind, w.count, w.example);
                }
            }
            Err(e) => {
                eprintln!("{e}");
                failed = true;
            }
        }
    }
    if failed {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}

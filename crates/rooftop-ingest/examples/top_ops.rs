//! The library's one-call answer: the ops of a trace that take the most GPU time, with
//! their roofline (what `rooftop trace` prints first).
//!
//! `cargo run --release -p rooftop-ingest --example top_ops -- FILE [N]`

#![allow(clippy::print_stdout, clippy::print_stderr)]

use rooftop_ingest::prelude::*;
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next().map(PathBuf::from) else {
        eprintln!("usage: top_ops FILE [N]");
        return ExitCode::from(2);
    };
    let n = match args.next().map(|s| s.parse::<usize>()) {
        None => 10,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("N: expected a whole number ({e})");
            return ExitCode::from(2);
        }
    };
    let model = match read(&path) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let report = TraceReport::of(&model);
    let device = report.device.catalog_id.as_deref().unwrap_or("no catalog device: no roofs");
    println!("{} ({device})", path.display());
    for op in report.top_ops(n) {
        let pct = op.roofline_attainment_pct.map_or("—".to_string(), |p| format!("{p:.1}%"));
        let bound = op.bound.map_or("—".to_string(), |b| b.to_string());
        println!("{:>12.1} µs  {:>9}  {:<8}  {}", op.kernel_time_us.sum, pct, bound, op.name);
    }
    ExitCode::SUCCESS
}

//! Inflates gzip files on one thread with the decoder the trace reader uses (flate2 on
//! zlib-rs, CRC checked) into a reused 1 MiB buffer, and prints how fast: what the
//! gzip target of the speed benchmarks is bounded by (`bench/targets/run.py`,
//! docs/validation.md). The bytes are counted, not kept.
//!
//! `cargo run --release -p rooftop-ingest --example inflate -- FILE.gz...`

#![allow(clippy::print_stdout, clippy::print_stderr)]

use flate2::read::MultiGzDecoder;
use std::io::{BufReader, Read};
use std::time::Instant;

fn main() -> std::process::ExitCode {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: inflate FILE.gz...");
        return std::process::ExitCode::from(2);
    }
    let mut failed = false;
    let mut buf = vec![0u8; 1 << 20];
    for f in files {
        let t = Instant::now();
        let file = match std::fs::File::open(&f) {
            Ok(file) => file,
            Err(e) => {
                eprintln!("{f}: {e}");
                failed = true;
                continue;
            }
        };
        let mut gz = MultiGzDecoder::new(BufReader::with_capacity(1 << 20, file));
        let mut total = 0u64;
        let result = loop {
            match gz.read(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => total += n as u64,
                Err(e) => break Err(e),
            }
        };
        let secs = t.elapsed().as_secs_f64();
        match result {
            Ok(()) => println!(
                "{f}: {total} bytes inflated in {secs:.3} s ({:.0} MB/s of output)",
                total as f64 / secs / 1e6
            ),
            Err(e) => {
                eprintln!("{f}: byte {total} of the inflated stream: {e}");
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

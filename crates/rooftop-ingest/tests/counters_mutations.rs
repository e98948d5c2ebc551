//! No counter input makes rooftop panic: every real fixture, truncated anywhere or with
//! bytes flipped, goes through every reader, and whatever parses goes through the
//! derivation and the analysis (the AFL++ targets in `fuzz/` do the same with
//! coverage guidance; this runs on every `cargo test`).

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use rooftop_core::counters::analyze;
use rooftop_ingest::counters::{
    guess, guess_text, ncu, nsys, read_path, rocprof, rocprof_compute, rocprofv3,
};
use std::io::Write as _;
use std::path::PathBuf;

const FILES: &[&str] = &[
    "rocprof/rocprof_compute_vcopy_MI200/pmc_perf.csv",
    "rocprof/rocprof_compute_vcopy_MI200/roofline.csv",
    "rocprof/rocprof_compute_vcopy_MI300X_A1/pmc_perf.csv",
    "rocprof/rocprofv3_docs_examples/counter_collection.csv",
    "rocprof/rocprofv3_docs_examples/kernel_trace.csv",
    "rocprof/rocprofv3_gfx1151_decode/decode_kernel_trace.csv",
    "ncu/a100_polybench_gemm_metrics.csv",
];

fn load(rel: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn all_readers(text: &str) {
    let _ = guess_text("x.csv", text);
    let sets = [
        rocprof::read_str("results.csv", text),
        rocprofv3::read_str("kernel_trace.csv", text),
        rocprofv3::read_str("counter_collection.csv", text),
        rocprofv3::read_json_str("results.json", text),
        rocprof_compute::read_str("pmc_perf.csv", text),
        ncu::read_str("ncu.csv", text),
        nsys::read_str("nsys.csv", text),
    ];
    for set in sets.into_iter().flatten() {
        let _ = analyze(set, None);
    }
}

/// Cuts a string at a byte offset, backing off to a char boundary.
fn cut(s: &str, at: usize) -> &str {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    &s[..at]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn truncated_fixtures_never_panic(file in 0..FILES.len(), frac in 0.0f64..1.0) {
        let text = load(FILES[file]);
        let at = (text.len() as f64 * frac) as usize;
        all_readers(cut(&text, at));
    }

    #[test]
    fn mutated_fixtures_never_panic(
        file in 0..FILES.len(),
        edits in proptest::collection::vec((0.0f64..1.0, any::<u8>()), 1..8),
    ) {
        let mut bytes = load(FILES[file]).into_bytes();
        for (pos, b) in edits {
            let i = ((bytes.len() as f64) * pos) as usize;
            if let Some(x) = bytes.get_mut(i) {
                // Printable ASCII keeps the text valid UTF-8 and CSV-like.
                *x = b' ' + b % 95;
            }
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        all_readers(&text);
    }
}

#[test]
fn every_fixture_whole_through_every_reader() {
    for f in FILES {
        all_readers(&load(f));
    }
}

/// The SQLite fixtures and the gzip layer: truncated and corrupted databases (plain and
/// gzipped) and damaged gzip streams go through detection and both database readers.
const DATABASES: &[&str] = &[
    "nsys/sqlite/h100_train_step.sqlite",
    "nsys/sqlite/h100_train_step_old_schema.sqlite",
    "rocprof/rocpd/mi300x_5151_results.db",
];

fn load_bytes(rel: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// Writes `bytes` to a file of its own and runs detection and every reader on it.
fn all_file_readers(tag: &str, bytes: &[u8]) {
    let dir = tempfile::Builder::new().prefix("rooftop-mutations-").tempdir().unwrap();
    let p = dir.path().join(format!("{tag}.db"));
    std::fs::write(&p, bytes).unwrap();
    let _ = guess(&p);
    for set in [
        read_path(&p),
        rooftop_ingest::counters::nsys_sqlite::read(&p),
        rooftop_ingest::counters::rocpd::read(&p),
        ncu::read(&p),
    ]
    .into_iter()
    .flatten()
    {
        let _ = analyze(set, None);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn truncated_databases_never_panic(file in 0..DATABASES.len(), frac in 0.0f64..1.0, zip in any::<bool>()) {
        let bytes = load_bytes(DATABASES[file]);
        let cut = &bytes[..(bytes.len() as f64 * frac) as usize];
        let data = if zip { gzip(cut) } else { cut.to_vec() };
        all_file_readers(&format!("trunc-{file}-{}", (frac * 1e6) as u64), &data);
    }

    #[test]
    fn corrupted_databases_never_panic(
        file in 0..DATABASES.len(),
        edits in proptest::collection::vec((0.0f64..1.0, any::<u8>()), 1..16),
        zip in any::<bool>(),
    ) {
        let mut bytes = load_bytes(DATABASES[file]);
        for (pos, b) in &edits {
            let i = ((bytes.len() as f64) * pos) as usize;
            if let Some(x) = bytes.get_mut(i) {
                *x = *b;
            }
        }
        let data = if zip { gzip(&bytes) } else { bytes };
        let tag = format!("flip-{file}-{}", edits.iter().map(|(p, b)| (p * 1e6) as u64 + u64::from(*b)).sum::<u64>());
        all_file_readers(&tag, &data);
    }

    #[test]
    fn damaged_gzip_streams_never_panic(
        file in 0..FILES.len(),
        frac in 0.0f64..1.0,
        flips in proptest::collection::vec((0.0f64..1.0, any::<u8>()), 0..6),
    ) {
        let mut z = gzip(load(FILES[file]).as_bytes());
        for (pos, b) in &flips {
            let i = ((z.len() as f64) * pos) as usize;
            if let Some(x) = z.get_mut(i) {
                *x ^= *b;
            }
        }
        z.truncate(((z.len() as f64) * frac) as usize + 2);
        all_file_readers(&format!("gz-{file}-{}", (frac * 1e6) as u64), &z);
    }
}

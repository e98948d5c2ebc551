//! No counter input makes rooftop panic: every real fixture, truncated anywhere or with
//! bytes flipped, goes through every reader, and whatever parses goes through the
//! derivation and the analysis (the `cargo fuzz` targets in `fuzz/` do the same with
//! coverage guidance; this runs on every `cargo test`).

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use rooftop_core::counters::analyze;
use rooftop_ingest::counters::{guess_text, ncu, nsys, rocprof, rocprof_compute, rocprofv3};
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

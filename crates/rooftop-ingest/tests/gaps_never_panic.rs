//! Mutated traces through the reader and the whole analysis (idle, launch, syncs, graphs,
//! critical path with what-if, modules, memory, inference): an error or a report, never a
//! panic. The sample is the hand-built vLLM trace, which has every event kind these
//! sections read (runtime calls, `cuda_sync`, `nn.Module` frames, `[memory]` instants,
//! graph launches, step annotations).

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use rooftop_core::trace::gaps::critical_path::CpOptions;
use rooftop_core::trace::report::{analyze, TraceOptions};
use rooftop_ingest::kineto::{read_bytes, ReadOptions};
use std::path::{Path, PathBuf};

fn sample() -> Vec<u8> {
    std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/kineto/handmade/vllm_moe_b200.json"),
    )
    .unwrap()
}

fn run(bytes: &[u8]) {
    let Ok(m) = read_bytes(bytes, Path::new("p.json"), &ReadOptions { threads: 1 }, &mut |_, _| {})
    else {
        return;
    };
    let opts = TraceOptions {
        critical_path: CpOptions {
            what_if: vec!["vllm::moe_forward=0.5".parse().unwrap(), "fused*=0".parse().unwrap()],
            ..CpOptions::default()
        },
        ..TraceOptions::default()
    };
    let _ = analyze(&m, None, &opts);
}

/// Number-shaped replacements that stress the arithmetic.
const NUMBERS: [&str; 8] =
    ["0", "-1", "-1000000", "9223372036854775807", "1e18", "0.0001", "4294967295", "3"];

#[test]
fn the_sample_itself_analyses() {
    run(&sample());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn byte_flips(flips in proptest::collection::vec((0usize..200_000, any::<u8>()), 1..6)) {
        let mut s = sample();
        for (i, b) in flips {
            let n = s.len();
            s[i % n] = b;
        }
        run(&s);
    }

    #[test]
    fn numbers_replaced(picks in proptest::collection::vec((0usize..100_000, 0usize..8), 1..12)) {
        // Replace the digits of numbers at random places with extreme values.
        let mut s = String::from_utf8(sample()).unwrap();
        for (at, k) in picks {
            let at = at % s.len();
            let Some(start) = s[at..].find(|c: char| c.is_ascii_digit()).map(|p| p + at) else {
                continue;
            };
            let end = s[start..]
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .map_or(s.len(), |p| p + start);
            s.replace_range(start..end, NUMBERS[k]);
        }
        run(s.as_bytes());
    }

    #[test]
    fn events_dropped(drop in proptest::collection::vec(0usize..200, 1..40)) {
        // Remove whole events (one per line in the sample): unmatched syncs, launches
        // without kernels, modules without parents.
        let text = String::from_utf8(sample()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mut events = v["traceEvents"].as_array().unwrap().clone();
        for d in drop {
            if !events.is_empty() {
                let n = events.len();
                events.remove(d % n);
            }
        }
        let mut v = v.clone();
        v["traceEvents"] = serde_json::Value::Array(events);
        run(serde_json::to_string(&v).unwrap().as_bytes());
    }
}

//! Feeds arbitrary text to the Nsight Compute and Nsight Systems CSV readers. Any outcome
//! but a panic (or a hang) is a pass: bad input must come back as `CounterError`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rooftop_ingest::counters::{ncu, nsys};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = ncu::read_str("fuzz.csv", &text);
    let _ = nsys::read_str("fuzz.csv", &text);
});

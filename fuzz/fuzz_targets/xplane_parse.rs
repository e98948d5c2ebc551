//! Feeds arbitrary bytes to the XPlane reader (`*.xplane.pb`) and, when they decode, runs
//! the trace analysis on the model. Any outcome but a panic (or a hang) is a pass: bad
//! input must come back as `XplaneError` or counted warnings.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rooftop_core::device::Catalog;
use rooftop_core::trace::report::{analyze, TraceOptions};
use rooftop_ingest::xplane::read_bytes;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = read_bytes(data, Path::new("fuzz.xplane.pb")) {
        let cat = Catalog::builtin();
        let _ = analyze(&m, cat.lookup("mi355x").ok(), &TraceOptions::default());
    }
});

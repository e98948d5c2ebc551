//! Fuzzes the AMD counter readers (rocprof v1, rocprofv3 CSV/JSON, rocprof-compute
//! pmc_perf.csv) through their in-memory entry points: they must return an error, never
//! panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rooftop_ingest::counters::{rocprof, rocprof_compute, rocprofv3};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = rocprof::read_str("fuzz.csv", text);
        let _ = rocprofv3::read_str("fuzz.csv", text);
        let _ = rocprof_compute::read_str("pmc_perf.csv", text);
        let mut notes = Vec::new();
        let _ =
            rocprof_compute::roofs_from_csv(std::path::Path::new("roofline.csv"), text, &mut notes);
    }
});

//! Feeds arbitrary bytes to the Kineto reader: plain JSON, and the same bytes behind a
//! gzip magic so the inflater sees them too. Any outcome but a panic (or a hang) is a
//! pass: bad input must come back as `TraceError` or counted warnings.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rooftop_ingest::kineto::{read_bytes, ReadOptions};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let name = Path::new("fuzz.json");
    for threads in [1, 2] {
        let opts = ReadOptions { threads };
        let _ = read_bytes(data, name, &opts, &mut |_, _| {});
    }
    let mut gz = vec![0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0, 0xff];
    gz.extend_from_slice(data);
    let _ = read_bytes(&gz, name, &ReadOptions { threads: 1 }, &mut |_, _| {});
});

//! The one place that maps files into memory (`unsafe` is denied everywhere else).

use std::fs::File;

/// A read-only mapping of a whole file.
pub(crate) type Map = memmap2::Mmap;

/// Maps `file` read-only.
#[allow(unsafe_code)]
pub(crate) fn map(file: &File) -> std::io::Result<Map> {
    // SAFETY: `Mmap::map` is unsafe because the mapped bytes can change underneath us
    // if another process writes or truncates the file while it is mapped. We only read
    // the bytes, and every byte is validated as JSON by the parser, so a concurrent
    // change gives a parse error or a wrong (but memory-safe) result; truncation can
    // raise SIGBUS, which ends the process. Profiler traces are written once, before we
    // read them; this risk is documented in the reader's module docs.
    let map = unsafe { memmap2::MmapOptions::new().map(file)? };
    // The parser reads each stretch front to back.
    let _ = map.advise(memmap2::Advice::Sequential);
    Ok(map)
}

/// Drops the pages of `map[from..to]` (whole pages inside the range) from this
/// process's resident set once the parser is done with them. The bytes stay valid:
/// a later read faults them in again from the page cache.
#[allow(unsafe_code)]
pub(crate) fn release(map: &Map, from: usize, to: usize) {
    const PAGE: usize = 4096;
    let start = from.div_ceil(PAGE) * PAGE;
    let end = (to.min(map.len()) / PAGE) * PAGE;
    if end <= start {
        return;
    }
    // SAFETY: `MADV_DONTNEED` is unsafe in memmap2 because on a private writable
    // mapping it discards writes. This mapping is read-only and shared with the file:
    // the kernel drops the page-table entries and refills them from the file (the page
    // cache) on the next access, so every byte read afterwards is the same as before.
    // Failure only means the pages stay resident.
    let _ = unsafe {
        map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
    };
}

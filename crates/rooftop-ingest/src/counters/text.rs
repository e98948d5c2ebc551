//! Shared text helpers for the CSV and JSON readers: reading a file (gzip detected by
//! content, BOM stripped) with errors in the readers' [`CounterError`] form.

use super::CounterError;
use crate::compressed::{self, ReadError};
use std::path::Path;

fn counter_error(e: &ReadError) -> CounterError {
    CounterError::new(&e.path, e.reason())
}

/// Reads a text file (plain or gzip), dropping a UTF-8 BOM.
pub(crate) fn read_text(path: &Path) -> Result<String, CounterError> {
    compressed::read_text(path).map_err(|e| counter_error(&e))
}

/// The first `limit` bytes of a file (decompressed when gzip).
pub(crate) fn read_head_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, CounterError> {
    compressed::read_head(path, limit).map_err(|e| counter_error(&e))
}

/// The first `limit` bytes of a file as text (lossy at the cut), BOM dropped.
pub(crate) fn read_head(path: &Path, limit: u64) -> Result<String, CounterError> {
    let buf = read_head_bytes(path, limit)?;
    let bytes = buf.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&buf);
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

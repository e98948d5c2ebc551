//! Shared text helpers for the CSV readers: reading a file (BOM stripped), number
//! parsing with digit grouping, header lookup.

use super::CounterError;
use std::path::Path;

/// Reads a text file, dropping a UTF-8 BOM.
pub(crate) fn read_text(path: &Path) -> Result<String, CounterError> {
    let bytes = std::fs::read(path).map_err(|e| CounterError::io(path, &e))?;
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
    String::from_utf8(bytes.to_vec()).map_err(|e| {
        CounterError::new(
            path,
            format!("not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()),
        )
    })
}

/// The first `limit` bytes of a file as text (lossy at the cut), BOM dropped.
pub(crate) fn read_head(path: &Path, limit: u64) -> Result<String, CounterError> {
    use std::io::Read as _;
    let f = std::fs::File::open(path).map_err(|e| CounterError::io(path, &e))?;
    let mut buf = Vec::new();
    f.take(limit).read_to_end(&mut buf).map_err(|e| CounterError::io(path, &e))?;
    let bytes = buf.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&buf);
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

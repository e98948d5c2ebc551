//! Input files that may be gzip-compressed: every reader of user files goes through
//! here (counter files, device files, model configs, `rooftop diff` exports), so that
//! `foo.csv.gz`, `results.json.gz`, `report.sqlite.gz` or a gzipped file without the
//! `.gz` suffix read like the plain file.
//!
//! Compression is told by **content**, never by the file name: a gzip member starts
//! with the bytes `1f 8b` (RFC 1952 §2.3.1), which no text, JSON, CSV, TOML or SQLite
//! file can start with. Concatenated members (`cat a.gz b.gz`, what `pigz` and
//! `bgzip` write) are read as one stream, as `gzip -d` does.
//!
//! Errors are one sentence naming the file and the place: the compressed byte where a
//! damaged stream stops, or the offset of the first byte that is not UTF-8 (in the
//! decompressed text for a gzipped file).

use rooftop_core::limits::Limit;
use std::fmt;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

/// The two bytes every gzip member starts with (RFC 1952 §2.3.1).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Whether `bytes` start like a gzip stream.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&GZIP_MAGIC)
}

/// A file name without a trailing `.gz` (`kernel_trace.csv.gz` → `kernel_trace.csv`), so
/// that name-based conventions (rocprofv3's `*_kernel_trace.csv`) hold for gzipped files.
pub fn name_without_gz(name: &str) -> &str {
    name.strip_suffix(".gz").or_else(|| name.strip_suffix(".GZ")).unwrap_or(name)
}

/// Why a file could not be read.
#[derive(Debug)]
pub enum ReadErrorKind {
    /// The operating system refused (missing file, permissions, a directory).
    Io(std::io::Error),
    /// The gzip stream is damaged or cut short.
    Gzip {
        /// Compressed bytes consumed when the decoder stopped.
        offset: u64,
        reason: String,
    },
    /// The (decompressed) bytes are not UTF-8 text.
    NotUtf8 {
        /// Offset of the first invalid byte in the decompressed text.
        offset: usize,
        gzipped: bool,
    },
    /// Over one of rooftop's limits (the sentence says which and how to raise it).
    Limit(String),
}

/// A file that could not be read as (possibly gzipped) bytes or text.
#[derive(Debug)]
pub struct ReadError {
    pub path: PathBuf,
    pub kind: ReadErrorKind,
}

impl ReadError {
    /// The reason without the file name, for errors that name the file themselves.
    pub fn reason(&self) -> String {
        match &self.kind {
            ReadErrorKind::Io(e) => format!("cannot read: {e}"),
            ReadErrorKind::Gzip { offset, reason } => {
                format!("the gzip stream is damaged at compressed byte {offset}: {reason}")
            }
            ReadErrorKind::NotUtf8 { offset, gzipped } => format!(
                "not UTF-8 text (invalid byte at offset {offset}{})",
                if *gzipped { " of the decompressed text" } else { "" }
            ),
            ReadErrorKind::Limit(m) => m.clone(),
        }
    }
}

/// `PATH: what went wrong` (for an I/O error, the system's words after the path, so
/// that "cannot read {error}" reads as one sentence).
impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ReadErrorKind::Io(e) => write!(f, "{}: {e}", self.path.display()),
            _ => write!(f, "{}: {}", self.path.display(), self.reason()),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ReadErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

fn io_err(path: &Path, e: std::io::Error) -> ReadError {
    ReadError { path: path.to_path_buf(), kind: ReadErrorKind::Io(e) }
}

/// The reason of a failed inflate, in words.
fn gzip_reason(e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        "the file ends before the compressed data does".to_string()
    } else {
        e.to_string()
    }
}

/// Decompresses every gzip member of `data`, at most `limit` output bytes. A damaged
/// stream is an error unless `partial_ok` and some output was produced (format
/// detection only needs the first bytes).
fn gunzip(
    path: &Path,
    data: &[u8],
    limit: Option<u64>,
    partial_ok: bool,
) -> Result<Vec<u8>, ReadError> {
    let cursor = std::io::Cursor::new(data);
    let mut dec = flate2::bufread::MultiGzDecoder::new(cursor);
    // A gzip bomb stops at the inflate limit (`rooftop_core::limits`), one byte past it.
    let allowed = (data.len() as u64)
        .saturating_mul(Limit::InflateRatio.value())
        .max(Limit::InflateFloor.value());
    let cap = limit.unwrap_or(allowed.saturating_add(1));
    let mut out = Vec::with_capacity(data.len().saturating_mul(4).min(cap as usize).min(1 << 30));
    let result = (&mut dec).take(cap).read_to_end(&mut out);
    if limit.is_none() && out.len() as u64 > allowed {
        let found =
            format!("more than {allowed} bytes inflated from {} compressed bytes", data.len());
        return Err(ReadError {
            path: path.to_path_buf(),
            kind: ReadErrorKind::Limit(format!(
                "the gzip stream inflates too far: {}",
                Limit::InflateRatio.exceeded_here(&found)
            )),
        });
    }
    match result {
        Ok(_) => Ok(out),
        Err(_) if partial_ok && !out.is_empty() => Ok(out),
        Err(e) => Err(ReadError {
            path: path.to_path_buf(),
            kind: ReadErrorKind::Gzip { offset: dec.get_ref().position(), reason: gzip_reason(&e) },
        }),
    }
}

/// The whole file, decompressed when it is gzip.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, ReadError> {
    let data = std::fs::read(path).map_err(|e| io_err(path, e))?;
    if is_gzip(&data) {
        gunzip(path, &data, None, false)
    } else {
        Ok(data)
    }
}

/// The whole file as UTF-8 text (decompressed when gzip), without a leading BOM.
pub fn read_text(path: &Path) -> Result<String, ReadError> {
    let bytes = read_bytes(path)?;
    let gzipped = is_gzip_file(path);
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
    match std::str::from_utf8(body) {
        Ok(s) => Ok(s.to_string()),
        Err(e) => Err(ReadError {
            path: path.to_path_buf(),
            kind: ReadErrorKind::NotUtf8 { offset: e.valid_up_to(), gzipped },
        }),
    }
}

/// Whether the file on disk starts with the gzip magic (false when it cannot be read).
pub fn is_gzip_file(path: &Path) -> bool {
    let mut head = [0u8; 2];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && is_gzip(&head)
}

/// The first `limit` bytes of the file, decompressed when gzip. A gzip stream damaged
/// after the first bytes still gives those bytes (the full read reports the damage).
pub fn read_head(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let f = std::fs::File::open(path).map_err(|e| io_err(path, e))?;
    let mut reader = std::io::BufReader::new(f);
    let starts_gzip = is_gzip(reader.fill_buf().map_err(|e| io_err(path, e))?);
    if !starts_gzip {
        let mut buf = Vec::new();
        reader.take(limit).read_to_end(&mut buf).map_err(|e| io_err(path, e))?;
        return Ok(buf);
    }
    // Enough compressed input for `limit` bytes of text in all but pathological cases;
    // a stream cut here decodes what it has.
    let mut compressed = Vec::new();
    reader
        .take(limit.saturating_mul(4).max(1 << 16))
        .read_to_end(&mut compressed)
        .map_err(|e| io_err(path, e))?;
    gunzip(path, &compressed, Some(limit), true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    fn gz(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let _ = e.write_all(bytes);
        e.finish().unwrap_or_default()
    }

    /// `bytes` in the file `name` of a fresh scratch directory, and the directory's guard:
    /// it is removed when the guard drops (bind it to a name, not `_`).
    fn temp(name: &str, bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::Builder::new().prefix("rooftop-compressed-").tempdir().unwrap();
        let p = dir.path().join(name);
        let _ = std::fs::write(&p, bytes);
        (dir, p)
    }

    #[test]
    fn plain_and_gzip_read_alike() {
        let text = "\u{feff}a,b\n1,2\n";
        let (_plain_guard, plain) = temp("plain.csv", text.as_bytes());
        let (_zipped_guard, zipped) = temp("zipped.csv.gz", &gz(text.as_bytes()));
        // Gzipped without the suffix: detected by content.
        let (_hidden_guard, hidden) = temp("hidden.csv", &gz(text.as_bytes()));
        for p in [&plain, &zipped, &hidden] {
            assert_eq!(read_text(p).ok().as_deref(), Some("a,b\n1,2\n"), "{}", p.display());
        }
        assert_eq!(read_head(&zipped, 3).ok(), Some(b"\xEF\xBB\xBFa,b"[..3].to_vec()));
    }

    #[test]
    fn concatenated_members_are_one_stream() {
        let mut both = gz(b"first\n");
        both.extend(gz(b"second\n"));
        let (_p_guard, p) = temp("two.gz", &both);
        assert_eq!(read_text(&p).ok().as_deref(), Some("first\nsecond\n"));
    }

    #[test]
    fn truncated_gzip_names_the_byte() {
        // Text that does not compress to nothing, so half the stream holds output.
        let text: String = (0u64..4000).map(|i| (i * 7919 % 10007).to_string() + ",").collect();
        let full = gz(text.as_bytes());
        let (_p_guard, p) = temp("cut.gz", &full[..full.len() / 2]);
        let e = read_text(&p).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("cut.gz") && e.contains("compressed byte"), "{e}");
        assert!(e.contains("ends before"), "{e}");
        // The head of a cut stream is still readable for format detection.
        assert_eq!(read_head(&p, 4).ok(), Some(b"0,79".to_vec()));
    }

    #[test]
    fn not_utf8_names_the_offset() {
        let (_p_guard, p) = temp("bad.gz", &gz(b"ok\xff"));
        let e = read_text(&p).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("offset 2 of the decompressed text"), "{e}");
        let (_p_guard, p) = temp("bad.txt", b"ok\xff");
        let e = read_text(&p).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("offset 2)"), "{e}");
    }

    #[test]
    fn names_without_gz() {
        assert_eq!(name_without_gz("a_kernel_trace.csv.gz"), "a_kernel_trace.csv");
        assert_eq!(name_without_gz("results.json"), "results.json");
    }

    proptest::proptest! {
        #[test]
        fn damaged_gzip_never_panics(cut in 0usize..400, flip in 0usize..400, bit in 0u8..8) {
            let mut data = gz("ID,Kernel Name\n0,k\n".repeat(20).as_bytes());
            if flip < data.len() {
                data[flip] ^= 1 << bit;
            }
            data.truncate(cut.max(2));
            let (_p_guard, p) = temp(&format!("prop-{cut}-{flip}-{bit}.gz"), &data);
            let _ = read_text(&p);
            let _ = read_head(&p, 64);
        }
    }
}

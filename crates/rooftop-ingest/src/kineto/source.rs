//! The bytes of a trace file, memory-mapped, and what gzip needs: the magic bytes that
//! detect it (not the file name) and a reader that counts the compressed bytes used.

use super::error::TraceError;
use std::fs::File;
use std::io::{BufRead, Read};
use std::ops::Deref;
use std::path::Path;

/// The two bytes every gzip member starts with (RFC 1952 §2.3.1).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Whether `bytes` start like a gzip stream.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&GZIP_MAGIC)
}

/// A trace's JSON bytes.
#[derive(Debug)]
pub(crate) enum Bytes {
    Mapped(crate::mmap::Map),
    Owned(Vec<u8>),
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// Opens `path`: maps it (plain or gzip alike; the caller looks at the magic bytes).
pub(crate) fn open(path: &Path) -> Result<Bytes, TraceError> {
    let io = |source| TraceError::Io { path: path.to_path_buf(), source };
    let file = File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if meta.is_dir() {
        return Err(io(std::io::Error::other("is a directory")));
    }
    // Pipes and other special files cannot be mapped: read them.
    let bytes = if meta.is_file() && meta.len() > 0 {
        match crate::mmap::map(&file) {
            Ok(m) => Bytes::Mapped(m),
            Err(_) => Bytes::Owned(std::fs::read(path).map_err(io)?),
        }
    } else {
        let mut v = Vec::new();
        (&file).read_to_end(&mut v).map_err(io)?;
        Bytes::Owned(v)
    };
    Ok(bytes)
}

/// A `BufRead` over a slice that knows how much was consumed.
pub(crate) struct Counting<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Counting<'a> {
    pub fn new(data: &'a [u8]) -> Counting<'a> {
        Counting { data, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }
}

/// The reason of a failed inflate, in words.
pub(crate) fn gzip_reason(e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        "the file ends before the compressed data does".to_string()
    } else {
        e.to_string()
    }
}

impl Read for Counting<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = out.len().min(self.data.len() - self.pos);
        out[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl BufRead for Counting<'_> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        Ok(&self.data[self.pos..])
    }
    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.data.len());
    }
}

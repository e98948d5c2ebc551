//! Errors and warnings of the Kineto reader, with the position of the bad input.

use rooftop_core::limits::Limit;
use rooftop_core::trace::TraceWarning;
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// Why a trace could not be read. Every variant names the file; JSON errors add the byte
/// offset, the line and the column (both 1-based) and what was expected there.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file or directory could not be opened or read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The gzip stream ended early or is corrupt.
    #[error(
        "{}: the gzip stream is truncated or corrupt at compressed byte {compressed_offset} \
         (after {inflated} bytes inflated): {reason}",
        path.display()
    )]
    Gzip { path: PathBuf, compressed_offset: u64, inflated: u64, reason: String },
    /// The bytes are not JSON (or not the JSON shape of a trace) at this position.
    #[error(
        "{}: invalid trace JSON at byte {offset} (line {line}, column {column}): {message}",
        path.display()
    )]
    Json { path: PathBuf, offset: u64, line: u64, column: u64, message: String },
    /// The file has no bytes at all (whatever its name says it is).
    #[error("{}: the file is empty: it ends at byte 0 (line 1, column 1), before any trace", path.display())]
    Empty { path: PathBuf },
    /// Valid JSON, but no `traceEvents`.
    #[error(
        "{}: no `traceEvents` array: expected a PyTorch profiler (Kineto) trace, a JSON object \
         with a `traceEvents` array (or a bare array of events)",
        path.display()
    )]
    NoTraceEvents { path: PathBuf },
    /// Over one of rooftop's limits (`rooftop_core::limits`, docs/limits.md).
    #[error("{}: {message}", path.display())]
    Limit { path: PathBuf, message: String },
    /// A directory without any `*.json` / `*.json.gz` file.
    #[error(
        "{}: no traces in this directory: expected Kineto trace files named *.json or *.json.gz",
        path.display()
    )]
    NoTraces { path: PathBuf },
}

impl TraceError {
    /// The file (or directory) the error is about.
    pub fn path(&self) -> &std::path::Path {
        match self {
            TraceError::Io { path, .. }
            | TraceError::Gzip { path, .. }
            | TraceError::Json { path, .. }
            | TraceError::NoTraceEvents { path }
            | TraceError::Empty { path }
            | TraceError::Limit { path, .. }
            | TraceError::NoTraces { path } => path,
        }
    }
}

/// A syntax error at an absolute byte offset; the caller adds the path and line/column.
#[derive(Debug, Clone)]
pub(crate) struct PosError {
    pub offset: usize,
    pub message: String,
    /// `traceEvents` was never found.
    pub no_events: bool,
    /// Line and column, when the reader computed them (streaming).
    pub position: Option<(u64, u64)>,
    /// The input ended there (a streaming reader may have more to read).
    pub eof: bool,
    /// Not a syntax error: the input is over a limit (`message` says which).
    pub limit: bool,
}

impl PosError {
    pub fn new(offset: usize, message: impl Into<String>) -> PosError {
        PosError {
            offset,
            message: message.into(),
            no_events: false,
            position: None,
            eof: false,
            limit: false,
        }
    }

    /// The input is over `limit` at `offset`; `found` says what was seen.
    pub fn limit(offset: usize, limit: Limit, found: &str) -> PosError {
        PosError { limit: true, ..PosError::new(offset, limit.exceeded_here(found)) }
    }

    /// Converts a serde_json error raised by a deserializer over `buf[start..]`.
    pub fn from_json(buf: &[u8], start: usize, e: &serde_json::Error) -> PosError {
        let sub = &buf[start.min(buf.len())..];
        // serde_json's column is the 1-based column of the offending byte, except at the
        // end of the input, where it points past the last byte.
        let offset = if e.is_eof() {
            buf.len()
        } else {
            absolute_offset(sub, e.line(), e.column().saturating_sub(1)) + start
        };
        let text = e.to_string();
        // serde_json appends " at line L column C" relative to the sub-slice: drop it,
        // the caller states the absolute position.
        let message = match text.rfind(" at line ") {
            Some(i) => text[..i].to_string(),
            None => text,
        };
        let message = if e.is_eof() {
            format!("the file ends in the middle of the JSON ({message})")
        } else {
            message
        };
        PosError { eof: e.is_eof(), ..PosError::new(offset, message) }
    }

    pub fn into_trace_error(self, path: PathBuf, buf: &[u8]) -> TraceError {
        if self.no_events {
            return TraceError::NoTraceEvents { path };
        }
        let (line, column) = self.position.unwrap_or_else(|| line_column(buf, self.offset));
        if self.limit {
            let message =
                format!("at byte {} (line {line}, column {column}): {}", self.offset, self.message);
            return TraceError::Limit { path, message };
        }
        TraceError::Json { path, offset: self.offset as u64, line, column, message: self.message }
    }
}

/// The byte offset of (1-based line, 0-based byte column) in `sub`.
fn absolute_offset(sub: &[u8], line: usize, column: usize) -> usize {
    let mut start_of_line = 0;
    let mut seen = 1;
    if line > 1 {
        for (i, &b) in sub.iter().enumerate() {
            if b == b'\n' {
                seen += 1;
                if seen == line {
                    start_of_line = i + 1;
                    break;
                }
            }
        }
    }
    (start_of_line + column).min(sub.len())
}

/// 1-based line and column (in bytes) of `offset` in `buf`.
pub(crate) fn line_column(buf: &[u8], offset: usize) -> (u64, u64) {
    let head = &buf[..offset.min(buf.len())];
    #[allow(clippy::naive_bytecount)] // error path only; not worth a dependency
    let line = 1 + head.iter().filter(|&&b| b == b'\n').count() as u64;
    let start = head.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    (line, (head.len() - start) as u64 + 1)
}

/// The first occurrence of a warning.
#[derive(Debug)]
struct Example {
    /// Byte offset of the event (`usize::MAX`: none).
    offset: usize,
    text: String,
    /// Line and column, once known.
    position: Option<(u64, u64)>,
}

/// How many, and the first example.
type Entry = (u64, Option<Example>);

/// Counted warnings: per kind, how many and the first example (with its byte offset).
#[derive(Debug, Default)]
pub(crate) struct Warnings {
    map: BTreeMap<&'static str, Entry>,
    /// An example with an offset but no line yet was added.
    unresolved: bool,
}

impl Warnings {
    /// Counts one occurrence; `detail` is only evaluated for the first.
    pub fn add(
        &mut self,
        kind: &'static str,
        offset: Option<usize>,
        detail: impl FnOnce() -> String,
    ) {
        self.add_n(kind, 1, offset, detail);
    }

    /// Counts `n` occurrences at once.
    pub fn add_n(
        &mut self,
        kind: &'static str,
        n: u64,
        offset: Option<usize>,
        detail: impl FnOnce() -> String,
    ) {
        let e = self.map.entry(kind).or_insert((0, None));
        e.0 += n;
        if e.1.is_none() {
            self.unresolved |= offset.is_some();
            e.1 = Some(Example {
                offset: offset.unwrap_or(usize::MAX),
                text: detail(),
                position: None,
            });
        }
    }

    /// Gives the examples added since the last call their line and column, while the
    /// bytes around them are at hand (the streaming reader drops bytes behind it).
    pub fn resolve(&mut self, locate: &dyn Fn(usize) -> (u64, u64)) {
        if !self.unresolved {
            return;
        }
        self.unresolved = false;
        for (_, ex) in self.map.values_mut() {
            if let Some(ex) = ex {
                if ex.position.is_none() && ex.offset != usize::MAX {
                    ex.position = Some(locate(ex.offset));
                }
            }
        }
    }

    /// Adds `other`'s counts; examples of `self` (earlier in the file) win.
    pub fn merge(&mut self, other: Warnings) {
        for (k, (n, ex)) in other.map {
            let e = self.map.entry(k).or_insert((0, None));
            e.0 += n;
            if e.1.is_none() {
                e.1 = ex;
            }
        }
        self.unresolved |= other.unresolved;
    }

    /// The warnings, examples with their position in `buf`. Lines are counted in one
    /// pass over the bytes up to the last example, released behind as it goes.
    pub fn finish(self, buf: &[u8], release: &(dyn Fn(usize, usize) + Sync)) -> Vec<TraceWarning> {
        let mut offsets: Vec<usize> = self
            .map
            .values()
            .filter_map(|(_, ex)| ex.as_ref())
            .filter(|e| e.offset != usize::MAX && e.position.is_none())
            .map(|e| e.offset)
            .collect();
        offsets.sort_unstable();
        offsets.dedup();
        let positions = line_columns(buf, &offsets, release);
        self.map
            .into_iter()
            .map(|(kind, (count, ex))| {
                let example = match ex {
                    Some(Example { offset, text, position }) if offset != usize::MAX => {
                        let (line, column) = position.unwrap_or_else(|| {
                            let i = offsets.binary_search(&offset).unwrap_or(0);
                            positions.get(i).copied().unwrap_or((0, 0))
                        });
                        format!("{text} (byte {offset}, line {line}, column {column})")
                    }
                    Some(Example { text, .. }) => text,
                    None => String::new(),
                };
                TraceWarning { kind: kind.to_string(), count, example }
            })
            .collect()
    }
}

/// 1-based line and column of each of the sorted `offsets`, in one pass.
fn line_columns(
    buf: &[u8],
    offsets: &[usize],
    release: &(dyn Fn(usize, usize) + Sync),
) -> Vec<(u64, u64)> {
    const BLOCK: usize = 64 << 20;
    let mut out = Vec::with_capacity(offsets.len());
    let mut line = 1u64;
    let mut line_start = 0usize;
    let mut pos = 0usize;
    for &off in offsets {
        let off = off.min(buf.len());
        while pos < off {
            let end = off.min((pos / BLOCK + 1) * BLOCK);
            for (i, &b) in buf[pos..end].iter().enumerate() {
                if b == b'\n' {
                    line += 1;
                    line_start = pos + i + 1;
                }
            }
            if end % BLOCK == 0 {
                release(end - BLOCK, end);
            }
            pos = end;
        }
        out.push((line, (off - line_start) as u64 + 1));
    }
    out
}

impl fmt::Display for PosError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "byte {}: {}", self.offset, self.message)
    }
}

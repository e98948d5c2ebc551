//! Reader of PyTorch profiler (Kineto) Chrome-trace JSON, plain or gzip, current schema
//! and the 2021 legacy one
//! (docs/reference/input-formats.md#pytorch-profiler-kineto-trace-json).
//!
//! The file is memory-mapped (plain) or inflated into one buffer (gzip, detected by its
//! magic bytes) and parsed in place: a hand-written scanner per event over the borrowed
//! bytes, with the serde visitor for whatever it leaves (`fast`), never a DOM of the
//! whole trace, on several threads over stretches of the event array
//! (see [`parse`](self) internals). Only what the analysis needs is kept: CPU ops with
//! their recorded shapes, runtime launches, GPU activities, launch flows, annotations.
//! Times become integer nanoseconds, converted from the decimal text exactly.
//!
//! Bad input never panics: bytes that are not JSON give a [`TraceError`] naming the
//! file, byte offset, line and column; events the model cannot use (missing fields,
//! times that are not numbers, negative durations, unknown categories) are skipped and
//! counted as [`TraceWarning`](rooftop_core::trace::TraceWarning)s in the model; a time
//! written as a string of a number (`"12"`) is read as that number, as Perfetto reads it.
//!
//! A mapped file that another process truncates while we read it can end the process
//! with SIGBUS; traces are written once, before they are read.

mod collect;
mod error;
mod event;
mod fast;
mod hash;
mod link;
mod parse;
mod source;
mod stream;

pub use error::TraceError;
pub use source::is_gzip;

use rayon::prelude::*;
use rooftop_core::trace::TraceModel;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// How to read.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Threads that parse one file's events at once; 0 means rayon's pool size.
    pub threads: usize,
}

impl ReadOptions {
    fn threads(&self) -> usize {
        if self.threads == 0 {
            rayon::current_num_threads().max(1)
        } else {
            self.threads
        }
    }
}

/// Reads one trace file. `progress(done, total)` is called on this thread, in bytes of
/// the file (for gzip, compressed bytes inflated).
pub fn read_path(
    path: &Path,
    opts: &ReadOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<TraceModel, TraceError> {
    let bytes = source::open(path)?;
    if bytes.is_empty() {
        return Err(TraceError::Empty { path: path.to_path_buf() });
    }
    if is_gzip(&bytes) {
        return read_gz(&bytes, path, opts, progress);
    }
    match &bytes {
        source::Bytes::Mapped(map) => {
            // The parser reports each stretch it is done with: drop its pages from
            // this process's memory (they stay in the page cache).
            let release = |from: usize, to: usize| crate::mmap::release(map, from, to);
            parse_and_build(&bytes, path, opts, &release, progress)
        }
        source::Bytes::Owned(_) => parse_and_build(&bytes, path, opts, &|_, _| {}, progress),
    }
}

/// Reads a trace held in memory (plain or gzip). `name` is used in messages only.
pub fn read_bytes(
    bytes: &[u8],
    name: &Path,
    opts: &ReadOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<TraceModel, TraceError> {
    if bytes.is_empty() {
        return Err(TraceError::Empty { path: name.to_path_buf() });
    }
    if is_gzip(bytes) {
        return read_gz(bytes, name, opts, progress);
    }
    parse_and_build(bytes, name, opts, &|_, _| {}, progress)
}

/// Gzip: inflated on one thread and parsed as it comes (`opts.threads` at once).
fn read_gz(
    gz: &[u8],
    path: &Path,
    opts: &ReadOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<TraceModel, TraceError> {
    let parsed = stream::parse_gz(gz, path, opts.threads(), progress)?;
    // Warnings already carry their lines: the stream resolved them.
    Ok(link::build(parsed, &[], &|_, _| {}))
}

fn parse_and_build(
    buf: &[u8],
    path: &Path,
    opts: &ReadOptions,
    release: &(dyn Fn(usize, usize) + Sync),
    progress: &mut dyn FnMut(u64, u64),
) -> Result<TraceModel, TraceError> {
    let parsed = parse::parse(buf, opts.threads(), release, progress)
        .map_err(|e| e.into_trace_error(path.to_path_buf(), buf))?;
    Ok(link::build(parsed, buf, release))
}

/// Whether a file name looks like a Kineto trace: `*.json` or `*.json.gz` (any case).
pub fn is_trace_name(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase());
    // Lower-cased above.
    #[allow(clippy::case_sensitive_file_extension_comparisons)]
    name.is_some_and(|n| n.ends_with(".json") || n.ends_with(".json.gz"))
}

/// The trace files directly in `dir`, sorted by name.
pub fn list_traces(dir: &Path) -> Result<Vec<PathBuf>, TraceError> {
    let io = |source| TraceError::Io { path: dir.to_path_buf(), source };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let p = entry.map_err(io)?.path();
        if p.is_file() && is_trace_name(&p) {
            out.push(p);
        }
    }
    if out.is_empty() {
        return Err(TraceError::NoTraces { path: dir.to_path_buf() });
    }
    out.sort();
    Ok(out)
}

/// One file of a directory and what reading it gave.
pub type FileResult = (PathBuf, Result<TraceModel, TraceError>);

/// Reads every trace in `dir` (one per rank, typically), files in parallel. Errors per
/// file are returned beside the others' models; a directory without traces is an error.
/// `progress(done, total)` is in bytes over all files and may be called from any thread.
pub fn read_dir(
    dir: &Path,
    opts: &ReadOptions,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<Vec<FileResult>, TraceError> {
    let files = list_traces(dir)?;
    let sizes: Vec<u64> =
        files.iter().map(|p| std::fs::metadata(p).map_or(0, |m| m.len())).collect();
    let total: u64 = sizes.iter().sum();
    let done = AtomicU64::new(0);
    // Files already run in parallel: parse each one's events on one thread.
    let per_file = ReadOptions { threads: if files.len() > 1 { 1 } else { opts.threads } };
    Ok(files
        .into_par_iter()
        .map(|path| {
            let mut mine = 0u64;
            let r = read_path(&path, &per_file, &mut |d, _| {
                let delta = d.saturating_sub(mine);
                mine = d.max(mine);
                let now = done.fetch_add(delta, Ordering::Relaxed) + delta;
                progress(now.min(total), total);
            });
            (path, r)
        })
        .collect())
}

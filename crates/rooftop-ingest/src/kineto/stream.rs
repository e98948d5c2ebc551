//! Streaming reader for gzip traces: the stream is inflated a chunk at a time (up to
//! 16 MiB) into a window of the inflated bytes (the event being parsed and what follows
//! it). Memory stays near the model's size instead of the inflated file's.
//!
//! The event array is parsed in batches, each split into stretches parsed on several
//! threads, as [`super::parse`] splits a whole file. While a batch is parsed, one task
//! of the same thread pool inflates the next batch's bytes (after a copy of the
//! window's last bytes, where the next batch starts) and appends the previous batch's
//! events to the model: inflating is serial, and a thread of its own beside the pool's
//! left the cores idle at every batch's end. Batches ramp up from the first megabyte to
//! two chunks and down again towards the stream's end ([`RAMP`]), so that the parse
//! starts early and what is parsed after the last byte is inflated is short. Split
//! points are guessed, and a batch counts only if every stretch ended exactly where the
//! next one began. A batch that fails in any way (an error, a wrong guess, an event cut
//! by the window's end) is dropped whole and its bytes are parsed event by event, which
//! is also what reports errors, so results and error positions never depend on the
//! batches. Bytes that are not JSON may be what a damaged stream inflated to: before
//! such an error is reported, the rest of the stream is inflated, and a gzip error
//! there (its checksum, at the member's end) is reported instead.
//!
//! The grammar walked is the one of [`super::parse`]: the top-level object by hand,
//! every value and event with serde over the window. A value cut by the window's end
//! fails with an end-of-input error; the window then takes the next chunk and the value
//! is parsed again from its start. Positions are absolute (offsets in the inflated
//! JSON); lines are counted as bytes leave the window, so errors and warnings state
//! line and column like the in-memory reader.

use super::collect::{Partial, SharedArgs};
use super::error::{PosError, TraceError};
use super::event::EventSeed;
use super::parse::{
    expected, one_value, run, split_points, DeviceList, DistInfo, End, KeyName, Layout, Parsed,
    MIN_STRETCH,
};
use super::source::Counting;
use flate2::bufread::MultiGzDecoder;
use rayon::prelude::*;
use rooftop_core::limits::Limit;
use serde::de::{DeserializeSeed, IgnoredAny};
use serde::Deserialize;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Inflated bytes per chunk.
const CHUNK: u64 = 16 << 20;

/// The first chunk is this part of [`CHUNK`], and each next one 1.5 times the last, up
/// to [`CHUNK`], and down to half of what the stream is estimated to hold still (never
/// below the first chunk's size): the parse starts on the first megabyte while the rest
/// inflates, each batch inflates about as much as it parses (`Source::ahead`), and the
/// last batch, parsed once the stream has ended, is short. Inflating a whole first chunk
/// with one core idle, and then parsing what the last chunk brought, were a fifth of a
/// 28 MB trace's run; doubling the chunks left the parsing core idle half the time.
const RAMP: u64 = 16;

/// The first chunk's size when the largest is `chunk` ([`RAMP`]).
fn first_chunk(chunk: u64) -> u64 {
    (chunk / RAMP).max(1)
}

/// Inflated bytes counted for newlines at a time, while they are still in the cache:
/// the window needs line numbers, and counting each batch's bytes again after the batch
/// (out of the cache, on one thread) held up every batch.
const COUNT_STEP: u64 = 256 << 10;

/// The newlines in `bytes`: memchr's counter, which picks SSE2 or AVX2 at run time
/// (25–29 GB/s on pretty-printed traces here, where 32 byte lanes the compiler could
/// only vectorise for the x86-64 baseline counted 2.2–2.5 GB/s: 11% of a gzipped 1 GB
/// trace's CPU time).
fn newlines(bytes: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', bytes).count() as u64
}

/// Inflated bytes in memory that stays initialized once it has grown: the bytes are
/// `data[..len]`, and what lies beyond is old bytes that the next inflate overwrites in
/// place. A `Vec` emptied and refilled through `read_to_end` was zeroed again for every
/// chunk (2% of a gzipped trace's CPU time), and inflated in reads of 8 KiB and up, each
/// also copying the decoder's 32 KiB history.
#[derive(Default)]
struct Reused {
    data: Vec<u8>,
    len: usize,
}

impl std::ops::Deref for Reused {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.data[..self.len]
    }
}

impl Reused {
    /// The `n` bytes after the end, to be written and then taken with [`Self::grow`].
    fn room(&mut self, n: usize) -> &mut [u8] {
        let end = self.len + n;
        if self.data.len() < end {
            self.data.resize(end, 0);
        }
        &mut self.data[self.len..end]
    }

    /// Takes `n` bytes written into [`Self::room`].
    fn grow(&mut self, n: usize) {
        self.len = (self.len + n).min(self.data.len());
    }

    fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.room(bytes.len()).copy_from_slice(bytes);
        self.grow(bytes.len());
    }

    fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    fn clear(&mut self) {
        self.len = 0;
    }

    /// Drops the first `n` bytes.
    fn drop_front(&mut self, n: usize) {
        self.data.copy_within(n..self.len, 0);
        self.len -= n;
    }
}

/// Reads from `dec` until `out` is full or the stream ends: the bytes read, and the
/// error that stopped it (the bytes before an error are read all the same).
fn read_full(dec: &mut impl Read, out: &mut [u8]) -> (usize, Option<std::io::Error>) {
    let mut got = 0;
    while got < out.len() {
        match dec.read(&mut out[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return (got, Some(e)),
        }
    }
    (got, None)
}

/// Inflates up to `limit` bytes onto `out`, counting their newlines as it goes: the
/// bytes inflated and their newlines. On an error, the bytes inflated before it stay
/// on `out`.
fn inflate_into(dec: &mut impl Read, limit: u64, out: &mut Reused) -> std::io::Result<(u64, u64)> {
    let (mut n, mut lines) = (0u64, 0u64);
    while n < limit {
        // At most COUNT_STEP, so a `usize`.
        let step = (limit - n).min(COUNT_STEP) as usize;
        let room = out.room(step);
        let (got, err) = read_full(dec, room);
        lines += newlines(&room[..got]);
        out.grow(got);
        if let Some(e) = err {
            return Err(e);
        }
        n += got as u64;
        if got < step {
            break;
        }
    }
    Ok((n, lines))
}

/// The gzip stream, inflated a chunk at a time.
struct Source<'a> {
    dec: MultiGzDecoder<Counting<'a>>,
    path: &'a Path,
    /// The largest chunk.
    chunk: u64,
    /// The next chunk's size at most ([`RAMP`]).
    next: u64,
    /// The size of the chunk inflated last.
    last: u64,
    /// The compressed stream's length.
    total: u64,
    /// Bytes inflated so far.
    inflated: u64,
    /// Compressed bytes used so far (the progress bar's).
    consumed: &'a AtomicU64,
    /// An error met while inflating ahead, given when those bytes are asked for.
    failed: Option<TraceError>,
}

impl<'a> Source<'a> {
    fn new(gz: &'a [u8], path: &'a Path, chunk: u64, consumed: &'a AtomicU64) -> Self {
        Source {
            dec: MultiGzDecoder::new(Counting::new(gz)),
            path,
            chunk,
            next: first_chunk(chunk),
            last: 0,
            total: gz.len() as u64,
            inflated: 0,
            consumed,
            failed: None,
        }
    }

    /// Appends the next chunk to `out`: its length (0 at the end of the stream) and its
    /// newlines. A chunk that fails (a gzip error, or inflating too far) appends
    /// nothing: chunks are cut at the same inflated offsets whoever asks for them (their
    /// sizes depend only on the stream: how many came before, the bytes read and
    /// inflated), so the bytes given before an error never depend on the batches.
    fn fill(&mut self, out: &mut Reused) -> Result<(u64, u64), TraceError> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let before = out.len();
        let size = self.next.min((self.rest() / 2).max(first_chunk(self.chunk)));
        self.next =
            (self.next.saturating_mul(3) / 2).max(self.next.saturating_add(1)).min(self.chunk);
        self.last = size;
        let r = inflate_into(&mut self.dec, size, out);
        let read = self.dec.get_ref().position() as u64;
        self.consumed.store(read, Ordering::Relaxed);
        let (n, lines) = match r {
            Ok(v) => v,
            Err(e) => {
                let got = (out.len() - before) as u64;
                out.truncate(before);
                return Err(TraceError::Gzip {
                    path: self.path.to_path_buf(),
                    compressed_offset: read,
                    inflated: self.inflated + got,
                    reason: super::source::gzip_reason(&e),
                });
            }
        };
        self.inflated += n;
        if self.inflated > Limit::InflateFloor.value()
            && self.inflated / read.max(1) > Limit::InflateRatio.value()
        {
            out.truncate(before);
            let found = format!(
                "{} bytes inflated from the first {read} compressed bytes ({}x)",
                self.inflated,
                self.inflated / read.max(1)
            );
            let message = Limit::InflateRatio.exceeded_here(&found);
            return Err(TraceError::Limit {
                path: self.path.to_path_buf(),
                message: format!("the gzip stream inflates too far: {message}"),
            });
        }
        Ok((n, lines))
    }

    /// The inflated bytes still to come, estimated from the compressed bytes left at the
    /// ratio so far (`u64::MAX` before any).
    fn rest(&self) -> u64 {
        let read = self.dec.get_ref().position() as u64;
        if read == 0 || self.inflated == 0 {
            return u64::MAX;
        }
        let left = u128::from(self.total.saturating_sub(read));
        let rest = left * u128::from(self.inflated) / u128::from(read);
        u64::try_from(rest).unwrap_or(u64::MAX)
    }

    /// How much a batch inflates ahead: half of what came before it (one chunk while
    /// they ramp up, about as much as the batch parses), at most two whole chunks, and
    /// half of what is estimated to be left (so that the last batch is short).
    fn ahead(&self) -> u64 {
        (self.inflated / 2).min(self.rest() / 2).clamp(1, self.chunk.saturating_mul(2))
    }
}

/// Why the stream stopped.
enum Fail {
    Gzip(TraceError),
    Json(PosError),
}

/// The inflated bytes from `base` on that the parser still needs.
struct Window<'a> {
    buf: Reused,
    /// Offset of `buf[0]` in the inflated stream.
    base: usize,
    /// Newlines before `base`.
    lines: u64,
    /// Newlines before the end of `buf` (`base + buf.len()`).
    lines_end: u64,
    /// Offset where the line containing `base` starts.
    line_start: usize,
    source: Source<'a>,
    done: bool,
    /// The buffer the window held before the last batch, for the next bytes inflated
    /// ahead (its pages are mapped already).
    spare: Reused,
    /// The op argument lists every stretch of every batch has parsed: a stretch parses
    /// a list the stream has seen before only once, not once per stretch.
    shared_args: Arc<SharedArgs>,
}

/// The bytes a task inflated while a batch was parsed.
struct Ahead {
    /// The window's bytes from this offset on were copied to the start of `bytes`.
    from: usize,
    /// Those bytes, then the inflated ones.
    bytes: Reused,
    /// The newlines in the inflated bytes.
    newlines: u64,
}

impl Window<'_> {
    /// Appends the next chunk, after dropping the bytes before `*p` (which moves to the
    /// same byte) when they are at least half the window: dropping a few bytes would move
    /// all the others. `Ok(false)` at the end of input.
    fn more(&mut self, p: &mut usize) -> Result<bool, Fail> {
        if self.done {
            return Ok(false);
        }
        if *p >= self.buf.len() / 2 {
            let keep = *p;
            self.count_lines_before(keep);
            self.buf.drop_front(keep);
            self.base += keep;
            *p = 0;
        }
        match self.source.fill(&mut self.buf) {
            Ok((0, _)) => {
                self.done = true;
                Ok(false)
            }
            Ok((_, newlines)) => {
                self.lines_end += newlines;
                Ok(true)
            }
            Err(e) => Err(Fail::Gzip(e)),
        }
    }

    /// Moves `lines` and `line_start` to `buf[at]`, about to become the window's start.
    /// The newlines of the shorter side are counted: a batch drops most of the window
    /// and keeps its last few events.
    fn count_lines_before(&mut self, at: usize) {
        let (gone, kept) = self.buf.split_at(at);
        if gone.len() <= kept.len() {
            self.lines += newlines(gone);
        } else {
            self.lines = self.lines_end - newlines(kept);
        }
        if let Some(i) = memchr::memrchr(b'\n', gone) {
            self.line_start = self.base + i + 1;
        }
    }

    /// Takes the bytes inflated ahead. When the parser has reached `from` (it is at
    /// `*p`), the window becomes those bytes, without copying them; otherwise they are
    /// appended.
    fn take_ahead(&mut self, ahead: Ahead, p: &mut usize) {
        if *p < ahead.from {
            let copied = self.buf.len() - ahead.from;
            self.buf.extend_from_slice(&ahead.bytes[copied..]);
            self.lines_end += ahead.newlines;
            return;
        }
        self.count_lines_before(ahead.from);
        self.lines_end += ahead.newlines;
        self.base += ahead.from;
        *p -= ahead.from;
        self.spare = std::mem::replace(&mut self.buf, ahead.bytes);
    }

    /// 1-based line and column of the absolute offset `abs` (at or after `base`).
    fn locate(&self, abs: usize) -> (u64, u64) {
        let rel = abs.saturating_sub(self.base).min(self.buf.len());
        let head = &self.buf[..rel];
        let mut line = self.lines + 1;
        let mut start = self.line_start;
        for (i, &b) in head.iter().enumerate() {
            if b == b'\n' {
                line += 1;
                start = self.base + i + 1;
            }
        }
        (line, (abs - start) as u64 + 1)
    }

    /// A window-relative error as an absolute one, with its line and column.
    fn error(&self, e: PosError) -> Fail {
        let abs = self.base + e.offset;
        Fail::Json(PosError { offset: abs, position: Some(self.locate(abs)), ..e })
    }

    /// Skips whitespace from `*p`, refilling; the byte there, or `None` at the end.
    fn peek(&mut self, p: &mut usize) -> Result<Option<u8>, Fail> {
        loop {
            while *p < self.buf.len() && matches!(self.buf[*p], b' ' | b'\n' | b'\r' | b'\t') {
                *p += 1;
            }
            if *p < self.buf.len() {
                return Ok(Some(self.buf[*p]));
            }
            if !self.more(p)? {
                return Ok(None);
            }
        }
    }

    /// One owned value at `*p`, refilling while it is cut by the window's end.
    fn value<T: for<'a> Deserialize<'a>>(&mut self, p: &mut usize) -> Result<T, Fail> {
        loop {
            match one_value::<T>(&self.buf, *p) {
                // A number at the very end may continue in the next chunk.
                Ok((v, end)) if end < self.buf.len() || self.done => {
                    *p = end;
                    return Ok(v);
                }
                Err(e) if !self.cut(&e) => return Err(self.error(e)),
                // Cut by the window's end: parse again with the next chunk (or, at the
                // end of input, again knowing it is the end).
                _ => {
                    self.check_value_size(*p)?;
                    self.more(p)?;
                }
            }
        }
    }

    /// Whether an error may only mean that the window cut the value: at the end of the
    /// window, with more input to come. (A number cut after `1.` is "invalid", not
    /// "end of input".) Parsing again with more bytes is always safe: a real error
    /// comes back at the same place.
    fn cut(&self, e: &PosError) -> bool {
        !self.done && (e.eof || e.offset + 1 >= self.buf.len())
    }

    /// The value starting at `p` is cut by the window's end: refuse to take more input
    /// for it when it is already longer than [`Limit::ValueBytes`] (one string inflating
    /// to gigabytes would otherwise be held, and parsed again, chunk after chunk).
    fn check_value_size(&self, p: usize) -> Result<(), Fail> {
        let held = self.buf.len().saturating_sub(p);
        if held > Limit::ValueBytes.usize() {
            let found = format!("a value longer than {held} bytes");
            return Err(self.error(PosError::limit(p, Limit::ValueBytes, &found)));
        }
        Ok(())
    }

    fn expected(&self, p: usize, what: &str) -> Fail {
        self.error(expected(&self.buf, p, what))
    }
}

/// Inflates `gz` on a second thread and parses it here, batches of events on `threads`
/// threads.
pub(crate) fn parse_gz(
    gz: &[u8],
    path: &Path,
    threads: usize,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Parsed, TraceError> {
    parse_gz_chunked(gz, path, CHUNK, threads, progress)
}

/// How the event array of the stream is cut into parallel batches; all derived from
/// the chunk size so that tests with tiny chunks exercise every path.
#[derive(Clone, Copy)]
struct Batching {
    threads: usize,
    /// A window left short (a batch was dropped) is filled to half the last chunk
    /// before a batch, and to this many bytes at most.
    batch: usize,
    /// The last stretch of a batch stops at the first event starting this far before
    /// the window's end (an event cut by the end drops the batch), at most: a sixteenth
    /// of the window while it is smaller.
    margin: usize,
    /// Stretches shorter than this are not worth a thread (each starts with empty
    /// memos), while more of the stream is to come: then a smaller batch is cut in two
    /// stretches (down to a quarter of [`MIN_STRETCH`]), so that the task that inflated
    /// ahead can take one when it is done. Once all of the stream is in the window, a
    /// quarter of [`MIN_STRETCH`] at most: the last batch is short and both cores parse
    /// it.
    min_stretch: usize,
}

impl Batching {
    fn of(chunk_bytes: u64, threads: usize) -> Self {
        let chunk = usize::try_from(chunk_bytes).unwrap_or(usize::MAX);
        Batching {
            threads,
            batch: chunk.saturating_mul(2),
            margin: (chunk / 16).max(1),
            min_stretch: (chunk / 4).max(1),
        }
    }
}

/// [`parse_gz`] with the chunk size as a parameter (tests cut values everywhere).
fn parse_gz_chunked(
    gz: &[u8],
    path: &Path,
    chunk_bytes: u64,
    threads: usize,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Parsed, TraceError> {
    let consumed = AtomicU64::new(0);
    let total = gz.len() as u64;
    let source = Source::new(gz, path, chunk_bytes, &consumed);
    let mut w = Window {
        buf: Reused::default(),
        base: 0,
        lines: 0,
        lines_end: 0,
        line_start: 0,
        source,
        done: false,
        spare: Reused::default(),
        shared_args: Arc::default(),
    };
    let mut out = Parsed::default();
    let batching = Batching::of(chunk_bytes, threads);
    let r = walk(&mut w, &mut out, batching, &mut |_| {
        progress(consumed.load(Ordering::Relaxed), total);
    });
    match r {
        Ok(()) => {
            progress(total, total);
            Ok(out)
        }
        Err(Fail::Gzip(e)) => Err(e),
        Err(Fail::Json(e)) => Err(damaged_stream(&mut w.source)
            .unwrap_or_else(|| e.into_trace_error(path.to_path_buf(), &[]))),
    }
}

/// After bytes that are not JSON: the gzip error in the rest of the stream, if any.
/// Bytes that are not JSON may be what a damaged stream inflated to, which only its
/// checksum at the member's end tells. The rest is inflated (on this error path only),
/// so that a damaged stream is reported as such whichever chunk, batch or thread count
/// met the bad bytes first.
fn damaged_stream(source: &mut Source) -> Option<TraceError> {
    let mut rest = Reused::default();
    loop {
        rest.clear();
        match source.fill(&mut rest) {
            Ok((0, _)) => return None,
            Ok(_) => {}
            Err(e @ TraceError::Gzip { .. }) => return Some(e),
            // A limit (inflating too far) is not damage: the JSON error stands.
            Err(_) => return None,
        }
    }
}

/// The top level: an object with `traceEvents`, or a bare array of events.
fn walk(
    w: &mut Window,
    out: &mut Parsed,
    batching: Batching,
    tick: &mut dyn FnMut(usize),
) -> Result<(), Fail> {
    let mut p = 0;
    // A UTF-8 byte order mark.
    if w.buf.len() < 3 && !w.done {
        w.more(&mut p)?;
    }
    if w.buf.starts_with(&[0xef, 0xbb, 0xbf]) {
        p = 3;
    }
    match w.peek(&mut p)? {
        Some(b'[') => events(w, &mut p, &mut out.events, batching, tick)?,
        Some(b'{') => {
            p += 1;
            let mut found = false;
            if w.peek(&mut p)? == Some(b'}') {
                p += 1;
            } else {
                loop {
                    if w.peek(&mut p)? != Some(b'"') {
                        return Err(w.expected(p, "a member name in quotes"));
                    }
                    let key: KeyName = w.value(&mut p)?;
                    if w.peek(&mut p)? != Some(b':') {
                        return Err(w.expected(p, "`:` after a member name"));
                    }
                    p += 1;
                    let first = w.peek(&mut p)?;
                    match key {
                        KeyName::TraceEvents => {
                            if first != Some(b'[') {
                                return Err(w.expected(p, "`[` (`traceEvents` is an array)"));
                            }
                            found = true;
                            events(w, &mut p, &mut out.events, batching, tick)?;
                        }
                        KeyName::DeviceProperties => {
                            out.top.devices = Some(w.value::<DeviceList>(&mut p)?.0);
                        }
                        KeyName::DistributedInfo => {
                            let d = w.value::<DistInfo>(&mut p)?;
                            (out.top.rank, out.top.world_size) = (d.0, d.1);
                        }
                        KeyName::BaseTime => {
                            let v: super::event::Lenient<super::event::Id> = w.value(&mut p)?;
                            out.top.base_time_ns = v.0.map(|i| i.0);
                        }
                        KeyName::Other => {
                            w.value::<IgnoredAny>(&mut p)?;
                        }
                    }
                    match w.peek(&mut p)? {
                        Some(b',') => p += 1,
                        Some(b'}') => {
                            p += 1;
                            break;
                        }
                        _ => return Err(w.expected(p, "`,` or `}` after a top-level member")),
                    }
                }
            }
            if !found {
                return Err(Fail::Json(PosError { no_events: true, ..PosError::new(0, "") }));
            }
        }
        _ => return Err(w.error(super::parse::not_a_trace(&w.buf, p))),
    }
    if w.peek(&mut p)?.is_some() {
        return Err(
            w.error(PosError::new(p, "unexpected characters after the end of the trace object"))
        );
    }
    Ok(())
}

/// The event array whose `[` is at `*p`; leaves `*p` after its `]`.
fn events(
    w: &mut Window,
    p: &mut usize,
    sink: &mut Partial,
    batching: Batching,
    tick: &mut dyn FnMut(usize),
) -> Result<(), Fail> {
    *p += 1;
    if w.peek(p)? == Some(b']') {
        *p += 1;
        return Ok(());
    }
    // Absolute offset from which the next batch may be tried (after a failed batch, its
    // bytes are parsed event by event first).
    let mut batch_from = if batching.threads > 1 { 0 } else { usize::MAX };
    let (max_events, max_bytes) = (Limit::Events.value(), Limit::ValueBytes.usize());
    // The last kept batch's events, appended to `sink` while the next batch is parsed.
    let mut pending = Vec::new();
    loop {
        match w.peek(p)? {
            Some(b']') => return Err(w.expected(*p, "an event after `,`")),
            None => return Err(w.expected(*p, "an event")),
            Some(_) => {}
        }
        if w.base + *p >= batch_from {
            match batch(w, p, sink, &mut pending, batching, tick)? {
                Batch::Parsed => continue,
                Batch::Closed => {
                    append_all(sink, &mut pending);
                    return Ok(());
                }
                Batch::Dropped { until } => batch_from = until,
            }
        }
        // Events parsed one by one go after the batches' events.
        append_all(sink, &mut pending);
        // One event, parsed again from its start if the window cut it: the fast scanner
        // first, serde for what it leaves (`super::fast` docs).
        let start = w.base + *p;
        loop {
            // The window moves and refills: its strings are validated one by one.
            let valid = super::fast::Valid::default();
            if let Some(end) = super::fast::event(&w.buf, *p, w.base + *p, valid, sink) {
                *p = end;
                break;
            }
            let mut de = serde_json::Deserializer::from_slice(&w.buf[*p..]);
            let seed = EventSeed { sink: &mut *sink, offset: w.base + *p };
            match seed.deserialize(&mut de) {
                Ok(()) => {
                    *p += de.into_iter::<IgnoredAny>().byte_offset();
                    break;
                }
                Err(e) if e.is_data() => {
                    let start = w.base + *p;
                    w.value::<IgnoredAny>(p)?;
                    sink.not_an_object(start);
                    break;
                }
                Err(e) => {
                    let e = PosError::from_json(&w.buf, *p, &e);
                    if !w.cut(&e) {
                        return Err(w.error(e));
                    }
                    let base = w.base;
                    w.check_value_size(*p)?;
                    w.more(p)?;
                    tick(base);
                }
            }
        }
        let len = w.base + *p - start;
        if len > max_bytes {
            let found = format!("an event of {len} bytes");
            let e = PosError::limit(start - w.base, Limit::ValueBytes, &found);
            return Err(w.error(e));
        }
        if sink.events > max_events {
            return Err(w.error(super::parse::too_many_events(*p)));
        }
        let win = &*w;
        sink.warnings.resolve(&|abs| win.locate(abs));
        match w.peek(p)? {
            Some(b',') => *p += 1,
            Some(b']') => {
                *p += 1;
                return Ok(());
            }
            _ => return Err(w.expected(*p, "`,` or `]` after an event")),
        }
    }
}

/// What [`batch`] did.
enum Batch {
    /// Parsed up to an element's start, now at `*p`.
    Parsed,
    /// Parsed to the end of the array, now after its `]`.
    Closed,
    /// Nothing pushed: parse event by event up to the absolute offset `until`.
    Dropped { until: usize },
}

/// Appends the events of `parts` (whose counts `sink` has taken) to `sink`.
fn append_all(sink: &mut Partial, parts: &mut Vec<Partial>) {
    sink.reserve_for(parts.iter());
    for part in parts.drain(..) {
        sink.append_events(part);
    }
}

/// Fills the window and parses it from `*p` (an element's start) in stretches on several
/// threads, up to the first element starting `margin` before the window's end (to the
/// array's end once the input is complete). All or nothing: any failure (module docs)
/// drops the batch before anything is pushed. A kept batch's counts and warnings go to
/// `sink` at once, its events to `pending`; the events of the batch before are appended
/// to `sink` while this one is parsed.
fn batch(
    w: &mut Window,
    p: &mut usize,
    sink: &mut Partial,
    pending: &mut Vec<Partial>,
    cut: Batching,
    tick: &mut dyn FnMut(usize),
) -> Result<Batch, Fail> {
    // The chunks ramp up and down ([`RAMP`]): the first batch starts on the first chunk,
    // while the second inflates, and each batch inflates the next one's bytes ahead
    // (`Source::ahead`). A window left short (a batch was dropped) is filled to half the
    // last chunk first, two whole chunks at most.
    let last = usize::try_from(w.source.last).unwrap_or(usize::MAX);
    let want = (last / 2).min(cut.batch);
    while !w.done && w.buf.len() - *p < want {
        let base = w.base;
        if !w.more(p)? {
            break;
        }
        tick(base);
    }
    let margin = (w.buf.len() / 16).clamp(1, cut.margin);
    let (stop, region_end) = if w.done {
        (usize::MAX, w.buf.len())
    } else {
        let end = w.buf.len().saturating_sub(margin);
        (end, end)
    };
    let dropped = Batch::Dropped { until: w.base + region_end };
    if region_end <= *p {
        return Ok(dropped);
    }
    // Where later elements start is guessed from how this one and the next are laid out.
    let region = &w.buf[..region_end];
    let layout = Layout::of(region, *p);
    let small = (cut.min_stretch.min(MIN_STRETCH) / 4).max(1);
    let min_stretch =
        if w.done { small } else { ((region_end - *p) / 2).clamp(small, cut.min_stretch) };
    let splits = split_points(region, *p, cut.threads, min_stretch, layout.as_ref());
    // One stretch is a batch too: it is parsed while the next bytes inflate, or at the
    // end in one pass over the window, instead of event by event.
    let mut bounds = vec![*p];
    bounds.extend(&splits);
    let (buf, base, done) = (&w.buf[..], w.base, w.done);
    // The events of each kind so far and the bytes they came from: each stretch reserves
    // room for as many per byte (none for the first batch).
    let counts = Partial::lens_of(std::iter::once(&*sink).chain(pending.iter()));
    let so_far = base + *p;
    let source = &mut w.source;
    let spare = std::mem::take(&mut w.spare);
    let shared_args = &w.shared_args;
    let (results, ahead): (Vec<(Partial, Result<End, PosError>)>, _) = rayon::join(
        || {
            bounds
                .par_iter()
                // One task per stretch: rayon otherwise runs halves of the list as one
                // task each, and the thread that inflated found none left to take while
                // the other parsed four stretches in a row (a quarter of a core idle).
                .with_max_len(1)
                .enumerate()
                .map(|(i, &from)| {
                    let mut part = Partial::sharing_args(shared_args);
                    if so_far > 0 {
                        let len = bounds.get(i + 1).unwrap_or(&region_end) - from;
                        part.reserve_counts(counts, len as f64 / so_far as f64 * 1.05);
                    }
                    let to = bounds.get(i + 1).copied().unwrap_or(stop);
                    let end = run(buf, base, from, to, &mut part, &|_, _| {}, &mut |_| {});
                    (part, end)
                })
                .collect()
        },
        || {
            append_all(sink, pending);
            (!done).then(|| inflate_ahead(source, spare, &buf[region_end..], region_end))
        },
    );
    let kept = keep(w, p, sink, pending, &bounds, results);
    if let Some(ahead) = ahead {
        w.take_ahead(ahead, p);
    }
    Ok(kept.unwrap_or(dropped))
}

/// The next chunks, after a copy of `tail` (the window's bytes from `from` on, where
/// the next batch starts): [`Source::ahead`] bytes. An error is kept in `source` for
/// when the bytes are needed.
fn inflate_ahead(source: &mut Source, mut bytes: Reused, tail: &[u8], from: usize) -> Ahead {
    bytes.clear();
    bytes.extend_from_slice(tail);
    let target = source.ahead();
    let (mut got, mut newlines) = (0, 0);
    while got < target {
        match source.fill(&mut bytes) {
            Ok((0, _)) => break,
            Ok((n, lines)) => {
                got += n;
                newlines += lines;
            }
            Err(e) => {
                source.failed = Some(e);
                break;
            }
        }
    }
    Ahead { from, bytes, newlines }
}

/// Keeps a batch whose stretches all ended where the next began (`None`: drop it): its
/// counts and warnings go to `sink`, its events to `pending`, and `*p` after it.
fn keep(
    w: &Window,
    p: &mut usize,
    sink: &mut Partial,
    pending: &mut Vec<Partial>,
    bounds: &[usize],
    results: Vec<(Partial, Result<End, PosError>)>,
) -> Option<Batch> {
    // Stretch i + 1 counts only if stretch i ended at its start; only the last may end
    // anywhere else.
    let mut last = None;
    for (i, (_, end)) in results.iter().enumerate() {
        match (end, bounds.get(i + 1)) {
            (Ok(End::Next(q)), Some(next)) if q == next => {}
            (Ok(end), None) => last = Some(end),
            _ => return None,
        }
    }
    let events: u64 = results.iter().map(|(part, _)| part.events).sum();
    if sink.events + events > Limit::Events.value() {
        return None;
    }
    let closed = match last? {
        End::Next(q) => {
            *p = *q;
            false
        }
        End::Closed(after) => {
            *p = *after;
            true
        }
    };
    debug_assert_eq!(results.len(), bounds.len());
    for (mut part, _) in results {
        sink.take_counts(&mut part);
        pending.push(part);
    }
    sink.warnings.resolve(&|abs| w.locate(abs));
    #[cfg(test)]
    tests::BATCHES.with(|b| b.set(b.get() + 1));
    Some(if closed { Batch::Closed } else { Batch::Parsed })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kineto::link::build;
    use crate::kineto::parse::parse;
    use std::fmt::Write as _;
    use std::io::Write;

    thread_local! {
        /// Batches kept by this thread's reads, counted so that tests can see they ran.
        pub(super) static BATCHES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    fn batches() -> usize {
        BATCHES.with(std::cell::Cell::get)
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(bytes).unwrap();
        enc.finish().unwrap()
    }

    fn in_memory(bytes: &[u8]) -> Result<rooftop_core::trace::TraceModel, String> {
        parse(bytes, 1, &|_, _| {}, &mut |_, _| {})
            .map(|p| build(p, bytes, &|_, _| {}))
            .map_err(|e| e.into_trace_error("t.json".into(), bytes).to_string())
    }

    fn streamed(bytes: &[u8], chunk: u64) -> Result<rooftop_core::trace::TraceModel, String> {
        streamed_on(bytes, chunk, 1)
    }

    fn streamed_on(
        bytes: &[u8],
        chunk: u64,
        threads: usize,
    ) -> Result<rooftop_core::trace::TraceModel, String> {
        parse_gz_chunked(&gzip(bytes), Path::new("t.json"), chunk, threads, &mut |_, _| {})
            .map(|p| build(p, &[], &|_, _| {}))
            .map_err(|e| e.to_string())
    }

    fn fixture(rel: &str) -> Vec<u8> {
        let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/kineto")
            .join(rel);
        std::fs::read(p).unwrap()
    }

    #[test]
    fn small_windows_give_the_same_model_and_warnings() {
        for rel in
            ["handmade/nesting_graph.json", "handmade/legacy_2021.json", "hta_tiny_plain.json"]
        {
            let plain = fixture(rel);
            let want = in_memory(&plain).unwrap();
            for chunk in [1, 7, 64, 1000, 1 << 20] {
                assert_eq!(streamed(&plain, chunk).unwrap(), want, "{rel}, {chunk}-byte chunks");
            }
        }
    }

    /// The parallel batches (module docs) give the in-memory reader's model, warnings
    /// and errors, whatever the window size and the number of threads: windows of a few
    /// events (most batches succeed), of one event (most are dropped) and of the whole file.
    #[test]
    fn parallel_batches_give_the_same_model_warnings_and_errors() {
        let before = batches();
        for rel in [
            "handmade/nesting_graph.json",
            "handmade/legacy_2021.json",
            "hta_tiny_plain.json",
            "h200/graph.trace.json.gz",
        ] {
            let mut plain = fixture(rel);
            if Path::new(rel).extension().is_some_and(|e| e.eq_ignore_ascii_case("gz")) {
                let mut out = Vec::new();
                flate2::read::GzDecoder::new(&plain[..]).read_to_end(&mut out).unwrap();
                plain = out;
            }
            let want = in_memory(&plain);
            assert!(want.is_ok(), "{rel}");
            // An event's opening brace two thirds in, replaced: a syntax error.
            let mut bad = plain.clone();
            let from = plain.len() * 2 / 3;
            let at = from + plain[from..].iter().position(|&c| c == b'{').unwrap();
            bad[at] = b'#';
            let want_bad = in_memory(&bad);
            assert!(want_bad.is_err(), "{rel}");
            for chunk in [300, 4096, 1 << 14, 1 << 20] {
                for threads in [2, 3, 8] {
                    let what = format!("{rel}, {chunk}-byte chunks, {threads} threads");
                    assert_eq!(streamed_on(&plain, chunk, threads), want, "{what}");
                    assert_eq!(streamed_on(&bad, chunk, threads), want_bad, "{what}, corrupted");
                }
            }
        }
        assert!(batches() > before, "no batch was kept");
    }

    #[test]
    fn small_windows_give_the_same_errors() {
        let plain = fixture("handmade/nesting_graph.json");
        let mut cases: Vec<Vec<u8>> = vec![
            plain[..plain.len() / 2].to_vec(),
            plain[..plain.len() - 3].to_vec(),
            b"".to_vec(),
            b"{\"a\": 1}".to_vec(),
            b"{\"traceEvents\": [1, 2,]}".to_vec(),
            b"{\"traceEvents\": []} x".to_vec(),
            b"{\"n\": 12345678901234567890123, \"traceEvents\": []}".to_vec(),
        ];
        let mut bad = plain.clone();
        let at = plain.len() * 2 / 3;
        bad[at] = b'#';
        cases.push(bad);
        for case in cases {
            let want = in_memory(&case);
            for chunk in [1, 5, 333, 1 << 20] {
                assert_eq!(streamed(&case, chunk), want, "{chunk}-byte chunks");
            }
        }
    }

    /// A trace written on one line (Python's `json.dump` puts `}, {` between events;
    /// minified ones `},{`) is read in parallel batches too, to the same model.
    #[test]
    fn one_line_traces_are_read_in_parallel_batches() {
        let mut kineto = Vec::new();
        let gz = fixture("h200/graph.trace.json.gz");
        flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut kineto).unwrap();
        let kineto = String::from_utf8(kineto).unwrap();
        assert!(kineto.contains("},\n  {"));
        // A raw line break is never inside a JSON string: only layout changes.
        for sep in ["}, {", "},{"] {
            let text = kineto.replace("},\n  {", sep).replace('\n', " ");
            let want = in_memory(text.as_bytes()).unwrap();
            assert!(want.gpu.len() > 500);
            streams_in_batches_to(text.as_bytes(), &want, &[4096, 1 << 14, 1 << 20], sep);
        }
    }

    /// An op argument list is parsed once per stream, not once per stretch: the ops of
    /// every batch and stretch that recorded the same shapes share one copy.
    #[test]
    fn every_batch_shares_the_op_argument_lists() {
        let events: Vec<String> = (0..2000)
            .map(|i| {
                format!(
                    "{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \
                     \"tid\": 1, \"ts\": {}, \"dur\": 5, \"args\": {{\"Input Dims\": [[2, 3], \
                     [3, 4]], \"Input type\": [\"float\", \"float\"]}}}}",
                    10 * i
                )
            })
            .collect();
        let text = format!("{{\"traceEvents\": [\n  {}\n]}}", events.join(",\n  "));
        let before = batches();
        let got = streamed_on(text.as_bytes(), 1 << 14, 2).unwrap();
        assert!(batches() > before + 2, "too few batches kept");
        assert_eq!(got.ops.len(), 2000);
        let dims = vec![
            rooftop_core::trace::Dims::Tensor(vec![2, 3]),
            rooftop_core::trace::Dims::Tensor(vec![3, 4]),
        ];
        assert_eq!(got.ops[0].args.input_dims, dims);
        let apart = got.ops.iter().filter(|o| !Arc::ptr_eq(&o.args, &got.ops[0].args)).count();
        assert_eq!(apart, 0, "ops with their own copy of the same argument list");
    }

    /// Streamed in `chunks`, on 2 and 3 threads, `text` gives `want`, and some batch is
    /// kept.
    fn streams_in_batches_to(
        text: &[u8],
        want: &rooftop_core::trace::TraceModel,
        chunks: &[u64],
        what: &str,
    ) {
        let before = batches();
        for &chunk in chunks {
            for threads in [2, 3] {
                let got = streamed_on(text, chunk, threads).unwrap();
                assert_eq!(&got, want, "{what}, {chunk}-byte chunks, {threads} threads");
            }
        }
        assert!(batches() > before, "{what}: no batch was kept");
    }

    /// A trace of a few MB is parsed on several threads (a quarter chunk's minimum
    /// stretch left a 4.7 MB trace to one core), and while it inflates: in several
    /// batches, the first one on the first megabyte (one batch, once the whole stream
    /// was inflated, before the chunks ramped up).
    #[test]
    fn a_stream_in_one_window_is_parsed_on_several_threads() {
        let gz = fixture("h200/eager.trace.json.gz");
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut plain).unwrap();
        assert!(plain.len() > 2 * MIN_STRETCH && (plain.len() as u64) < CHUNK);
        let want = in_memory(&plain).unwrap();
        let before = batches();
        let got = parse_gz(&gz, Path::new("eager.json.gz"), 2, &mut |_, _| {})
            .map(|p| build(p, &[], &|_, _| {}))
            .unwrap();
        assert_eq!(got, want);
        // 4.7 MB from chunks of 1, 1.5, ... MiB.
        assert!(batches() - before >= 3, "{} batches", batches() - before);
    }

    /// A batch that closes the event array before the window's end, with members after
    /// the array: the bytes inflated ahead are appended to the window, not put in its
    /// place, and the members after the array are read.
    #[test]
    fn members_after_the_event_array_are_read_after_a_batch() {
        let mut text = String::from("{\"traceEvents\": [\n");
        for i in 0..3000 {
            let sep = if i == 2999 { "" } else { "," };
            let _ = writeln!(
                text,
                "  {{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k{}\", \"pid\": 0, \
                 \"tid\": 7, \"ts\": {}, \"dur\": 1}}{sep}",
                i % 13,
                10 * i
            );
        }
        text.push_str(
            "], \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\"}],\n",
        );
        text.push_str("\"pad\": \"");
        text.push_str(&"x".repeat(5000));
        text.push_str("\", \"distributedInfo\": {\"rank\": 3}}");
        let want = in_memory(text.as_bytes()).unwrap();
        assert_eq!(want.gpu.len(), 3000);
        assert_eq!(want.rank, Some(3));
        streams_in_batches_to(text.as_bytes(), &want, &[2048, 4096, 1 << 14, 60_000], "members");
    }

    /// A gzip stream cut short: the same error (the compressed offset and the bytes
    /// inflated before it) whatever the chunks, the threads and the batches kept before it.
    #[test]
    fn a_truncated_stream_fails_the_same_after_batches() {
        let mut plain = Vec::new();
        let gz = fixture("h200/graph.trace.json.gz");
        flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut plain).unwrap();
        let whole = gzip(&plain);
        let cut = &whole[..whole.len() * 3 / 5];
        let run = |chunk, threads| {
            parse_gz_chunked(cut, Path::new("t.json.gz"), chunk, threads, &mut |_, _| {})
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        let want = run(1 << 30, 1);
        let msg = want.clone().unwrap_err();
        assert!(msg.contains("gzip stream is truncated or corrupt"), "{msg}");
        for chunk in [4096, 1 << 14, 1 << 16] {
            for threads in [1, 2, 3] {
                assert_eq!(run(chunk, threads), want, "{chunk}-byte chunks, {threads} threads");
            }
        }
    }

    #[test]
    fn a_damaged_stream_is_reported_as_such_whatever_met_its_bytes_first() {
        // Stored blocks: the trace's bytes appear as they are, so one can be changed
        // without breaking the deflate structure. The JSON breaks there, and only the
        // checksum at the end tells that the stream is damaged.
        let mut plain = Vec::new();
        let gz = fixture("h200/graph.trace.json.gz");
        flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut plain).unwrap();
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
        enc.write_all(&plain).unwrap();
        let mut bad = enc.finish().unwrap();
        let at = bad.len() / 3 + bad[bad.len() / 3..].windows(2).position(|w| w == b"\":").unwrap();
        bad[at + 1] = b'x';
        for chunk in [4096, 1 << 14, 1 << 30] {
            for threads in [1, 2, 3] {
                let e =
                    parse_gz_chunked(&bad, Path::new("t.json.gz"), chunk, threads, &mut |_, _| {})
                        .map(|_| ())
                        .unwrap_err()
                        .to_string();
                assert!(
                    e.contains("the gzip stream is truncated or corrupt") && e.contains("checksum"),
                    "{chunk}-byte chunks, {threads} threads: {e}"
                );
            }
        }
    }

    /// The chunks a stream is inflated in: a sixteenth of the largest first, then 1.5
    /// times the last up to the largest, and down to half the estimated rest near the
    /// end; the same sizes however many times the stream is read.
    #[test]
    fn chunks_ramp_up_from_the_first_megabyte_and_down_to_the_end() {
        let mut text = String::new();
        let mut i = 0u64;
        while text.len() < 200_000 {
            // Even compression throughout, so that the estimate of the rest holds.
            let _ =
                writeln!(text, "{{\"ts\": {}, \"name\": \"k{}\"}},", i * 7919 % 100_003, i % 97);
            i += 1;
        }
        let gz = gzip(text.as_bytes());
        let sizes = || {
            let consumed = AtomicU64::new(0);
            let mut source = Source::new(&gz, Path::new("t.json.gz"), 16_000, &consumed);
            let (mut out, mut sizes) = (Reused::default(), Vec::new());
            loop {
                out.clear();
                match source.fill(&mut out).unwrap() {
                    (0, _) => return sizes,
                    (n, _) => sizes.push(n),
                }
            }
        };
        let got = sizes();
        assert_eq!(got, sizes());
        assert_eq!(got.iter().sum::<u64>(), text.len() as u64);
        assert_eq!(got[..4], [1000, 1500, 2250, 3375], "{got:?}");
        assert!(got.contains(&16_000) && got.iter().all(|&n| n <= 16_000), "{got:?}");
        // Down again: no chunk after the largest is more than half of what followed it
        // (the estimate is near, so a little more), and the last few are small.
        let top = got.iter().rposition(|&n| n == 16_000).unwrap();
        for k in top + 1..got.len() {
            let rest: u64 = got[k..].iter().sum();
            assert!(got[k] * 10 <= rest * 6 || got[k] <= 1000, "{k}: {got:?}");
        }
        assert!(got[got.len() - 2..].iter().all(|&n| n <= 1000), "{got:?}");
    }

    #[test]
    fn reused_bytes_hold_only_what_was_written_since_they_were_cleared() {
        let mut b = Reused::default();
        b.extend_from_slice(b"0123456789");
        b.drop_front(4);
        assert_eq!(&*b, b"456789");
        b.truncate(3);
        assert_eq!(&*b, b"456");
        // Memory already written is reused: the old bytes past the end are not shown.
        b.clear();
        assert!(b.is_empty());
        b.room(4).copy_from_slice(b"abcd");
        b.grow(2);
        assert_eq!(&*b, b"ab");
        b.extend_from_slice(b"XY");
        assert_eq!(&*b, b"abXY");
        // Inflating onto it: what was there before stays, the stream's bytes follow.
        let text = b"line one\nline two\n".repeat(1000);
        let gz = gzip(&text);
        let mut dec = MultiGzDecoder::new(Counting::new(&gz));
        let (n, lines) = inflate_into(&mut dec, 5000, &mut b).unwrap();
        // 277 whole copies of 18 bytes (554 newlines), then "line one\nline ".
        assert_eq!((n, lines), (5000, 555));
        assert_eq!(&b[..4], b"abXY");
        assert_eq!(&b[4..], &text[..5000]);
        let (n, _) = inflate_into(&mut dec, u64::MAX, &mut b).unwrap();
        assert_eq!(n as usize, text.len() - 5000);
        assert_eq!(&b[4..], &text[..]);
    }

    #[test]
    fn newlines_are_counted_in_every_length_and_alignment() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let bytes: Vec<u8> = (0..20_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // About one byte in eight a newline; the others odd (never 0x0a).
                if x.is_multiple_of(8) {
                    b'\n'
                } else {
                    (x >> 8) as u8 | 1
                }
            })
            .collect();
        for (from, len) in [(0, 0), (0, 1), (3, 31), (5, 8160), (1, 8161), (7, 19_990), (0, 20_000)]
        {
            let s = &bytes[from..from + len];
            #[allow(clippy::naive_bytecount)]
            let want = s.iter().filter(|&&b| b == b'\n').count() as u64;
            assert_eq!(newlines(s), want, "{from}..+{len}");
        }
        // A block of nothing but newlines: every lane at its limit.
        assert_eq!(newlines(&vec![b'\n'; 3 * 8160 + 5]), 3 * 8160 + 5);
    }

    #[test]
    fn numbers_cut_by_the_window_are_read_whole() {
        let text = b"{\"baseTimeNanoseconds\": 1751410836000000000, \"traceEvents\": []}";
        for chunk in 1..20 {
            let m = streamed(text, chunk).unwrap();
            assert_eq!(m.base_time_ns, Some(1_751_410_836_000_000_000), "{chunk}");
        }
    }
}

//! Streaming reader for gzip traces: one thread inflates 16 MiB chunks, this thread
//! parses them as they come, keeping only a window of the inflated bytes (the event
//! being parsed and what follows it). Memory stays near the model's size instead of the
//! inflated file's.
//!
//! The event array is parsed in batches of about two chunks, each split into stretches
//! parsed on several threads, as [`super::parse`] splits a whole file: split points are
//! guessed, and a batch counts only if every stretch ended exactly where the next one
//! began. A batch that fails in any way (an error, a wrong guess, an event cut by the
//! window's end) is dropped whole and its bytes are parsed event by event, which is
//! also what reports errors, so results and error positions never depend on the
//! batches.
//!
//! The grammar walked is the one of [`super::parse`]: the top-level object by hand,
//! every value and event with serde over the window. A value cut by the window's end
//! fails with an end-of-input error; the window then takes the next chunk and the value
//! is parsed again from its start. Positions are absolute (offsets in the inflated
//! JSON); lines are counted as bytes leave the window, so errors and warnings state
//! line and column like the in-memory reader.

use super::collect::Partial;
use super::error::{PosError, TraceError};
use super::event::EventSeed;
use super::parse::{
    expected, indent_before, one_value, run, split_points, DeviceList, DistInfo, End, KeyName,
    Parsed,
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
use std::sync::mpsc::{sync_channel, Receiver};

/// Inflated bytes per chunk.
const CHUNK: u64 = 16 << 20;

/// Why the stream stopped.
enum Fail {
    Gzip(TraceError),
    Json(PosError),
}

/// The inflated bytes from `base` on that the parser still needs.
struct Window<'r> {
    buf: Vec<u8>,
    /// Offset of `buf[0]` in the inflated stream.
    base: usize,
    /// Newlines before `base`.
    lines: u64,
    /// Offset where the line containing `base` starts.
    line_start: usize,
    rx: &'r Receiver<Result<Vec<u8>, TraceError>>,
    done: bool,
}

impl Window<'_> {
    /// Drops `buf[..keep]` and appends the next chunk. `Ok(false)` at the end of input.
    fn more(&mut self, keep: usize) -> Result<bool, Fail> {
        if self.done {
            return Ok(false);
        }
        let gone = &self.buf[..keep];
        // Counted this way the loop vectorizes; the last newline is searched from the end.
        #[allow(clippy::naive_bytecount)]
        let n = gone.iter().filter(|&&b| b == b'\n').count() as u64;
        if let Some(i) = gone.iter().rposition(|&b| b == b'\n') {
            self.lines += n;
            self.line_start = self.base + i + 1;
        }
        self.buf.drain(..keep);
        self.base += keep;
        match self.rx.recv() {
            Ok(Ok(chunk)) => {
                self.buf.extend_from_slice(&chunk);
                Ok(true)
            }
            Ok(Err(e)) => Err(Fail::Gzip(e)),
            Err(_) => {
                self.done = true;
                Ok(false)
            }
        }
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
            if !self.more(*p)? {
                return Ok(None);
            }
            *p = 0;
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
                    self.more(*p)?;
                    *p = 0;
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
    /// The window is filled to this many bytes before a batch.
    batch: usize,
    /// The last stretch of a batch stops at the first event starting this far before
    /// the window's end (an event cut by the end drops the batch).
    margin: usize,
    /// Stretches shorter than this are not worth a thread.
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
    let (tx, rx) = sync_channel::<Result<Vec<u8>, TraceError>>(2);
    std::thread::scope(|s| {
        let consumed = &consumed;
        s.spawn(move || {
            let mut dec = MultiGzDecoder::new(Counting::new(gz));
            let mut inflated = 0u64;
            loop {
                let mut chunk = Vec::with_capacity(chunk_bytes as usize);
                let r = (&mut dec).take(chunk_bytes).read_to_end(&mut chunk);
                consumed.store(dec.get_ref().position() as u64, Ordering::Relaxed);
                let msg = match r {
                    Ok(0) => return,
                    Ok(n) => {
                        inflated += n as u64;
                        let read = dec.get_ref().position() as u64;
                        if inflated > Limit::InflateFloor.value()
                            && inflated / read.max(1) > Limit::InflateRatio.value()
                        {
                            let found = format!(
                                "{inflated} bytes inflated from the first {read} compressed \
                                 bytes ({}x)",
                                inflated / read.max(1)
                            );
                            let message = Limit::InflateRatio.exceeded_here(&found);
                            let _ = tx.send(Err(TraceError::Limit {
                                path: path.to_path_buf(),
                                message: format!("the gzip stream inflates too far: {message}"),
                            }));
                            return;
                        }
                        Ok(chunk)
                    }
                    Err(e) => Err(TraceError::Gzip {
                        path: path.to_path_buf(),
                        compressed_offset: dec.get_ref().position() as u64,
                        inflated: inflated + chunk.len() as u64,
                        reason: super::source::gzip_reason(&e),
                    }),
                };
                let failed = msg.is_err();
                // The parser stopped (an error): nothing more to do.
                if tx.send(msg).is_err() || failed {
                    return;
                }
            }
        });
        let mut w =
            Window { buf: Vec::new(), base: 0, lines: 0, line_start: 0, rx: &rx, done: false };
        let mut out = Parsed::default();
        let batching = Batching::of(chunk_bytes, threads);
        let r = walk(&mut w, &mut out, batching, &mut |_| {
            progress(consumed.load(Ordering::Relaxed), total);
        });
        // Unblock the inflater if we stopped early.
        drop(rx);
        match r {
            Ok(()) => {
                progress(total, total);
                Ok(out)
            }
            Err(Fail::Gzip(e)) => Err(e),
            Err(Fail::Json(e)) => Err(e.into_trace_error(path.to_path_buf(), &[])),
        }
    })
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
        w.more(0)?;
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
        _ => return Err(w.expected(p, "`{` (a Kineto trace is a JSON object)")),
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
    // The first element's indentation, for guessing where later elements start.
    let indent = indent_before(&w.buf, *p).map(<[u8]>::to_vec);
    // Absolute offset from which the next batch may be tried (after a failed batch, its
    // bytes are parsed event by event first).
    let mut batch_from = if batching.threads > 1 { 0 } else { usize::MAX };
    let (max_events, max_bytes) = (Limit::Events.value(), Limit::ValueBytes.usize());
    loop {
        match w.peek(p)? {
            Some(b']') => return Err(w.expected(*p, "an event after `,`")),
            None => return Err(w.expected(*p, "an event")),
            Some(_) => {}
        }
        if w.base + *p >= batch_from {
            match batch(w, p, sink, batching, indent.as_deref(), tick)? {
                Batch::Parsed => continue,
                Batch::Closed => return Ok(()),
                Batch::Dropped { until } => batch_from = until,
            }
        }
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
                    w.more(*p)?;
                    *p = 0;
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

/// Fills the window and parses it from `*p` (an element's start) in stretches on several
/// threads, up to the first element starting `margin` before the window's end (to the
/// array's end once the input is complete). All or nothing: any failure (module docs)
/// drops the batch before anything is pushed.
fn batch(
    w: &mut Window,
    p: &mut usize,
    sink: &mut Partial,
    cut: Batching,
    indent: Option<&[u8]>,
    tick: &mut dyn FnMut(usize),
) -> Result<Batch, Fail> {
    while !w.done && w.buf.len() - *p < cut.batch {
        // `more` drops the bytes before `*p` even when no chunk follows.
        let base = w.base;
        let more = w.more(*p)?;
        *p = 0;
        if !more {
            break;
        }
        tick(base);
    }
    let (stop, region_end) = if w.done {
        (usize::MAX, w.buf.len())
    } else {
        (w.buf.len() - cut.margin, w.buf.len() - cut.margin)
    };
    let dropped = Batch::Dropped { until: w.base + region_end };
    if region_end <= *p {
        return Ok(dropped);
    }
    let splits = split_points(&w.buf[..region_end], *p, cut.threads, cut.min_stretch, indent);
    if splits.is_empty() {
        return Ok(dropped);
    }
    let mut bounds = vec![*p];
    bounds.extend(&splits);
    let (buf, base) = (&w.buf[..], w.base);
    let results: Vec<(Partial, Result<End, PosError>)> = bounds
        .par_iter()
        .enumerate()
        .map(|(i, &from)| {
            let mut part = Partial::default();
            let to = bounds.get(i + 1).copied().unwrap_or(stop);
            let end = run(buf, base, from, to, &mut part, &|_, _| {}, &mut |_| {});
            (part, end)
        })
        .collect();
    // Stretch i + 1 counts only if stretch i ended at its start; only the last may end
    // anywhere else.
    let n = results.len();
    let mut last = None;
    for (i, (_, end)) in results.iter().enumerate() {
        match (end, bounds.get(i + 1)) {
            (Ok(End::Next(q)), Some(next)) if q == next => {}
            (Ok(end), None) => last = Some(end),
            _ => return Ok(dropped),
        }
    }
    let events: u64 = results.iter().map(|(part, _)| part.events).sum();
    if sink.events + events > Limit::Events.value() {
        return Ok(dropped);
    }
    let closed = match last {
        Some(End::Next(q)) => {
            *p = *q;
            false
        }
        Some(End::Closed(after)) => {
            *p = *after;
            true
        }
        None => return Ok(dropped),
    };
    debug_assert_eq!(n, bounds.len());
    for (part, _) in results {
        sink.append(part);
    }
    let win = &*w;
    sink.warnings.resolve(&|abs| win.locate(abs));
    #[cfg(test)]
    tests::BATCHES.fetch_add(1, Ordering::Relaxed);
    Ok(if closed { Batch::Closed } else { Batch::Parsed })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kineto::link::build;
    use crate::kineto::parse::parse;
    use std::io::Write;
    use std::sync::atomic::AtomicUsize;

    /// Batches that were kept, counted so that tests can see they ran.
    pub(super) static BATCHES: AtomicUsize = AtomicUsize::new(0);

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
        let before = BATCHES.load(Ordering::Relaxed);
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
        assert!(BATCHES.load(Ordering::Relaxed) > before, "no batch was kept");
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

    #[test]
    fn numbers_cut_by_the_window_are_read_whole() {
        let text = b"{\"baseTimeNanoseconds\": 1751410836000000000, \"traceEvents\": []}";
        for chunk in 1..20 {
            let m = streamed(text, chunk).unwrap();
            assert_eq!(m.base_time_ns, Some(1_751_410_836_000_000_000), "{chunk}");
        }
    }
}

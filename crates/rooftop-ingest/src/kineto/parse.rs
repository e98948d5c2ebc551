//! Walks the bytes of a Kineto trace: the top-level object by hand (so that the position
//! of `traceEvents` is known), every other top-level value and every event with serde
//! over the borrowed bytes.
//!
//! The event array is parsed on several threads. Split points are guessed from how its
//! first two elements are laid out ([`Layout`]): where a line starts with the second
//! one's indentation and `{` (a raw newline never occurs inside a JSON string, so such a
//! guess can only be wrong about nesting depth), or, in a file without line breaks
//! between events, after the bytes that separate the first two (`}, {`, `},{`: such a
//! guess can also fall inside a string). Each stretch is parsed from its guess; the
//! stretch before it, parsed from a known-good start, must end exactly at the guess
//! (after a `,`), which proves the guess is an element boundary. If it does not, the
//! later stretches are dropped and parsing continues sequentially from where the good
//! stretch stopped, so the result never depends on the guesses.

use super::collect::{Partial, SharedArgs};
use super::error::PosError;
use super::event::EventSeed;
use super::fast::{ShapeMemo, Valid};
use rooftop_core::limits::Limit;
use rooftop_core::trace::TraceDevice;
use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Bytes parsed between two progress reports.
const PROGRESS_STEP: usize = 4 << 20;
/// Bytes parsed between two releases of the parsed pages of a mapped file.
const RELEASE_STEP: usize = 64 << 20;
/// Stretches shorter than this are not worth a task (each has its own argument-list
/// pool and is appended to the result once).
pub(super) const MIN_STRETCH: usize = 1 << 20;
/// Stretches per thread: more, smaller stretches than threads, so that a thread that
/// drew a quick stretch (Python frames are skipped, ops are read) takes another one,
/// and the last one, parsed while the other threads have nothing left, is short. 8
/// rather than 4 took 3–4% off the 1 GB trace; 16 cost the 28 MB one more in
/// per-stretch pools than it gained.
const STRETCHES_PER_THREAD: usize = 8;

/// What the top level of the file holds besides the events.
#[derive(Debug, Default)]
pub(crate) struct TopLevel {
    pub devices: Option<Vec<TraceDevice>>,
    pub rank: Option<i64>,
    pub world_size: Option<i64>,
    pub base_time_ns: Option<i64>,
}

/// Everything parsed from one file.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub top: TopLevel,
    pub events: Partial,
}

/// Parses a whole trace. `threads` ≥ 1 stretches of the event array are parsed at once;
/// `progress(done, total)` is called from this thread only.
/// `release(from, to)` is told which bytes the parser is done with (from any thread).
pub(crate) fn parse(
    buf: &[u8],
    threads: usize,
    release: &(dyn Fn(usize, usize) + Sync),
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Parsed, PosError> {
    parse_with(buf, threads, MIN_STRETCH, release, progress)
}

/// [`parse`] with the smallest stretch worth a thread as a parameter (tests split tiny
/// inputs).
fn parse_with(
    buf: &[u8],
    threads: usize,
    min_stretch: usize,
    release: &(dyn Fn(usize, usize) + Sync),
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Parsed, PosError> {
    let mut out = Parsed::default();
    let mut p = skip_ws(buf, skip_bom(buf));
    match buf.get(p) {
        Some(b'[') => {
            p = events_array(buf, p, threads, min_stretch, release, &mut out.events, progress)?;
        }
        Some(b'{') => {
            let mut found = false;
            p = skip_ws(buf, p + 1);
            if buf.get(p) == Some(&b'}') {
                p += 1;
            } else {
                loop {
                    if buf.get(p) != Some(&b'"') {
                        return Err(expected(buf, p, "a member name in quotes"));
                    }
                    let (key, after) = one_value::<KeyName>(buf, p)?;
                    p = skip_ws(buf, after);
                    if buf.get(p) != Some(&b':') {
                        return Err(expected(buf, p, "`:` after a member name"));
                    }
                    p = skip_ws(buf, p + 1);
                    p = match key {
                        KeyName::TraceEvents => {
                            if buf.get(p) != Some(&b'[') {
                                return Err(expected(buf, p, "`[` (`traceEvents` is an array)"));
                            }
                            found = true;
                            events_array(
                                buf,
                                p,
                                threads,
                                min_stretch,
                                release,
                                &mut out.events,
                                progress,
                            )?
                        }
                        KeyName::DeviceProperties => {
                            let (d, after) = one_value::<DeviceList>(buf, p)?;
                            out.top.devices = Some(d.0);
                            after
                        }
                        KeyName::DistributedInfo => {
                            let (d, after) = one_value::<DistInfo>(buf, p)?;
                            (out.top.rank, out.top.world_size) = (d.0, d.1);
                            after
                        }
                        KeyName::BaseTime => {
                            let (v, after) =
                                one_value::<super::event::Lenient<super::event::Id>>(buf, p)?;
                            out.top.base_time_ns = v.0.map(|i| i.0);
                            after
                        }
                        KeyName::Other => one_value::<IgnoredAny>(buf, p)?.1,
                    };
                    p = skip_ws(buf, p);
                    match buf.get(p) {
                        Some(b',') => p = skip_ws(buf, p + 1),
                        Some(b'}') => {
                            p += 1;
                            break;
                        }
                        _ => return Err(expected(buf, p, "`,` or `}` after a top-level member")),
                    }
                }
            }
            if !found {
                return Err(PosError { no_events: true, ..PosError::new(0, "") });
            }
        }
        _ => return Err(not_a_trace(buf, p)),
    }
    p = skip_ws(buf, p);
    if p < buf.len() {
        return Err(PosError::new(p, "unexpected characters after the end of the trace object"));
    }
    progress(buf.len() as u64, buf.len() as u64);
    Ok(out)
}

/// What a trace is, for the errors about its top level.
const A_TRACE: &str = "a Kineto trace is a JSON object or an array of events";

/// The error for a top level at `p` that is neither an object nor an array: valid JSON
/// of another type (`null`, a number, ...) is named as such, anything else is a syntax
/// error there.
pub(super) fn not_a_trace(buf: &[u8], p: usize) -> PosError {
    let rest = buf.get(p..).unwrap_or_default();
    let what = format!("`{{` or `[` ({A_TRACE})");
    let found = match rest.first() {
        Some(b'n') if rest.starts_with(b"null") => "JSON `null`",
        Some(b't' | b'f') if rest.starts_with(b"true") || rest.starts_with(b"false") => {
            "a JSON boolean"
        }
        Some(b'"') => "a JSON string",
        Some(b'-' | b'0'..=b'9') => "a JSON number",
        _ => return expected(buf, p, &what),
    };
    PosError::new(p, format!("expected {what}, found {found}"))
}

/// An error saying what was expected at `p` (or that the file ended there).
pub(super) fn expected(buf: &[u8], p: usize, what: &str) -> PosError {
    match buf.get(p) {
        None => PosError {
            eof: true,
            ..PosError::new(p, format!("the file ends here; expected {what}"))
        },
        Some(&c) => {
            let found = if c.is_ascii_graphic() {
                format!("`{}`", c as char)
            } else {
                format!("byte 0x{c:02x}")
            };
            PosError::new(p, format!("expected {what}, found {found}"))
        }
    }
}

pub(super) fn skip_bom(buf: &[u8]) -> usize {
    if buf.starts_with(&[0xef, 0xbb, 0xbf]) {
        3
    } else {
        0
    }
}

pub(super) fn skip_ws(buf: &[u8], mut p: usize) -> usize {
    while p < buf.len() && matches!(buf[p], b' ' | b'\n' | b'\r' | b'\t') {
        p += 1;
    }
    p
}

/// Deserializes one JSON value starting at `p`; returns it and the position after it.
pub(super) fn one_value<'a, T: Deserialize<'a>>(
    buf: &'a [u8],
    p: usize,
) -> Result<(T, usize), PosError> {
    let mut it = serde_json::Deserializer::from_slice(&buf[p..]).into_iter::<T>();
    match it.next() {
        Some(Ok(v)) => Ok((v, p + it.byte_offset())),
        Some(Err(e)) => Err(PosError::from_json(buf, p, &e)),
        None => Err(expected(buf, buf.len(), "a value")),
    }
}

/// How a stretch of the event array ended.
pub(super) enum End {
    /// After a `,`: the next element starts at this position.
    Next(usize),
    /// At the closing `]`; the position after it.
    Closed(usize),
}

/// Parses events from `from` (the start of an element) until the array closes or the
/// next element starts at or after `stop`. `base` is the offset of `buf[0]` in the
/// file (the streaming reader's window), for the offsets of warnings.
pub(super) fn run(
    buf: &[u8],
    base: usize,
    from: usize,
    stop: usize,
    sink: &mut Partial,
    release: &(dyn Fn(usize, usize) + Sync),
    tick: &mut dyn FnMut(usize),
) -> Result<End, PosError> {
    // `buf` is borrowed, so unchanged, until the next release, and until this returns.
    let fixed = FixedTexts::new(sink);
    let sink = &mut *fixed.0;
    let mut p = from;
    let mut reported = from;
    let mut released = from;
    let mut valid = Valid::default();
    // Cleared before each release: its texts lie in the bytes released.
    let mut memo = ShapeMemo::default();
    let (max_events, max_bytes) = (Limit::Events.value(), Limit::ValueBytes.usize());
    loop {
        if buf.get(p) == Some(&b']') {
            return Err(expected(buf, p, "an event after `,`"));
        }
        let start = p;
        // The hand-written scanner first; serde for what it leaves (`fast` docs).
        if valid.due(p) {
            valid = Valid::ahead(buf, p);
        }
        if let Some(end) = super::fast::event_with(buf, p, base + p, valid, &mut memo, sink) {
            p = end;
        } else {
            p = serde_event(buf, base, p, sink)?;
        }
        if p - start > max_bytes {
            return Err(PosError::limit(
                start,
                Limit::ValueBytes,
                &format!("an event of {} bytes", p - start),
            ));
        }
        if sink.events > max_events {
            return Err(too_many_events(start));
        }
        p = skip_ws(buf, p);
        match buf.get(p) {
            Some(b',') => {
                p = skip_ws(buf, p + 1);
                if p - reported >= PROGRESS_STEP {
                    tick(p - reported);
                    reported = p;
                    if p - released >= RELEASE_STEP {
                        memo.clear();
                        sink.texts_fixed(true);
                        release(released, p);
                        released = p;
                    }
                }
                if p >= stop {
                    tick(p - reported);
                    // The stretch's tail too: with several stretches a thread, tails
                    // left mapped add up to most of a stretch each.
                    release(released, p);
                    return Ok(End::Next(p));
                }
            }
            Some(b']') => {
                tick(p + 1 - reported);
                release(released, p);
                return Ok(End::Closed(p + 1));
            }
            _ => return Err(expected(buf, p, "`,` or `]` after an event")),
        }
    }
}

/// A sink told that its argument texts stay where they are ([`Partial::texts_fixed`])
/// until this is dropped.
struct FixedTexts<'s>(&'s mut Partial);

impl<'s> FixedTexts<'s> {
    fn new(sink: &'s mut Partial) -> Self {
        sink.texts_fixed(true);
        FixedTexts(sink)
    }
}

impl Drop for FixedTexts<'_> {
    fn drop(&mut self) {
        self.0.texts_fixed(false);
    }
}

/// The error for the event at `offset` that is one over [`Limit::Events`].
pub(super) fn too_many_events(offset: usize) -> PosError {
    PosError::limit(offset, Limit::Events, &format!("more than {} events", Limit::Events.value()))
}

/// One event parsed with serde (what the fast scanner leaves); the position after it.
fn serde_event(buf: &[u8], base: usize, p: usize, sink: &mut Partial) -> Result<usize, PosError> {
    let mut de = serde_json::Deserializer::from_slice(&buf[p..]);
    match (EventSeed { sink: &mut *sink, offset: base + p }).deserialize(&mut de) {
        // `into_iter` starts a stream where the deserializer stopped: its offset is the
        // length of the event.
        Ok(()) => Ok(p + de.into_iter::<IgnoredAny>().byte_offset()),
        Err(e) if e.is_data() => {
            // Well-formed JSON the visitor refused (cannot happen with the lenient
            // visitor; kept so that it never aborts the trace).
            let (_, after) = one_value::<IgnoredAny>(buf, p)?;
            sink.not_an_object(base + p);
            Ok(after)
        }
        Err(e) => Err(PosError::from_json(buf, p, &e)),
    }
}

/// Parses the array whose `[` is at `open`; returns the position after its `]`.
fn events_array(
    buf: &[u8],
    open: usize,
    threads: usize,
    min_stretch: usize,
    release: &(dyn Fn(usize, usize) + Sync),
    sink: &mut Partial,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<usize, PosError> {
    let start = skip_ws(buf, open + 1);
    if buf.get(start) == Some(&b']') {
        return Ok(start + 1);
    }
    let total = buf.len() as u64;
    let done = AtomicU64::new(start as u64);
    // One thread (a rank of several read at once) guesses nothing: no layout to learn.
    let layout = if threads > 1 { Layout::of(buf, start) } else { None };
    let splits = split_points(buf, start, threads, min_stretch, layout.as_ref());

    // Stretch i runs from bounds[i] to bounds[i + 1].
    let mut bounds = vec![start];
    bounds.extend(&splits);
    let n = bounds.len();
    let slots: Vec<Mutex<Option<Stretch>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let scale = match bounds.get(1) {
        Some(&second) => (buf.len() - start) as f64 / (second - start) as f64 * 1.05,
        None => 1.0,
    };
    let merge = Mutex::new(Merge { sink, next: 0, outcome: None, scale });
    // The events of each kind in the first stretch parsed, and its length: later
    // stretches reserve room for as many per byte, so that their vectors are allocated
    // once rather than grown by doubling (each growth a copy into fresh pages).
    let sample: Mutex<Option<([usize; 9], usize)>> = Mutex::new(None);
    let shared_args = Arc::new(SharedArgs::default());
    {
        let (bounds, slots, merge, done, sample) = (&bounds, &slots, &merge, &done, &sample);
        let shared_args = &shared_args;
        let len = move |i: usize| bounds.get(i + 1).unwrap_or(&buf.len()) - bounds[i];
        let stretch = move |i: usize| -> Partial {
            let mut part = Partial::sharing_args(shared_args);
            if let Some((counts, bytes)) = *lock(sample) {
                part.reserve_counts(counts, len(i) as f64 / bytes as f64 * 1.05);
            }
            part
        };
        let sampled = move |part: &Partial, i: usize| {
            lock(sample).get_or_insert_with(|| (part.lens(), len(i).max(1)));
        };
        // A finished stretch is appended as soon as every stretch before it is, by the
        // thread that finished it or the one after (while the others still parse): only
        // the last stretches are appended once all are parsed.
        let finish = move |i: usize, stretch: Stretch| {
            *lock(&slots[i]) = Some(stretch);
            if let Ok(mut m) = merge.try_lock() {
                m.advance(slots, bounds);
            }
        };
        rayon::in_place_scope(|s| {
            for i in 1..n {
                s.spawn(move |_| {
                    let mut part = stretch(i);
                    let stop = bounds.get(i + 1).copied().unwrap_or(usize::MAX);
                    let end = run(buf, 0, bounds[i], stop, &mut part, release, &mut |d| {
                        done.fetch_add(d as u64, Ordering::Relaxed);
                    });
                    sampled(&part, i);
                    finish(i, (part, end));
                });
            }
            let mut part = stretch(0);
            let mut tick = |d: usize| {
                let now = done.fetch_add(d as u64, Ordering::Relaxed) + d as u64;
                progress(now.min(total), total);
            };
            let end = match bounds.get(1) {
                Some(&stop) => run(buf, 0, bounds[0], stop, &mut part, release, &mut tick),
                None => run_sampled(buf, bounds[0], min_stretch, &mut part, release, &mut tick),
            };
            sampled(&part, 0);
            finish(0, (part, end));
        });
    }
    // Every stretch is parsed: append what the threads left.
    let mut m = merge.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    m.advance(&slots, &bounds);
    match m.outcome {
        Some(Outcome::Done(r)) => r,
        None => Err(expected(buf, buf.len(), "`]` closing `traceEvents`")),
        Some(Outcome::Resume(p)) => {
            // A wrong guess (or the last stretch ran past its stop, which it never
            // does): go on sequentially from the known-good position.
            let mut rest = Partial::default();
            let end = run(buf, 0, p, usize::MAX, &mut rest, release, &mut |d| {
                let now = done.fetch_add(d as u64, Ordering::Relaxed) + d as u64;
                progress(now.min(total), total);
            })?;
            m.sink.append(rest);
            if m.sink.events > Limit::Events.value() {
                return Err(too_many_events(p));
            }
            match end {
                End::Closed(after) => Ok(after),
                End::Next(p) => Err(expected(buf, p, "`]`")),
            }
        }
    }
}

/// The whole array from `from` on one thread (a rank of several read at once, or one
/// thread asked for): when it holds at least 8 stretches' worth (8 MiB), its first 1/32
/// (1 to 16 stretches' worth) is parsed, then the vectors take room for as many events of
/// each kind per byte in the rest, plus 5%. Grown by doubling, each growth copied them
/// into fresh pages: 3% of eight 100 MB ranks' CPU time. An estimate too small only
/// means they grow again.
fn run_sampled(
    buf: &[u8],
    from: usize,
    min_stretch: usize,
    sink: &mut Partial,
    release: &(dyn Fn(usize, usize) + Sync),
    tick: &mut dyn FnMut(usize),
) -> Result<End, PosError> {
    let len = buf.len() - from;
    if len < min_stretch.saturating_mul(8) {
        return run(buf, 0, from, usize::MAX, sink, release, tick);
    }
    let sample = (len / 32).clamp(min_stretch, min_stretch.saturating_mul(16));
    match run(buf, 0, from, from + sample, sink, release, tick)? {
        End::Next(q) => {
            sink.reserve_counts(sink.lens(), (buf.len() - q) as f64 / (q - from) as f64 * 1.05);
            run(buf, 0, q, usize::MAX, sink, release, tick)
        }
        closed @ End::Closed(_) => Ok(closed),
    }
}

/// One stretch's events and how it ended.
type Stretch = (Partial, Result<End, PosError>);

/// The stretches appended so far, in order, to the caller's sink.
struct Merge<'s> {
    sink: &'s mut Partial,
    /// The next stretch to append.
    next: usize,
    /// Set when the chain of stretches ends (no stretch after it is appended).
    outcome: Option<Outcome>,
    /// The events of all stretches over those of the first, estimated from their
    /// lengths.
    scale: f64,
}

/// How the chain of stretches ended.
enum Outcome {
    /// The array's end (the position after its `]`) or the first error.
    Done(Result<usize, PosError>),
    /// A stretch did not end where the next one starts: parse sequentially from here.
    Resume(usize),
}

impl Merge<'_> {
    /// Appends the parsed stretches that follow the ones appended, in order, up to the
    /// first still being parsed; stretch i + 1 counts only if stretch i ended at its
    /// start.
    fn advance(&mut self, slots: &[Mutex<Option<Stretch>>], bounds: &[usize]) {
        while self.outcome.is_none() {
            let i = self.next;
            let Some((part, end)) = slots.get(i).and_then(|s| lock(s).take()) else { return };
            self.next += 1;
            if i == 0 && bounds.len() > 1 {
                // Room for all the stretches, estimated from the first (they are of
                // about the same length) with a margin: each is then copied once.
                self.sink.reserve_scaled([&part], self.scale);
            }
            self.sink.append(part);
            self.outcome = if self.sink.events > Limit::Events.value() {
                // Each stretch checks its own count; the sum is checked here.
                Some(Outcome::Done(Err(too_many_events(bounds[i]))))
            } else {
                match end {
                    Err(e) => Some(Outcome::Done(Err(e))),
                    Ok(End::Closed(after)) => Some(Outcome::Done(Ok(after))),
                    Ok(End::Next(p)) if bounds.get(i + 1) == Some(&p) => None,
                    Ok(End::Next(p)) => Some(Outcome::Resume(p)),
                }
            };
        }
    }
}

/// The value behind `m`, also after a panic elsewhere (which the scope re-raises).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How the elements of the event array are laid out, learned from the first two: what
/// a guess at a later element's start looks for.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Layout {
    /// Elements separated by a line break: a line that starts with this indentation and
    /// `{`, after a line that ends with `,` (Kineto's one event per line, or an indented
    /// dump).
    Lines(Vec<u8>),
    /// Any other layout: these bytes, from one element's closing `}` to the next one's
    /// `{` (`},{` minified, `}, {` as Python's `json.dump` writes by default, `}\n, {`
    /// with leading commas).
    Separator(Vec<u8>),
}

impl Layout {
    /// The layout of the array whose element starts at `start` (after blanks), from the
    /// bytes between that element and the next; `None` when there is no next element
    /// in `buf`, or either is not an object (no guesses: one stretch).
    pub(super) fn of(buf: &[u8], start: usize) -> Option<Layout> {
        let start = skip_ws(buf, start);
        if buf.get(start) != Some(&b'{') {
            return None;
        }
        let (_, end) = one_value::<IgnoredAny>(buf, start).ok()?;
        let comma = skip_ws(buf, end);
        let next = skip_ws(buf, comma + 1);
        if buf.get(comma) != Some(&b',') || buf.get(next) != Some(&b'{') {
            return None;
        }
        let between = &buf[end - 1..=next];
        // The next element's indentation, when it starts a line after blanks only.
        let indent = between
            .iter()
            .rposition(|&b| b == b'\n')
            .map(|nl| &between[nl + 1..between.len() - 1])
            .filter(|ind| ind.iter().all(|&b| b == b' ' || b == b'\t'));
        Some(match indent {
            Some(ind) => Layout::Lines(ind.to_vec()),
            None => Layout::Separator(between.to_vec()),
        })
    }
}

/// Guesses up to `threads` × [`STRETCHES_PER_THREAD`] − 1 element starts after `start`
/// (none for one thread, or without a `layout`), spread by [`stretch_ends`] ([`Layout`]).
pub(super) fn split_points(
    buf: &[u8],
    start: usize,
    threads: usize,
    min_stretch: usize,
    layout: Option<&Layout>,
) -> Vec<usize> {
    let len = buf.len() - start;
    let Some(layout) = layout else { return Vec::new() };
    if threads < 2 || len < 2 * min_stretch.max(1) {
        return Vec::new();
    }
    let pieces = (threads * STRETCHES_PER_THREAD).min(len / min_stretch.max(1)).max(1);
    let mut out = Vec::new();
    let mut from = start;
    for end in stretch_ends(len, pieces, threads, min_stretch) {
        let target = (start + end).max(from + 1);
        let found = match layout {
            Layout::Lines(indent) => find_line_start(buf, target, indent),
            Layout::Separator(sep) => find_separator(buf, target, sep),
        };
        match found {
            Some(q) if q > from => {
                out.push(q);
                from = q;
            }
            _ => break,
        }
    }
    out
}

/// Where each of `pieces` stretches of `len` bytes ends but the last (offsets from the
/// array's start, increasing): the last `2 × threads` stretches half as long as the
/// others, when a half is still at least `min_stretch`. The stretches are taken in
/// order; the threads finish their last ones at different times, and each waits for the
/// slowest (then appends it alone): shorter last stretches shorten that wait.
fn stretch_ends(
    len: usize,
    pieces: usize,
    threads: usize,
    min_stretch: usize,
) -> impl Iterator<Item = usize> {
    // In half-stretch units: `full` whole stretches (two units each), then `halves`.
    let mut halves = (2 * threads).min(pieces / 2);
    if len / (2 * pieces - halves) < min_stretch.max(1) {
        halves = 0;
    }
    let (full, units) = (pieces - halves, 2 * pieces - halves);
    (1..pieces).map(move |k| {
        let u = if k <= full { 2 * k } else { full + k };
        // `len × u` in 128 bits: no overflow whatever the length.
        (len as u128 * u as u128 / units as u128) as usize
    })
}

/// The first `\n<indent>{` at or after `from` whose line is preceded by `,`; returns the
/// position of `{`.
fn find_line_start(buf: &[u8], from: usize, indent: &[u8]) -> Option<usize> {
    let mut i = from;
    while i < buf.len() {
        let nl = i + memchr::memchr(b'\n', &buf[i..])?;
        let body = nl + 1;
        let brace = body + indent.len();
        if buf.get(body..brace) == Some(indent) && buf.get(brace) == Some(&b'{') {
            // The previous non-whitespace byte must be the separating comma.
            let prev = buf[..nl].iter().rposition(|b| !matches!(b, b' ' | b'\t' | b'\r'));
            if prev.is_some_and(|j| buf[j] == b',') {
                return Some(brace);
            }
        }
        i = body;
    }
    None
}

/// The [`Layout::Separator`] guess: the first `sep` (ending in `{`) at or after `from`;
/// returns the position of its `{`.
fn find_separator(buf: &[u8], from: usize, sep: &[u8]) -> Option<usize> {
    let at = memchr::memmem::find(buf.get(from..)?, sep)?;
    Some(from + at + sep.len() - 1)
}

/// Top-level member names the reader uses.
pub(super) enum KeyName {
    TraceEvents,
    DeviceProperties,
    DistributedInfo,
    BaseTime,
    Other,
}

impl<'de> Deserialize<'de> for KeyName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = KeyName;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<KeyName, E> {
                Ok(match s {
                    "traceEvents" => KeyName::TraceEvents,
                    "deviceProperties" => KeyName::DeviceProperties,
                    "distributedInfo" => KeyName::DistributedInfo,
                    "baseTimeNanoseconds" => KeyName::BaseTime,
                    _ => KeyName::Other,
                })
            }
        }
        d.deserialize_str(V)
    }
}

/// `deviceProperties`: an array of objects; entries that are not objects are skipped.
pub(super) struct DeviceList(pub Vec<TraceDevice>);

impl<'de> Deserialize<'de> for DeviceList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DeviceList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of device objects")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<DeviceList, A::Error> {
                let mut out = Vec::new();
                while let Some(d) = s.next_element::<Device>()? {
                    if let Some(d) = d.0 {
                        out.push(d);
                    }
                }
                Ok(DeviceList(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<DeviceList, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(DeviceList(Vec::new()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<DeviceList, E> {
                Ok(DeviceList(Vec::new()))
            }
        }
        d.deserialize_any(V)
    }
}

struct Device(Option<TraceDevice>);

impl<'de> Deserialize<'de> for Device {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use super::event::{Id, Lenient};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Device;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a device object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Device, A::Error> {
                let mut d = TraceDevice::default();
                let (mut major, mut minor) = (None, None);
                while let Some(k) = m.next_key::<String>()? {
                    let int = |v: Lenient<Id>| v.0.map(|i| i.0);
                    match k.as_str() {
                        "id" => d.index = int(m.next_value()?).unwrap_or(0),
                        "name" => {
                            d.name = m
                                .next_value::<Lenient<super::event::Str>>()?
                                .0
                                .map(|s| s.0.into_owned())
                                .unwrap_or_default();
                        }
                        "numSms" => {
                            d.num_sms = int(m.next_value()?).and_then(|v| u32::try_from(v).ok());
                        }
                        "computeMajor" => major = int(m.next_value()?),
                        "computeMinor" => minor = int(m.next_value()?),
                        "totalGlobalMem" => {
                            d.total_memory_bytes =
                                int(m.next_value()?).and_then(|v| u64::try_from(v).ok());
                        }
                        "warpSize" => {
                            d.warp_size = int(m.next_value()?).and_then(|v| u32::try_from(v).ok());
                        }
                        _ => {
                            m.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                if let (Some(a), Some(b)) = (major, minor) {
                    d.compute_capability = Some(format!("{a}.{b}"));
                }
                Ok(Device(Some(d)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Device, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Device(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Device, E> {
                Ok(Device(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Device, E> {
                Ok(Device(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Device, E> {
                Ok(Device(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Device, E> {
                Ok(Device(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Device, E> {
                Ok(Device(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Device, E> {
                Ok(Device(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// `distributedInfo`: `rank` and `world_size` are read.
pub(super) struct DistInfo(pub Option<i64>, pub Option<i64>);

impl<'de> Deserialize<'de> for DistInfo {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use super::event::{Id, Lenient};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DistInfo;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<DistInfo, A::Error> {
                let (mut rank, mut world_size) = (None, None);
                while let Some(k) = m.next_key::<String>()? {
                    if k == "rank" {
                        rank = m.next_value::<Lenient<Id>>()?.0.map(|i| i.0);
                    } else if k == "world_size" {
                        world_size = m.next_value::<Lenient<Id>>()?.0.map(|i| i.0);
                    } else {
                        m.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(DistInfo(rank, world_size))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<DistInfo, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(DistInfo(None, None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<DistInfo, E> {
                Ok(DistInfo(None, None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<DistInfo, E> {
                Ok(DistInfo(None, None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<DistInfo, E> {
                Ok(DistInfo(None, None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<DistInfo, E> {
                Ok(DistInfo(None, None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<DistInfo, E> {
                Ok(DistInfo(None, None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<DistInfo, E> {
                Ok(DistInfo(None, None))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kineto::link::build;
    use rooftop_core::trace::TraceModel;
    use std::fmt::Write as _;

    fn model(buf: &[u8], threads: usize, min_stretch: usize) -> Result<TraceModel, String> {
        parse_with(buf, threads, min_stretch, &|_, _| {}, &mut |_, _| {})
            .map(|p| build(p, buf, &|_, _| {}))
            .map_err(|e| e.to_string())
    }

    /// A trace of `n` ops, each launching a kernel, formatted as `style` says.
    fn synthetic(n: usize, style: u8) -> String {
        let mut s = String::from(
            "{\"deviceProperties\": [{\"id\": 0, \"name\": \"X\"}],\n  \"traceEvents\": [",
        );
        for i in 0..n {
            let ts = i * 10;
            let sep = if i == 0 { "" } else { "," };
            let (op, rt, k) = (
                format!(
                    "{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op{}\", \"pid\": 1, \"tid\": {}, \"ts\": {ts}, \"dur\": 8, \"args\": {{\"External id\": {i}, \"Input Dims\": [[{}, 4], []]}}}}",
                    i % 7,
                    1 + i % 3,
                    i % 5
                ),
                format!(
                    "{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": {}, \"ts\": {}, \"dur\": 2, \"args\": {{\"correlation\": {i}}}}}",
                    1 + i % 3,
                    ts + 1
                ),
                format!(
                    "{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k{}\", \"pid\": 0, \"tid\": 7, \"ts\": {}.5, \"dur\": 3, \"args\": {{\"correlation\": {i}, \"nested\": [1,\n  {{\"trap\": 1}}]}}}}",
                    i % 4,
                    ts + 3
                ),
            );
            let flat = k.replace('\n', "");
            let _ = match style {
                // One event per line, two-space indent (libkineto-like), with a nested
                // object that starts a line at the events' indentation: a wrong guess.
                0 => write!(s, "{sep}\n  {op},\n  {rt},\n  {k}"),
                // Minified: no line breaks at all.
                1 => write!(s, "{sep}{op},{rt},{flat}"),
                // One line, `}, {` between events (Python's `json.dump` by default).
                2 => write!(s, "{sep} {op}, {rt}, {flat}"),
                // One event per line, none indented, the first after the `[`.
                3 if i == 0 => write!(s, "{op},\n{rt},\n{flat}"),
                3 => write!(s, "{sep}\n{op},\n{rt},\n{flat}"),
                // Leading commas: `\n, {` between events.
                _ => write!(s, "\n{sep} {op}\n, {rt}\n, {flat}"),
            };
        }
        s.push_str("\n  ],\n  \"traceName\": \"t\"\n}\n");
        s
    }

    #[test]
    fn split_parsing_equals_sequential_parsing() {
        for style in 0..=4 {
            let text = synthetic(300, style);
            let buf = text.as_bytes();
            // Each layout is split (the guesses are then checked by the parse).
            let start = skip_ws(buf, text.find("\"traceEvents\": [").unwrap() + 16);
            let layout = Layout::of(buf, start);
            assert!(split_points(buf, start, 4, 1000, layout.as_ref()).len() > 2, "{style}");
            let one = model(buf, 1, usize::MAX).unwrap();
            assert_eq!(one.ops.len(), 300);
            assert_eq!(one.gpu.iter().filter(|g| g.op.is_some()).count(), 300);
            // One thread, its first 1/32 parsed before the rest (a sample for the room
            // its vectors take).
            assert_eq!(model(buf, 1, 64).unwrap(), one, "style {style}, sampled");
            for threads in [2, 3, 8] {
                for min in [64, 1000, 7000] {
                    let many = model(buf, threads, min).unwrap();
                    assert_eq!(many, one, "style {style}, {threads} threads, stretches ≥ {min} B");
                }
            }
        }
    }

    #[test]
    fn the_last_stretches_are_half_as_long() {
        // 28 bytes in 16 stretches for 2 threads, each ≥ 1 byte: 12 of 2 bytes, then 4
        // of 1 (28 = 12 × 2 + 4 × 1).
        let mut ends: Vec<usize> = (1..=12).map(|k| 2 * k).collect();
        ends.extend([25, 26, 27]);
        assert_eq!(stretch_ends(28, 16, 2, 1).collect::<Vec<_>>(), ends);
        // Halves under the smallest stretch worth a task: 16 even stretches of 1.75
        // bytes, ends rounded down.
        let even: Vec<usize> = (1..16).map(|k| k * 7 / 4).collect();
        assert_eq!(stretch_ends(28, 16, 2, 2).collect::<Vec<_>>(), even);
        // Two stretches: the second is the half (2/3 and 1/3 of 30 bytes).
        assert_eq!(stretch_ends(30, 2, 4, 1).collect::<Vec<_>>(), vec![20]);
        assert_eq!(stretch_ends(30, 1, 2, 1).count(), 0);
        // A length whose product with the units overflows 64 bits.
        let huge: Vec<usize> = stretch_ends(usize::MAX, 16, 2, 1).collect();
        assert!(huge.windows(2).all(|w| w[0] < w[1]) && huge[14] < usize::MAX);
    }

    #[test]
    fn stretches_share_one_copy_of_each_argument_list() {
        // 300 ops with 5 distinct argument lists, in stretches of ≥ 1 kB: ops with the
        // same list hold the same copy, whichever stretch read them.
        let text = synthetic(300, 1);
        let buf = text.as_bytes();
        let start = skip_ws(buf, text.find("\"traceEvents\": [").unwrap() + 16);
        assert!(split_points(buf, start, 4, 1000, Layout::of(buf, start).as_ref()).len() > 2);
        let m = model(buf, 4, 1000).unwrap();
        let mut copies: Vec<*const rooftop_core::trace::OpArgs> =
            m.ops.iter().map(|o| Arc::as_ptr(&o.args)).collect();
        copies.sort_unstable();
        copies.dedup();
        assert_eq!(copies.len(), 5);
    }

    #[test]
    fn guesses_inside_events_fall_back_to_sequential() {
        // Every event's nested object is a trap at the events' indentation.
        let text = synthetic(50, 0);
        let buf = text.as_bytes();
        let start = skip_ws(buf, text.find("\"traceEvents\": [").unwrap() + 16);
        let splits = split_points(buf, start, 8, 64, Layout::of(buf, start).as_ref());
        assert!(!splits.is_empty());
        assert_eq!(model(buf, 8, 64).unwrap(), model(buf, 1, usize::MAX).unwrap());
    }

    #[test]
    fn layouts_are_learned_from_the_first_two_elements() {
        let of = |t: &str| Layout::of(t.as_bytes(), 1);
        let sep = |t: &str| Some(Layout::Separator(t.as_bytes().to_vec()));
        let lines = |t: &str| Some(Layout::Lines(t.as_bytes().to_vec()));
        assert_eq!(of(r#"[{"a": [1, {"b": 2}]}, {"c": 3}]"#), sep("}, {"));
        assert_eq!(of(r#"[{"a":1},{"b":2}]"#), sep("},{"));
        assert_eq!(of("[\n  {\"a\": 1},\n  {\"b\": 2}\n]"), lines("  "));
        assert_eq!(of("[{\"a\": 1},\r\n\t{\"b\": 2}]"), lines("\t"));
        assert_eq!(of("[{\"a\": 1},\n{\"b\": 2}]"), lines(""));
        assert_eq!(of("[{\"a\": 1}\n, {\"b\": 2}]"), sep("}\n, {"));
        // No second element, or not objects: nothing to guess from.
        assert_eq!(of(r#"[{"a": 1}]"#), None);
        assert_eq!(of(r#"[{"a": 1}, 2]"#), None);
        assert_eq!(of("[1, {\"b\": 2}]"), None);
        assert_eq!(of(r#"[{"a": 1}, {"b""#), sep("}, {"));
        assert_eq!(of(r#"[{"a": 1"#), None);
        // The separator is found where it is, its `{` returned.
        let text = r#"[{"a": 1}, {"b": "}, {"}, {"c": 3}]"#;
        let buf = text.as_bytes();
        assert_eq!(find_separator(buf, 2, b"}, {"), Some(11));
        assert_eq!(find_separator(buf, 12, b"}, {"), Some(21));
        assert_eq!(find_separator(buf, 22, b"}, {"), Some(26));
        assert_eq!(find_separator(buf, 27, b"}, {"), None);
    }

    #[test]
    fn errors_in_later_stretches_are_reported_with_their_position() {
        let text = synthetic(200, 0);
        let pos = text.len() * 3 / 4;
        let at = pos + text[pos..].find("\"dur\": 2").unwrap();
        let mut bad = text.clone();
        bad.replace_range(at..at + 9, "\"dur\" 2 ");
        let one = model(bad.as_bytes(), 1, usize::MAX).unwrap_err();
        let many = model(bad.as_bytes(), 4, 200).unwrap_err();
        assert_eq!(one, many);
        assert!(one.starts_with(&format!("byte {}", at + 6)), "{one} (at {at})");
    }
}

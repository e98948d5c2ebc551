//! The fast path of the event reader: one event scanned by hand, straight from the bytes,
//! into the same [`Event`] the serde visitor of [`super::event`] builds.
//!
//! Most of a trace's time is spent in a handful of shapes (`{"ph": "X", "cat":
//! "cpu_op", "name": "...", "pid": 1, ..., "args": {...}}`); serde's generic visitor
//! machinery costs more than the bytes themselves. This scanner walks the JSON grammar
//! directly (SWAR string scanning, keys matched as bytes, integers read in place) and
//! hands anything unusual to serde value by value (a number that is not a small
//! integer, a string with escapes or non-ASCII bytes where the text is kept, a value of
//! an unexpected type), so the visitors' lenient rules stay the single definition.
//!
//! Invariant: the scanner accepts an event only if serde would parse it without error,
//! and then yields exactly serde's [`Event`]. It validates at least what serde does —
//! the JSON grammar, control characters and escapes in every string, UTF-8 of every
//! string whose text is kept (raw values, kept strings, keys serde reads as text) — and
//! gives up (`None`) on anything else, before pushing anything: the caller then parses
//! the event again with serde, which produces the model or the error with its exact
//! position. Giving up is always safe; it only costs time.

use super::collect::{keep_named, skippable, Partial};
use super::event::{
    comm_value, decimal_us_to_ns, micros_or_why, set_comm, why_not_micros, ArgKey, Args, BadTime,
    CommKey, CommValue, Dim3, Event, EventKey, Id, Lenient, Phase, PhaseValue, Str, CONCRETE, DIMS,
    STRIDES, TYPES,
};
use super::hash::FxMap;
use serde::de::{Deserialize, IgnoredAny};
use std::borrow::Cow;

/// Parses the event whose first byte is `buf[start]` into `sink` (`offset`: where it
/// is in the file, for warnings); the position after it, or `None` (nothing pushed)
/// when serde must parse it.
pub(crate) fn event<'a>(
    buf: &'a [u8],
    start: usize,
    offset: usize,
    valid: Valid<'a>,
    sink: &mut Partial,
) -> Option<usize> {
    event_with(buf, start, offset, valid, &mut ShapeMemo::default(), sink)
}

/// [`event`], with the shapes of earlier events of the same stretch at hand (`memo`).
pub(crate) fn event_with<'a>(
    buf: &'a [u8],
    start: usize,
    offset: usize,
    valid: Valid<'a>,
    memo: &mut ShapeMemo<'a>,
    sink: &mut Partial,
) -> Option<usize> {
    let mut s = Scan { b: buf, p: start, valid, memo };
    // Built in place: an event is ~0.5 KB, and moving it through every reader's return
    // value cost more than filling it.
    let mut ev = Event::default();
    s.event(&mut ev)?;
    sink.push(&mut ev, offset);
    Some(s.p)
}

/// A stretch of the buffer checked to be UTF-8 in one pass: text kept from inside it is
/// sliced from it (constant time) instead of being validated string by string.
#[derive(Clone, Copy, Default)]
pub(crate) struct Valid<'a> {
    text: &'a str,
    /// Where `text` starts in the buffer.
    start: usize,
    /// From where on the next stretch should be checked ([`Valid::due`]).
    recheck: usize,
}

/// Bytes checked at once by [`Valid::ahead`]: small enough to be read again from the
/// cache by the scanner.
const VALID_WINDOW: usize = 1 << 20;
/// The next window starts at the first event that begins within this many bytes of the
/// end of the last (an event longer than that validates its strings one by one).
const VALID_MARGIN: usize = 64 << 10;

impl<'a> Valid<'a> {
    /// The longest valid UTF-8 text of `buf[from..to]` (`to` capped at the end) from its
    /// start.
    pub(crate) fn over(buf: &'a [u8], from: usize, to: usize) -> Self {
        let to = to.min(buf.len());
        let bytes = buf.get(from..to).unwrap_or_default();
        // The SIMD check first (most windows are valid); the standard one finds where
        // a bad window stops being valid.
        let checked = simdutf8::basic::from_utf8(bytes).or_else(|_| std::str::from_utf8(bytes));
        match checked {
            Ok(text) => {
                let recheck =
                    if to == buf.len() { usize::MAX } else { to - VALID_MARGIN.min(to - from) };
                Valid { text, start: from, recheck }
            }
            Err(e) => {
                let ok = e.valid_up_to();
                let text = std::str::from_utf8(&bytes[..ok]).unwrap_or_default();
                // Not again before the scanner is past the bad byte: checking the same
                // bytes for every event before it would be quadratic.
                Valid { text, start: from, recheck: from + ok + 1 }
            }
        }
    }

    /// The window the scanner uses from `from` on.
    pub(crate) fn ahead(buf: &'a [u8], from: usize) -> Self {
        Valid::over(buf, from, from.saturating_add(VALID_WINDOW))
    }

    /// Whether an event at `p` should have a new window ([`Valid::ahead`]).
    pub(crate) fn due(&self, p: usize) -> bool {
        p >= self.recheck
    }

    /// `buf[from..to]` as text: sliced when inside the checked stretch, validated here
    /// otherwise.
    #[inline]
    fn str(&self, buf: &'a [u8], from: usize, to: usize) -> Option<&'a str> {
        if from >= self.start {
            if let Some(t) = self.text.get(from - self.start..to - self.start) {
                return Some(t);
            }
        }
        std::str::from_utf8(buf.get(from..to)?).ok()
    }
}

/// `0x0101…01`.
const ONES: u64 = u64::MAX / 255;
/// `0x8080…80`.
const HIGH: u64 = ONES << 7;

/// Bytes of `w` that end a run of plain string bytes (`"`, `\` or a control character),
/// as their high bits; exact for the first such byte (later ones may be missed or
/// false, which only the first matters for).
#[inline]
fn specials(w: u64) -> u64 {
    let ctrl = w.wrapping_sub(ONES * 0x20) & !w;
    let q = w ^ (ONES * u64::from(b'"'));
    let quote = q.wrapping_sub(ONES) & !q;
    let bs = w ^ (ONES * u64::from(b'\\'));
    let backslash = bs.wrapping_sub(ONES) & !bs;
    (ctrl | quote | backslash) & HIGH
}

/// Bytes of `w` that are not ASCII digits, as their high bits (exact for every byte:
/// no carry crosses a byte). A digit is `0x30..=0x39`, that is a byte `x = b ^ 0x30`
/// below 10: adding `0x80 - 10` to its low seven bits sets the top bit exactly when
/// they are 10 or more (the sum stays under `0x100`), and a top bit already set is a
/// byte of 0x80 or more.
#[inline]
fn non_digits(w: u64) -> u64 {
    let x = w ^ (ONES * 0x30);
    (((x & !HIGH) + ONES * (0x80 - 10)) | x) & HIGH
}

/// Powers of ten up to 10⁷ (the digits of a second word of [`digit_run`]).
const POW10: [u64; 8] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];

/// The value of the first `n` bytes of `w` (`n` ≤ 8), ASCII digits with the first in
/// the lowest byte: the bytes after them are shifted out and zeros shifted in ahead,
/// then neighbouring digits are combined in pairs, fours and eights (no sum crosses
/// its lane: 99, 9,999 and 99,999,999 fit a byte, 16 and 32 bits).
// Always inlined, like `digit_run`: left to the compiler, neither was, and the scanner
// ran 17 M more instructions on a 27.9 MB trace than with the byte loops.
#[allow(clippy::inline_always)]
#[inline(always)]
fn digits_value(w: u64, n: usize) -> u64 {
    if n == 0 {
        return 0;
    }
    // A byte after the digits may be below `'0'`; its borrow runs only into the bytes
    // after it, which the shift drops.
    let v = w.wrapping_sub(ONES * 0x30) << (8 * (8 - n));
    let v = v.wrapping_mul(10).wrapping_add(v >> 8) & 0x00ff_00ff_00ff_00ff;
    let v = v.wrapping_mul(100).wrapping_add(v >> 16) & 0x0000_ffff_0000_ffff;
    v.wrapping_mul(10_000).wrapping_add(v >> 32) & 0xffff_ffff
}

/// The run of ASCII digits at `buf[at..]`, read a word at a time: its first two words
/// (the second 0 when the run ends in the first) and its length, when it ends within
/// 16 bytes and the words it needs are in `buf` (`None` otherwise: the caller reads it
/// byte by byte).
#[allow(clippy::inline_always)]
#[inline(always)]
fn digit_words(buf: &[u8], at: usize) -> Option<(u64, u64, usize)> {
    let first = u64::from_le_bytes(*buf.get(at..)?.first_chunk::<8>()?);
    let stops = non_digits(first);
    if stops != 0 {
        return Some((first, 0, (stops.trailing_zeros() / 8) as usize));
    }
    let second = u64::from_le_bytes(*buf.get(at + 8..)?.first_chunk::<8>()?);
    let stops = non_digits(second);
    (stops != 0).then(|| (first, second, 8 + (stops.trailing_zeros() / 8) as usize))
}

/// [`digit_words`] with the run's value instead of its words.
#[allow(clippy::inline_always)]
#[inline(always)]
fn digit_run(buf: &[u8], at: usize) -> Option<(u64, usize)> {
    let (first, second, len) = digit_words(buf, at)?;
    Some(if len <= 8 {
        (digits_value(first, len), len)
    } else {
        (digits_value(first, 8) * POW10[len - 8] + digits_value(second, len - 8), len)
    })
}

/// The length of the run of ASCII digits at `buf[at..]` ([`digit_words`]).
#[inline]
fn digit_len(buf: &[u8], at: usize) -> Option<usize> {
    digit_words(buf, at).map(|(_, _, len)| len)
}

/// Where the number at `buf[at]` ends when it is a plain one: an optional `-`, an
/// integer part without a leading zero (or a lone `0`), optionally `.` and decimals,
/// each part under 16 digits, no exponent. `None` for anything else, including what
/// [`Scan::number`] accepts or refuses in its longer way.
#[inline]
fn plain_number_end(buf: &[u8], at: usize) -> Option<usize> {
    let int = at + usize::from(*buf.get(at)? == b'-');
    let n = digit_len(buf, int)?;
    if n == 0 || (n > 1 && buf[int] == b'0') {
        return None;
    }
    let mut end = int + n;
    if buf.get(end) == Some(&b'.') {
        let k = digit_len(buf, end + 1)?;
        if k == 0 {
            return None;
        }
        end += 1 + k;
    }
    // The byte after the digits is not a digit (`digit_len` stops at one).
    (!matches!(buf.get(end), Some(b'e' | b'E'))).then_some(end)
}

/// Whether `hay` starts with `needle`: `starts_with` for the short runs of bytes the
/// memo compares (categories, names, shape lists, a skipped event's separators), a word
/// at a time and inlined: the library call it replaces cost as much as the comparison.
#[inline]
fn has_prefix(hay: &[u8], needle: &[u8]) -> bool {
    let n = needle.len();
    let Some(hay) = hay.get(..n) else { return false };
    let word = |s: &[u8], i: usize| s.get(i..).and_then(|r| r.first_chunk::<8>()).copied();
    let half = |s: &[u8], i: usize| s.get(i..).and_then(|r| r.first_chunk::<4>()).copied();
    match n {
        8.. => {
            let mut i = 0;
            while i + 8 < n {
                if word(hay, i) != word(needle, i) {
                    return false;
                }
                i += 8;
            }
            // The last word, overlapping the one before when `n` is not a multiple of 8.
            word(hay, n - 8) == word(needle, n - 8)
        }
        // Two overlapping halves.
        4.. => half(hay, 0) == half(needle, 0) && half(hay, n - 4) == half(needle, n - 4),
        _ => hay.iter().zip(needle).all(|(a, b)| a == b),
    }
}

/// What a scanned string held.
#[derive(Clone, Copy)]
struct StrSpan {
    /// Content, between the quotes.
    start: usize,
    end: usize,
    /// Whether it has a backslash escape.
    escaped: bool,
    /// Whether it has a byte ≥ 0x80.
    non_ascii: bool,
}

struct Scan<'a, 'm> {
    b: &'a [u8],
    p: usize,
    valid: Valid<'a>,
    memo: &'m mut ShapeMemo<'a>,
}

/// Shape lists recently read, by op name: an op's `Input Dims` (and its types, strides
/// and concrete inputs) are most often, byte for byte, what one of its last few calls
/// had (in a 27.9 MB training trace, 99.3% of them with the last eight distinct texts
/// at hand, 88% with the last four, 68% with the last call's only).
///
/// A value that starts with `[`, `{` or `"` and whose bytes equal those of a value the
/// scanner accepted is that value: brackets and quotes close where they closed, so it
/// ends at the same byte, and it is as valid (grammar and UTF-8). Such a value is then
/// compared instead of scanned. The texts borrow the buffer of one run of events;
/// [`ShapeMemo::clear`] forgets them before the bytes they lie in are released.
#[derive(Default)]
pub(crate) struct ShapeMemo<'a> {
    /// Op name → index into `recent`.
    by_name: FxMap<&'a str, u32>,
    /// Per name, per shape list (`DIMS`, `TYPES`, `STRIDES`, `CONCRETE`), the last
    /// `RECENT` distinct texts, the next to replace first.
    recent: Vec<[([&'a str; RECENT], u8); 4]>,
    /// Per collective argument key, the last raw text read and its value: a trace
    /// repeats the same group, type and sizes on every collective ([`ShapeMemo::comm`]).
    comm: [Option<(&'a str, CommValue)>; CommKey::COUNT],
    /// Event categories read as text borrowed from the buffer, with what they decide
    /// ([`ShapeMemo::cat`]): a trace has a handful, on every event.
    cats: Vec<Cat<'a>>,
    /// Where the values of a skipped event start and end, while [`Scan::skip_rest`]
    /// records them (reused from event to event).
    spans: Vec<usize>,
    /// Event names read as text borrowed from the buffer, by the bytes after their
    /// opening quote ([`name_slot`]; empty until the first is remembered): a step
    /// repeats a few hundred names on every event ([`Scan::name`]).
    names: Vec<&'a str>,
    /// Names found in `names` (for the tests).
    #[cfg(test)]
    name_hits: usize,
}

/// An event category remembered by [`ShapeMemo`].
struct Cat<'a> {
    text: &'a str,
    /// The first bytes after its opening quote (the text, and the closing quote when
    /// they fit), as a little-endian word; `mask` keeps those bytes of a word.
    head: u64,
    mask: u64,
    rule: CatRule,
    /// Per place its events are skipped at ([`Skipped`]), the bytes around the values
    /// of the last event skipped there ([`Scan::skip_rest`]).
    skips: [Option<Vec<&'a [u8]>>; 2],
}

/// Where an event is skipped: right after its category, or after its name (a category
/// kept by name).
#[derive(Clone, Copy)]
enum Skipped {
    AtCat = 0,
    AtName = 1,
}

/// What an event's category decides before the rest of the event is read.
#[derive(Clone, Copy)]
struct CatRule {
    /// The rest of the event is skipped ([`skippable`]).
    skip: bool,
    /// Events of the category are kept by name ([`keep_named`]).
    by_name: bool,
}

impl CatRule {
    fn of(cat: &str) -> CatRule {
        CatRule { skip: skippable(cat), by_name: keep_named(cat, None).is_some() }
    }
}

/// A category as [`Scan::cat`] read it.
struct ReadCat<'a> {
    text: Option<Cow<'a, str>>,
    /// What it decides, when it has a text.
    rule: Option<CatRule>,
    /// Its index in the memo, when it is remembered.
    at: Option<usize>,
}

/// Categories remembered at most (a trace has about ten; the memo starts over beyond).
const MEMO_CATS: usize = 16;

/// Distinct texts remembered per op name and shape list: a convolutional network calls
/// one op name with the shapes of each of its stages (four missed 12% of the lists of a
/// 27.9 MB ResNet training trace, eight 0.7%).
const RECENT: usize = 8;
/// Op names remembered at most (about 570 bytes each with their texts: 9 MB per parsing
/// thread for a trace with this many distinct op names).
const MEMO_NAMES: usize = 1 << 14;
/// Event names remembered at most, one per slot ([`name_slot`]).
const NAME_SLOTS: usize = 1 << 10;

/// The slot of [`ShapeMemo`]'s names for a string whose opening quote precedes `rest`:
/// a hash of its first 32 bytes (the name's, and for a short name the bytes after it,
/// which events of one kind write alike). `None` within 32 bytes of the end.
#[inline]
fn name_slot(rest: &[u8]) -> Option<usize> {
    let w = rest.first_chunk::<32>()?;
    let mut h = 0u64;
    for (i, c) in w.chunks_exact(8).enumerate() {
        let c = u64::from_le_bytes(c.try_into().unwrap_or_default());
        h ^= c.rotate_left(17 * i as u32);
    }
    // The top bits of a multiplicative hash.
    Some((h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - NAME_SLOTS.trailing_zeros())) as usize)
}

impl<'a> ShapeMemo<'a> {
    /// Forgets every text (their bytes are about to be released).
    pub(crate) fn clear(&mut self) {
        self.by_name.clear();
        self.recent.clear();
        self.comm = Default::default();
        self.cats.clear();
        self.names.fill("");
    }

    /// The category whose quoted text `rest` starts with, when remembered. A text read
    /// as it lies in the buffer (no escapes: no quote or backslash inside, and valid)
    /// is, when the same bytes and a closing quote follow a quote, that string.
    /// Its index is returned with it.
    #[inline]
    fn cat(&self, rest: &[u8]) -> Option<(usize, &'a str, CatRule)> {
        if rest.first() != Some(&b'"') {
            return None;
        }
        let w = u64::from_le_bytes(*rest.get(1..)?.first_chunk::<8>()?);
        for (i, c) in self.cats.iter().enumerate() {
            if w & c.mask == c.head {
                let n = c.text.len();
                // Texts of up to 7 bytes are matched, quote included, by the word.
                if n < 8
                    || (rest.get(9..).is_some_and(|r| {
                        has_prefix(r, c.text.as_bytes().get(8..).unwrap_or_default())
                    }) && rest.get(n + 1) == Some(&b'"'))
                {
                    return Some((i, c.text, c.rule));
                }
            }
        }
        None
    }

    /// Remembers `text`, a category just read as text borrowed from the buffer; its
    /// index.
    fn remember_cat(&mut self, text: &'a str, rule: CatRule) -> usize {
        if self.cats.len() >= MEMO_CATS {
            self.cats.clear();
        }
        // The text and its closing quote, up to a word.
        let mut head = [0u8; 8];
        let n = text.len().min(8);
        head[..n].copy_from_slice(&text.as_bytes()[..n]);
        if n < 8 {
            head[n] = b'"';
        }
        let kept = (text.len() + 1).min(8);
        let mask = if kept == 8 { u64::MAX } else { (1u64 << (8 * kept)) - 1 };
        let head = u64::from_le_bytes(head);
        self.cats.push(Cat { text, head, mask, rule, skips: [None, None] });
        self.cats.len() - 1
    }

    /// The value of collective argument `key` in `raw`: the last one read for the key
    /// when `raw` is the same text (the value is a function of the text), else read.
    fn comm(&mut self, key: CommKey, raw: &'a str) -> CommValue {
        let slot = &mut self.comm[key as usize];
        if let Some((last, v)) = slot {
            if *last == raw {
                return v.clone();
            }
        }
        let v = comm_value(key, raw);
        *slot = Some((raw, v.clone()));
        v
    }

    /// The index of `name`'s texts, made when new (the memo starts over at
    /// `MEMO_NAMES` names: a trace whose ops all have new names gains nothing from it).
    fn index(&mut self, name: &'a str) -> usize {
        if self.recent.len() >= MEMO_NAMES && !self.by_name.contains_key(name) {
            self.clear();
        }
        let next = self.recent.len();
        let i = *self.by_name.entry(name).or_insert_with(|| u32::try_from(next).unwrap_or(0));
        if i as usize == next {
            self.recent.push([([""; RECENT], 0); 4]);
        }
        i as usize
    }
}

// The outer `Option` of every reader is "give up, serde parses the event"; the inner one
// of `text`, `id`, `args` and `dim3` is the lenient visitors' absent value.
#[allow(clippy::option_option)]
impl<'a> Scan<'a, '_> {
    #[inline]
    fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.p) {
            // One comparison for the usual byte: whitespace is at most `' '`.
            if c > b' ' || !matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
                break;
            }
            self.p += 1;
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.p).copied()
    }

    /// Skips whitespace and consumes `c`.
    #[inline]
    fn expect(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.peek()? == c).then(|| self.p += 1)
    }

    /// A string whose opening quote is at `p`; leaves `p` after the closing quote.
    /// Control characters and malformed escapes give up, as serde fails on them.
    #[inline]
    fn string(&mut self) -> Option<StrSpan> {
        self.p += 1;
        let start = self.p;
        let (mut escaped, mut high) = (false, 0u64);
        loop {
            // Eight bytes at a time up to the first special byte.
            while let Some(chunk) = self.b.get(self.p..self.p + 8) {
                let w = u64::from_le_bytes(chunk.try_into().ok()?);
                let m = specials(w);
                if m == 0 {
                    high |= w & HIGH;
                    self.p += 8;
                } else {
                    let first = m.trailing_zeros();
                    // High bits of the bytes before the special one.
                    high |= w & HIGH & ((1u64 << first) - 1);
                    self.p += (first / 8) as usize;
                    break;
                }
            }
            let c = self.peek()?;
            match c {
                b'"' => {
                    let end = self.p;
                    self.p += 1;
                    return Some(StrSpan { start, end, escaped, non_ascii: high != 0 });
                }
                b'\\' => {
                    escaped = true;
                    match *self.b.get(self.p + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.p += 2,
                        b'u' => {
                            let hex = self.b.get(self.p + 2..self.p + 6)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            self.p += 6;
                        }
                        _ => return None,
                    }
                }
                0..=0x1f => return None,
                _ => {
                    // The tail of the input (fewer than 8 bytes left).
                    high |= u64::from(c & 0x80);
                    self.p += 1;
                }
            }
        }
    }

    /// A number by JSON's grammar (serde's `ignore_integer` and what follows).
    fn number(&mut self) -> Option<()> {
        if let Some(end) = plain_number_end(self.b, self.p) {
            self.p = end;
            return Some(());
        }
        if self.peek()? == b'-' {
            self.p += 1;
        }
        match self.peek()? {
            b'0' => self.p += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.p += 1;
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.p += 1;
            if matches!(self.peek()?, b'+' | b'-') {
                self.p += 1;
            }
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            self.digits();
        }
        // A digit right after a leading `0` is an error to serde.
        (!self.peek().is_some_and(|c| c.is_ascii_digit())).then_some(())
    }

    /// Skips a run of ASCII digits, eight bytes at a time while there are eight.
    #[inline]
    fn digits(&mut self) {
        while let Some(chunk) = self.b.get(self.p..self.p + 8) {
            let Ok(bytes) = <[u8; 8]>::try_from(chunk) else { break };
            let m = non_digits(u64::from_le_bytes(bytes));
            if m != 0 {
                self.p += (m.trailing_zeros() / 8) as usize;
                return;
            }
            self.p += 8;
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.p += 1;
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        (self.b.get(self.p..self.p + word.len())? == word).then(|| self.p += word.len())
    }

    /// `"key"` and `:`, with `p` at the key's opening quote (any key, for skipping).
    fn key_colon(&mut self) -> Option<()> {
        self.ws();
        if self.peek()? != b'"' {
            return None;
        }
        self.string()?;
        self.expect(b':')
    }

    /// Skips one value of any shape (objects and arrays up to 64 deep, deeper gives
    /// up), validating it: a plain number at `p` at once ([`plain_number_end`]; most
    /// values skipped are), anything else by [`Scan::skip_any`].
    #[inline]
    fn skip_value(&mut self) -> Option<()> {
        if let Some(end) = plain_number_end(self.b, self.p) {
            self.p = end;
            return Some(());
        }
        self.skip_any()
    }

    /// [`Scan::skip_value`] for a value of any shape.
    fn skip_any(&mut self) -> Option<()> {
        // One bit per open container: 1 object, 0 array.
        let mut stack = 0u64;
        let mut depth = 0u32;
        'value: loop {
            self.ws();
            match self.peek()? {
                b'"' => {
                    self.string()?;
                }
                b'-' | b'0'..=b'9' => self.number()?,
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                open @ (b'[' | b'{') => {
                    self.p += 1;
                    self.ws();
                    let close = if open == b'[' { b']' } else { b'}' };
                    if self.peek()? == close {
                        self.p += 1;
                    } else {
                        if depth == 64 {
                            return None;
                        }
                        stack = (stack << 1) | u64::from(open == b'{');
                        depth += 1;
                        if open == b'{' {
                            self.key_colon()?;
                        }
                        continue 'value;
                    }
                }
                _ => return None,
            }
            // After a value: close what ends here, or go on to the next element.
            loop {
                if depth == 0 {
                    return Some(());
                }
                self.ws();
                let object = stack & 1 == 1;
                match self.peek()? {
                    b',' => {
                        // With the blank Kineto writes after it, if any.
                        self.p += 1 + usize::from(self.b.get(self.p + 1) == Some(&b' '));
                        if object {
                            self.key_colon()?;
                        }
                        continue 'value;
                    }
                    b'}' if object => {}
                    b']' if !object => {}
                    _ => return None,
                }
                self.p += 1;
                stack >>= 1;
                depth -= 1;
            }
        }
    }

    /// `ts` / `dur` in nanoseconds: a JSON number read in place, anything else through
    /// its raw text ([`micros_or_why`], which gives the same for a number's text).
    fn micros(&mut self) -> Option<Result<i64, BadTime>> {
        let at = self.p;
        if let Some(ns) = self.plain_micros_by_words() {
            return Some(Ok(ns));
        }
        self.micros_slowly(at)
    }

    /// [`Scan::micros`] for what its word-at-a-time reading leaves, from `at`: apart,
    /// so that the usual time's code stays small.
    #[cold]
    #[inline(never)]
    fn micros_slowly(&mut self, at: usize) -> Option<Result<i64, BadTime>> {
        self.p = at;
        if let Some(ns) = self.plain_micros_by_bytes() {
            return Some(Ok(ns));
        }
        self.p = at;
        if matches!(self.peek()?, b'-' | b'0'..=b'9') {
            self.number()?;
            let t = &self.b[at..self.p];
            return Some(decimal_us_to_ns(t).map_err(|()| why_not_micros(t)));
        }
        Some(micros_or_why(self.raw()?))
    }

    /// [`Scan::plain_micros_by_words`], else [`Scan::plain_micros_by_bytes`] (which
    /// [`Scan::micros`] calls apart, the second in its cold path).
    #[cfg(test)]
    fn plain_micros(&mut self) -> Option<i64> {
        let first = self.p;
        if let Some(ns) = self.plain_micros_by_words() {
            return Some(ns);
        }
        self.p = first;
        self.plain_micros_by_bytes()
    }

    /// The usual `ts` / `dur`, read in one pass: up to 15 integer digits (no leading
    /// zero but a lone one) and up to 3 decimals, followed by none of `0-9 . e E`: its
    /// nanoseconds, exactly what [`decimal_us_to_ns`] gives for the text. `None` for
    /// anything else (a sign, a 4th decimal, an exponent), `p` then being anywhere.
    /// The digits are read a word at a time ([`digit_run`]); `None` also where the
    /// words run past the buffer ([`Scan::plain_micros_by_bytes`] then reads them).
    #[inline]
    fn plain_micros_by_words(&mut self) -> Option<i64> {
        let (int, n) = digit_run(self.b, self.p)?;
        if n == 0 || n > 15 || (n > 1 && self.b[self.p] == b'0') {
            return None;
        }
        self.p += n;
        let mut frac = 0;
        if self.peek() == Some(b'.') {
            let (f, k) = digit_run(self.b, self.p + 1)?;
            frac = match k {
                1 => f * 100,
                2 => f * 10,
                3 => f,
                _ => return None,
            };
            self.p += 1 + k;
        }
        // The byte after the digits is not a digit (`digit_run` stops at one).
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        // At most 15 digits: `int * 1000` stays far inside `i64`.
        i64::try_from(int * 1000 + frac).ok()
    }

    /// [`Scan::plain_micros_by_words`] a byte at a time.
    fn plain_micros_by_bytes(&mut self) -> Option<i64> {
        let first = self.p;
        let mut int: i64 = 0;
        while let Some(c) = self.peek().filter(u8::is_ascii_digit) {
            if self.p - first == 15 {
                return None;
            }
            int = int * 10 + i64::from(c - b'0');
            self.p += 1;
        }
        let n = self.p - first;
        if n == 0 || (n > 1 && self.b[first] == b'0') {
            return None;
        }
        let mut frac: i64 = 0;
        if self.peek() == Some(b'.') {
            self.p += 1;
            let decimals = self.p;
            while let Some(c) = self.peek().filter(u8::is_ascii_digit) {
                if self.p - decimals == 3 {
                    return None;
                }
                frac = frac * 10 + i64::from(c - b'0');
                self.p += 1;
            }
            match self.p - decimals {
                0 => return None,
                1 => frac *= 100,
                2 => frac *= 10,
                _ => {}
            }
        }
        if matches!(self.peek(), Some(b'0'..=b'9' | b'.' | b'e' | b'E')) {
            return None;
        }
        // At most 15 digits: `int * 1000` stays far inside `i64`.
        Some(int * 1000 + frac)
    }

    /// A value's raw JSON text (serde's `&RawValue`: valid UTF-8).
    fn raw(&mut self) -> Option<&'a str> {
        let start = self.p;
        self.skip_value()?;
        self.valid.str(self.b, start, self.p)
    }

    /// The value at `p` through serde (the lenient visitors' rules for anything the
    /// scanner does not read itself).
    fn serde<T: Deserialize<'a>>(&mut self) -> Option<T> {
        let mut de = serde_json::Deserializer::from_slice(&self.b[self.p..]);
        let v = T::deserialize(&mut de).ok()?;
        self.p += de.into_iter::<IgnoredAny>().byte_offset();
        Some(v)
    }

    /// A string kept as text: borrowed when plain ASCII; anything else through serde.
    fn text(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.peek()? == b'"' {
            let at = self.p;
            let s = self.string()?;
            if !s.escaped && !s.non_ascii {
                return Some(Some(Cow::Borrowed(self.valid.str(self.b, s.start, s.end)?)));
            }
            self.p = at;
        }
        Some(self.serde::<Lenient<Str<'a>>>()?.0.map(|s| s.0))
    }

    /// `name`: a remembered name when the bytes at `p` are its quote, its text and a
    /// quote, else [`Scan::text`] (remembered when borrowed from the buffer). A text
    /// borrowed from the buffer has no quote or backslash inside and is valid: the same
    /// bytes between quotes elsewhere are the same string, as valid.
    #[inline]
    fn name(&mut self) -> Option<Option<Cow<'a, str>>> {
        let slot = match self.b.get(self.p..) {
            Some([b'"', rest @ ..]) => name_slot(rest),
            _ => None,
        };
        if let Some(&t) = slot.and_then(|s| self.memo.names.get(s)) {
            let rest = self.b.get(self.p + 1..)?;
            if has_prefix(rest, t.as_bytes()) && rest.get(t.len()) == Some(&b'"') {
                self.p += t.len() + 2;
                #[cfg(test)]
                {
                    self.memo.name_hits += 1;
                }
                return Some(Some(Cow::Borrowed(t)));
            }
        }
        let text = self.text()?;
        if let (Some(s), Some(Cow::Borrowed(t))) = (slot, &text) {
            if self.memo.names.is_empty() {
                self.memo.names = vec![""; NAME_SLOTS];
            }
            if let Some(e) = self.memo.names.get_mut(s) {
                *e = t;
            }
        }
        Some(text)
    }

    /// `cat`: a remembered category by its bytes ([`ShapeMemo::cat`]), else the text
    /// ([`Scan::text`]).
    #[inline]
    fn cat(&mut self) -> Option<ReadCat<'a>> {
        if let Some((i, text, rule)) = self.b.get(self.p..).and_then(|rest| self.memo.cat(rest)) {
            self.p += text.len() + 2;
            return Some(ReadCat {
                text: Some(Cow::Borrowed(text)),
                rule: Some(rule),
                at: Some(i),
            });
        }
        let text = self.text()?;
        let rule = text.as_deref().map(CatRule::of);
        let mut at = None;
        if let (Some(Cow::Borrowed(t)), Some(rule)) = (&text, rule) {
            at = Some(self.memo.remember_cat(t, rule));
        }
        Some(ReadCat { text, rule, at })
    }

    /// An integer id: plain integers of up to 18 digits here, the rest through serde.
    fn id(&mut self) -> Option<Option<i64>> {
        let at = self.p;
        let neg = self.peek()? == b'-';
        if neg {
            self.p += 1;
        }
        let first = self.p;
        // Up to 16 digits a word at a time (`digit_run`), more byte by byte.
        if let Some((v, n)) = digit_run(self.b, first) {
            let plain = n > 0
                && !(n > 1 && self.b[first] == b'0')
                && !matches!(self.b.get(first + n), Some(b'.' | b'e' | b'E'));
            if plain {
                self.p = first + n;
                // At most 16 digits: within `i64`.
                let v = i64::try_from(v).ok()?;
                return Some(Some(if neg { -v } else { v }));
            }
        }
        self.id_by_bytes(at, neg)
    }

    /// [`Scan::id`] a byte at a time from `at` (its first byte; `neg`: a `-`), then
    /// through serde: apart, so that the usual id's code stays small.
    #[cold]
    #[inline(never)]
    fn id_by_bytes(&mut self, at: usize, neg: bool) -> Option<Option<i64>> {
        let first = at + usize::from(neg);
        self.p = first;
        let mut v: i64 = 0;
        // At most 18 digits: always within `i64`.
        while let Some(c) = self.peek().filter(u8::is_ascii_digit) {
            if self.p - first == 18 {
                break;
            }
            v = v * 10 + i64::from(c - b'0');
            self.p += 1;
        }
        let n = self.p - first;
        let plain = n > 0
            && !(n > 1 && self.b[first] == b'0')
            && !matches!(self.peek(), Some(b'.' | b'e' | b'E' | b'0'..=b'9'));
        if plain {
            return Some(Some(if neg { -v } else { v }));
        }
        self.p = at;
        Some(self.serde::<Lenient<Id>>()?.0.map(|i| i.0))
    }

    /// A key at `p` (after whitespace): its bytes, or `None` (serde) when escaped.
    fn key(&mut self) -> Option<(&'a [u8], bool)> {
        if self.peek()? != b'"' {
            return None;
        }
        let s = self.string()?;
        if s.escaped {
            return None;
        }
        self.colon()?;
        Some((&self.b[s.start..s.end], s.non_ascii))
    }

    /// An event key at `p` (after whitespace) up to the whitespace after its `:`: the
    /// keys Kineto writes matched quotes included in one 8-byte load, any other through
    /// [`Scan::key`].
    #[inline]
    fn event_key(&mut self) -> Option<EventKey> {
        if let Some(key) = self.known_event_key()? {
            return Some(key);
        }
        let (key, _) = self.key()?;
        Some(EventKey::of(key))
    }

    /// One of the keys Kineto writes, matched quotes included in one 8-byte load, up to
    /// the whitespace after its `:`; `Some(None)` with nothing read for any other key.
    // Inlined into the event loop, as it was before it became a `match`.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn known_event_key(&mut self) -> Option<Option<EventKey>> {
        /// `s` as the little-endian `u64` of its bytes.
        const fn word(s: &[u8]) -> u64 {
            let mut w = 0u64;
            let mut i = 0;
            while i < s.len() {
                w |= (s[i] as u64) << (8 * i);
                i += 1;
            }
            w
        }
        const LOW: [u64; 3] = [(1 << 32) - 1, (1 << 40) - 1, (1 << 48) - 1];
        if let Some(chunk) = self.b.get(self.p..self.p + 8) {
            let w = u64::from_le_bytes(chunk.try_into().ok()?);
            // The one candidate its first two letters leave; a whole quoted key matches
            // it (nothing shorter or longer matches both quotes).
            let (pattern, len, key) = match [(w >> 8) as u8, (w >> 16) as u8] {
                [b'p', b'h'] => (word(b"\"ph\""), 4, EventKey::Ph),
                [b'p', _] => (word(b"\"pid\""), 5, EventKey::Pid),
                [b't', b's'] => (word(b"\"ts\""), 4, EventKey::Ts),
                [b't', _] => (word(b"\"tid\""), 5, EventKey::Tid),
                [b'i', _] => (word(b"\"id\""), 4, EventKey::Id),
                [b'c', _] => (word(b"\"cat\""), 5, EventKey::Cat),
                [b'd', _] => (word(b"\"dur\""), 5, EventKey::Dur),
                [b'n', _] => (word(b"\"name\""), 6, EventKey::Name),
                [b'a', _] => (word(b"\"args\""), 6, EventKey::Args),
                _ => return Some(None),
            };
            if w & LOW[len - 4] == pattern {
                self.p += len;
                self.colon()?;
                return Some(Some(key));
            }
        }
        Some(None)
    }

    /// An argument key at `p` (after whitespace) up to the whitespace after its `:`.
    /// The keys Kineto writes are recognized from their bytes and the closing quote
    /// right after them, without scanning the string: a name of plain ASCII letters,
    /// digits, blanks and punctuation other than `"` and `\`, followed by `"`, is the
    /// whole string. Any other key goes through [`Scan::key`] and [`ArgKey::of`].
    #[inline]
    fn arg_key(&mut self) -> Option<ArgKey> {
        if self.peek()? == b'"' {
            if let Some((n, key)) = self.b.get(self.p + 1..).and_then(known_arg_key) {
                self.p += n + 2;
                self.colon()?;
                return Some(key);
            }
        }
        let (key, _) = self.key()?;
        Some(ArgKey::of(key))
    }

    /// `:` and the whitespace around it, with `p` after a key: Kineto's `": "` in one
    /// two-byte compare.
    #[inline]
    fn colon(&mut self) -> Option<()> {
        if self.b.get(self.p..self.p + 2) == Some(b": ") {
            self.p += 2;
        } else {
            self.expect(b':')?;
        }
        self.ws();
        Some(())
    }

    /// After a member: `,` (then whitespace) → `true`, `}` → `false`.
    #[inline]
    fn next_member(&mut self) -> Option<bool> {
        if self.b.get(self.p..self.p + 2) == Some(b", ") {
            // Kineto's separator, in one two-byte compare.
            self.p += 2;
            self.ws();
            return Some(true);
        }
        self.ws();
        match self.peek()? {
            b',' => {
                self.p += 1;
                self.ws();
                Some(true)
            }
            b'}' => {
                self.p += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// The event object at `p` into `ev` (a default event), by the rules of
    /// `event::read_event`.
    fn event(&mut self, ev: &mut Event<'a>) -> Option<()> {
        if self.peek()? != b'{' {
            return None;
        }
        self.p += 1;
        self.ws();
        if self.peek()? == b'}' {
            self.p += 1;
            return Some(());
        }
        let mut by_name = false;
        let mut args_seen = false;
        // The category's index in the memo, when remembered.
        let mut cat_at = None;
        loop {
            match self.event_key()? {
                EventKey::Ph => ev.ph = self.phase()?,
                EventKey::Cat => {
                    let read = self.cat()?;
                    (ev.cat, cat_at) = (read.text, read.at);
                    if let (Some(cat), Some(rule)) = (ev.cat.as_deref(), read.rule) {
                        if rule.skip {
                            return self.skip_rest(ev, cat_at.map(|c| (c, Skipped::AtCat)));
                        }
                        by_name = rule.by_name;
                        if by_name && keep_named(cat, ev.name.as_deref()) == Some(false) {
                            return self.skip_rest(ev, cat_at.map(|c| (c, Skipped::AtCat)));
                        }
                    }
                }
                EventKey::Name => {
                    ev.name = self.name()?;
                    if by_name {
                        let cat = ev.cat.as_deref().unwrap_or_default();
                        if keep_named(cat, ev.name.as_deref()) == Some(false) {
                            return self.skip_rest(ev, cat_at.map(|c| (c, Skipped::AtName)));
                        }
                    }
                }
                EventKey::Pid => ev.pid = self.id()?,
                EventKey::Tid => ev.tid = self.id()?,
                EventKey::Ts => ev.ts_ns = Some(self.micros()?),
                EventKey::Dur => ev.dur_ns = Some(self.micros()?),
                EventKey::Id => ev.id = self.id()?,
                EventKey::Args => {
                    let name = match &ev.name {
                        Some(Cow::Borrowed(n)) => Some(*n),
                        _ => None,
                    };
                    self.args(&mut ev.args, args_seen, name)?;
                    args_seen = true;
                }
                EventKey::Other => self.skip_value()?,
            }
            if !self.next_member()? {
                return Some(());
            }
        }
    }

    /// `ph`: a plain one-letter string here, anything else through serde.
    fn phase(&mut self) -> Option<Phase> {
        // One printable ASCII letter between quotes (what every writer puts there): no
        // string scan.
        if let Some(&[b'"', c, b'"']) = self.b.get(self.p..self.p + 3) {
            if c.is_ascii_graphic() && c != b'"' && c != b'\\' {
                self.p += 3;
                return Some(PhaseValue::of(&[c]));
            }
        }
        if self.peek()? == b'"' {
            let at = self.p;
            let s = self.string()?;
            if !s.escaped && !s.non_ascii {
                return Some(PhaseValue::of(&self.b[s.start..s.end]));
            }
            self.p = at;
        }
        Some(self.serde::<Lenient<PhaseValue>>()?.0.unwrap_or_default().0)
    }

    /// The members after one the event is skipped at (`event::skip_rest`): keys are read
    /// as text there, so theirs must be UTF-8.
    /// The keys Kineto writes are recognized by their bytes (plain ASCII), `args`
    /// members' too ([`Scan::skip_args`]).
    ///
    /// `at`: the category's index in the memo and where the event is skipped. Events
    /// skipped at the same place of the same category are mostly written alike: the
    /// bytes between their values (`, "pid": `, `, "args": {"Python id": `, `}}`) are
    /// remembered from the last one, and an event whose bytes there are the same is
    /// skipped by comparing them and skipping its values alone ([`Scan::follow`]).
    /// Bytes the scanner accepted between values, at the same place of the same
    /// grammar, are accepted again, and the values are checked as they are.
    fn skip_rest(&mut self, ev: &mut Event<'a>, at: Option<(usize, Skipped)>) -> Option<()> {
        ev.ph = Phase::Other;
        let Some((c, place)) = at else { return self.skip_members(false) };
        let start = self.p;
        let known = self.memo.cats.get_mut(c).and_then(|c| c.skips[place as usize].take());
        let between = match known {
            Some(between) if self.follow(&between).is_some() => between,
            _ => {
                self.p = start;
                self.skip_recorded(start)?
            }
        };
        if let Some(c) = self.memo.cats.get_mut(c) {
            c.skips[place as usize] = Some(between);
        }
        Some(())
    }

    /// [`Scan::skip_members`] from `start`, recording: the bytes around its values.
    fn skip_recorded(&mut self, start: usize) -> Option<Vec<&'a [u8]>> {
        self.memo.spans.clear();
        self.skip_members(true)?;
        let mut between = Vec::with_capacity(self.memo.spans.len() / 2 + 1);
        let mut from = start;
        for pair in self.memo.spans.chunks_exact(2) {
            between.push(&self.b[from..pair[0]]);
            from = pair[1];
        }
        between.push(&self.b[from..self.p]);
        Some(between)
    }

    /// An event skipped as the one `between` was taken from: those bytes, with one
    /// value after each but the last. `None` where the bytes differ (or a value fails).
    fn follow(&mut self, between: &[&'a [u8]]) -> Option<()> {
        let (last, before) = between.split_last()?;
        for bytes in before {
            if !has_prefix(self.b.get(self.p..)?, bytes) {
                return None;
            }
            self.p += bytes.len();
            self.skip_value()?;
        }
        if !has_prefix(self.b.get(self.p..)?, last) {
            return None;
        }
        self.p += last.len();
        Some(())
    }

    /// The members of [`Scan::skip_rest`], by the grammar; `record`: where each value
    /// starts and ends, into the memo's `spans`.
    fn skip_members(&mut self, record: bool) -> Option<()> {
        while self.next_member()? {
            match self.known_event_key()? {
                Some(EventKey::Args) if self.peek() == Some(b'{') => self.skip_args(record)?,
                Some(_) => self.skip_member_value(record)?,
                None => {
                    let (key, non_ascii) = self.key()?;
                    if non_ascii {
                        std::str::from_utf8(key).ok()?;
                    }
                    self.skip_member_value(record)?;
                }
            }
        }
        Some(())
    }

    /// [`Scan::skip_value`], its start and end recorded when `record`.
    #[inline]
    fn skip_member_value(&mut self, record: bool) -> Option<()> {
        let start = self.p;
        self.skip_value()?;
        if record {
            self.memo.spans.extend([start, self.p]);
        }
        Some(())
    }

    /// Skips the `args` object at `p` (its `{`) as [`Scan::skip_value`] does, the keys
    /// [`known_arg_key`] knows recognized by their bytes; `record` as in
    /// [`Scan::skip_members`].
    fn skip_args(&mut self, record: bool) -> Option<()> {
        self.p += 1;
        self.ws();
        if self.peek()? == b'}' {
            self.p += 1;
            return Some(());
        }
        loop {
            match self.b.get(self.p + 1..).and_then(known_arg_key) {
                Some((n, _)) if self.peek() == Some(b'"') => {
                    self.p += n + 2;
                    self.colon()?;
                }
                _ => self.key_colon()?,
            }
            self.skip_member_value(record)?;
            if !self.next_member()? {
                return Some(());
            }
        }
    }

    /// `args` into `a`: an object here (replacing what an earlier `args` member set,
    /// when `seen`), anything else through serde (not an object: the event keeps the
    /// args it had).
    /// `name`: the event's name, when read before `args` and borrowed from the buffer
    /// (for [`ShapeMemo`]).
    fn args(&mut self, a: &mut Args<'a>, seen: bool, name: Option<&'a str>) -> Option<()> {
        if self.peek()? != b'{' {
            if let Some(new) = self.serde::<Lenient<Args<'a>>>()?.0 {
                *a = new;
            }
            return Some(());
        }
        if seen {
            *a = Args::default();
        }
        self.p += 1;
        self.ws();
        if self.peek()? == b'}' {
            self.p += 1;
            return Some(());
        }
        // The index of `name`'s texts in the memo, looked up at the first shape list.
        let mut texts = None;
        loop {
            match self.arg_key()? {
                ArgKey::ExternalId => a.external_id = self.id()?,
                ArgKey::Correlation => a.correlation = self.id()?,
                ArgKey::EvIdx => a.ev_idx = self.id()?,
                ArgKey::RecordFunctionId => a.record_function_id = self.id()?,
                ArgKey::SequenceNumber => a.sequence_number = self.id()?,
                ArgKey::Device => a.device = self.id()?,
                ArgKey::Stream => a.stream = self.id()?,
                ArgKey::Grid => a.grid = self.dim3()?,
                ArgKey::Block => a.block = self.dim3()?,
                ArgKey::SharedMemory => {
                    a.shared_memory = self.id()?.and_then(|v| u64::try_from(v).ok());
                }
                ArgKey::Registers => {
                    a.registers_per_thread = self.id()?.and_then(|v| u32::try_from(v).ok());
                }
                ArgKey::Bytes => a.bytes = self.id()?.and_then(|v| u64::try_from(v).ok()),
                ArgKey::InputDims => a.shapes[DIMS] = Some(self.shape(DIMS, name, &mut texts)?),
                ArgKey::InputType => a.shapes[TYPES] = Some(self.shape(TYPES, name, &mut texts)?),
                ArgKey::InputStrides => {
                    a.shapes[STRIDES] = Some(self.shape(STRIDES, name, &mut texts)?);
                }
                ArgKey::ConcreteInputs => {
                    a.shapes[CONCRETE] = Some(self.shape(CONCRETE, name, &mut texts)?);
                }
                ArgKey::WaitOnStream => a.wait_on_stream = self.id()?,
                ArgKey::WaitOnRecord => a.wait_on_record = self.id()?,
                ArgKey::MemBytes => a.mem_bytes = self.id()?,
                ArgKey::Addr => a.addr = self.id()?,
                ArgKey::TotalAllocated => a.total_allocated = self.id()?,
                ArgKey::TotalReserved => a.total_reserved = self.id()?,
                ArgKey::DeviceType => a.device_type = self.id()?,
                ArgKey::DeviceId => a.device_id = self.id()?,
                ArgKey::Comm(key) => {
                    let raw = self.raw()?;
                    let value = self.memo.comm(key, raw);
                    set_comm(a.comm.get_or_insert_with(Box::default), key, value);
                }
                ArgKey::Other => self.skip_value()?,
            }
            if !self.next_member()? {
                return Some(());
            }
        }
    }

    /// Shape list `slot` of an op named `name` as raw text ([`Scan::raw`]): one of the
    /// name's recent texts when the bytes at `p` repeat it ([`ShapeMemo`]), else read
    /// and remembered. `texts` caches the name's index across the lists of one event.
    fn shape(
        &mut self,
        slot: usize,
        name: Option<&'a str>,
        texts: &mut Option<usize>,
    ) -> Option<&'a str> {
        let Some(name) = name else { return self.raw() };
        let i = *texts.get_or_insert_with(|| self.memo.index(name));
        let rest = self.b.get(self.p..)?;
        let seen = self.memo.recent[i][slot].0.iter();
        if let Some(&t) = seen.filter(|t| !t.is_empty()).find(|t| has_prefix(rest, t.as_bytes())) {
            self.p += t.len();
            return Some(t);
        }
        let t = self.raw()?;
        if matches!(t.as_bytes().first(), Some(b'[' | b'{' | b'"')) {
            let (recent, next) = &mut self.memo.recent[i][slot];
            recent[usize::from(*next)] = t;
            *next = (*next + 1) % RECENT as u8;
        }
        Some(t)
    }

    /// `grid` / `block`: `[x, y, z]` of plain integers here, anything else through serde
    /// (`Dim3`'s rules).
    fn dim3(&mut self) -> Option<Option<[u32; 3]>> {
        let at = self.p;
        if let Some(d) = self.plain_dim3() {
            return Some(Some(d));
        }
        self.p = at;
        Some(self.serde::<Lenient<Dim3>>()?.0.map(|d| d.0))
    }

    /// One to three integers that fit `u32`, in brackets; `None` for anything else.
    fn plain_dim3(&mut self) -> Option<[u32; 3]> {
        if self.peek()? != b'[' {
            return None;
        }
        self.p += 1;
        let mut out = [1u32; 3];
        for (i, slot) in out.iter_mut().enumerate() {
            self.ws();
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            *slot = u32::try_from(self.id()??).ok()?;
            self.ws();
            match self.peek()? {
                b',' if i < 2 => self.p += 1,
                b']' => {
                    self.p += 1;
                    return Some(out);
                }
                _ => return None,
            }
        }
        None
    }
}

/// Whether `rest` starts with `name` and a closing quote (`N` fixed: the comparison is
/// a few word loads).
#[inline]
fn quoted<const N: usize>(rest: &[u8], name: &[u8; N]) -> bool {
    rest.first_chunk::<N>() == Some(name) && rest.get(N) == Some(&b'"')
}

/// The argument key [`Scan::arg_key`] recognizes without a scan at the start of `rest`
/// (just after the opening quote), with its length: one of the names of
/// [`super::event::arg_keys`] followed by its closing quote.
#[inline]
fn known_arg_key(rest: &[u8]) -> Option<(usize, ArgKey)> {
    use super::event::{arg_keys, CommKey};
    macro_rules! quoted_arg_key {
        ($($first:literal => [$($name:literal => $key:expr),+ $(,)?]),+ $(,)?) => {
            match *rest.first()? {
                $($first => {
                    $(if quoted(rest, $name) {
                        return Some(($name.len(), $key));
                    })+
                    None
                })+
                _ => None,
            }
        };
    }
    arg_keys!(quoted_arg_key)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The event as serde reads it and as the scanner does (`None`: it gave up).
    fn both(json: &str) -> (Partial, Option<Partial>) {
        let mut slow = Partial::default();
        let mut de = serde_json::Deserializer::from_str(json);
        serde::de::DeserializeSeed::deserialize(
            super::super::event::EventSeed { sink: &mut slow, offset: 0 },
            &mut de,
        )
        .unwrap();
        let b = json.as_bytes();
        let mut fast = Partial::default();
        let end = event(b, 0, 0, Valid::over(b, 0, b.len()), &mut fast);
        if let Some(end) = end {
            assert_eq!(end, json.len(), "{json}");
        }
        // Without a checked stretch (every string validated on its own), and with one
        // that ends inside the event: the same.
        for valid in [Valid::default(), Valid::over(b, 0, b.len() / 2)] {
            let mut other = Partial::default();
            assert_eq!(event(b, 0, 0, valid, &mut other), end, "{json}");
            if end.is_some() {
                assert_eq!(format!("{fast:?}"), format!("{other:?}"), "{json}");
            }
        }
        (slow, end.map(|_| fast))
    }

    fn same(json: &str) {
        let (slow, fast) = both(json);
        let fast = fast.unwrap_or_else(|| panic!("the scanner gave up on {json}"));
        assert_eq!(format!("{slow:?}"), format!("{fast:?}"), "{json}");
    }

    #[test]
    fn common_events_read_as_serde_reads_them() {
        same(
            r#"{"ph": "X", "cat": "cpu_op", "name": "aten::view", "pid": 5617, "tid": 5617,
              "ts": 1414456661888.361, "dur": 3.15, "args": {"External id": 1543,
              "Record function id": 0, "Concrete Inputs": ["", "[1, -1, 1, 1]"],
              "Input type": ["c10::BFloat16", "ScalarList"], "Input Strides": [[1], []],
              "Input Dims": [[768], []], "Ev Idx": 6}}"#,
        );
        same(
            r#"{"ph": "X", "cat": "kernel", "name": "void k<2u>(int*)", "pid": 0, "tid": 7,
              "ts": 1414456661994.53, "dur": 7.264, "args": {"External id": 1551,
              "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 56611,
              "registers per thread": 29, "shared memory": 0, "blocks per SM": 4.0,
              "warps per SM": 64.0, "grid": [264, 2, 1], "block": [512, 1, 1],
              "est. achieved occupancy %": 100}}"#,
        );
        same(r#"{"ph": "X", "cat": "python_function", "name": "<string>(1): <module>", "pid": 1}"#);
        same(
            r#"{"ph": "X", "cat": "python_function", "name": "nn.Module: Linear_0", "pid": 1, "tid": 1, "ts": 5, "dur": 2}"#,
        );
        same(
            r#"{"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "s": "t", "args": {"Total Reserved": 2, "Bytes": -512, "Addr": 94}}"#,
        );
        same(
            r#"{"ph": "s", "id": 56611, "pid": 5617, "tid": 5617, "ts": 1.5, "cat": "ac2g", "name": "ac2g"}"#,
        );
        same(
            r#"{"name": "process_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "python3"}}"#,
        );
        same(
            r#"{"ph":"X","cat":"record_param_comms","name":"record_param_comms","args":{"Collective name":"allreduce","In msg nelems":4096,"dtype":"Float","Process Group Ranks":"[0, 1]"}}"#,
        );
        same("{}");
    }

    #[test]
    fn repeated_shapes_read_from_the_memo_as_serde_reads_them() {
        // Ops whose shape lists repeat, nearly repeat (a prefix, one more element, a
        // number that extends an earlier one) or change, one after another in one
        // buffer: read with one memo, each event is what serde reads.
        let dims = [
            "[[1, 2], [2]]",
            "[[1, 2], [2], []]",
            "[[1, 2]]",
            "[[1, 2], [2]]",
            "[]",
            "7",
            "71",
            "\"[1]\"",
            "\"[1]x\"",
            "\"a\\u0062\"",
            "{\"k\": [1]}",
            "[[1, 2], [2]]",
        ];
        // Five names against twelve lists: every list follows every other under each.
        let names = ["aten::mm", "aten::mm", "aten::v\\u0069ew", "aten::add", "aten::mm"];
        let mut events = Vec::new();
        for (i, d) in dims.iter().cycle().take(60).enumerate() {
            let name = names[i % names.len()];
            let types = if i % 3 == 0 { "[\"float\", \"float\"]" } else { "[\"float\"]" };
            events.push(format!(
                r#"{{"ph": "X", "cat": "cpu_op", "name": "{name}", "pid": 1, "tid": 1, "ts": {i}, "dur": 1, "args": {{"Input Dims": {d}, "Input type": {types}, "Concrete Inputs": {d}}}}}"#
            ));
        }
        let (slow, fast, remembered) = read_with_one_memo(&events);
        assert_eq!(fast.ops.len(), 60);
        assert_eq!(format!("{slow:?}"), format!("{fast:?}"));
        // The memo was used: a bare name's lists are remembered, an escaped name's not.
        assert_eq!(remembered.names, 2);
    }

    /// `events` in one buffer, read by serde one by one and by the scanner with one memo:
    /// both partials, and what the memo held.
    fn read_with_one_memo(events: &[String]) -> (Partial, Partial, Remembered) {
        let text = events.join(",\n");
        let b = text.as_bytes();
        let (mut memo, mut fast) = (ShapeMemo::default(), Partial::default());
        // The buffer stays as it is: ops' argument lists are also found by place.
        fast.texts_fixed(true);
        let mut slow = Partial::default();
        let mut cats = 0;
        let mut p = 0;
        for e in events {
            let end = event_with(b, p, p, Valid::over(b, 0, b.len()), &mut memo, &mut fast);
            assert_eq!(end, Some(p + e.len()), "{e}");
            let mut de = serde_json::Deserializer::from_str(e);
            serde::de::DeserializeSeed::deserialize(
                super::super::event::EventSeed { sink: &mut slow, offset: p },
                &mut de,
            )
            .unwrap();
            cats = cats.max(memo.cats.len());
            p += e.len() + 2;
        }
        fast.texts_fixed(false);
        slow.forget_scratch();
        fast.forget_scratch();
        (slow, fast, Remembered { names: memo.by_name.len(), cats, name_hits: memo.name_hits })
    }

    /// What [`read_with_one_memo`]'s memo held: op names at the end, categories at most,
    /// event names found in it.
    #[derive(Debug, PartialEq)]
    struct Remembered {
        names: usize,
        cats: usize,
        name_hits: usize,
    }

    #[test]
    fn repeated_categories_read_from_the_memo_as_serde_reads_them() {
        // Categories one after another in one buffer: known and unknown ones, of 4 to 17
        // bytes, each beside texts one byte shorter or longer or differing in the last
        // byte, escaped, not ASCII, missing; more than the memo holds.
        let cats = [
            "kernel",
            "kernels",
            "kerne",
            "kernek",
            "cpu_op",
            "cpu_opx",
            "Runtime",
            "Runtimes",
            "Operator",
            "Operato",
            "Operator_",
            "Operatos",
            "python_function",
            "python_functio",
            "python_function2",
            "python_functiom",
            "k\\u0065rnel",
            "k\u{e9}rnel",
            "cpu_instant_event",
            "ac2g",
            "gpu_memcpy",
            "user_annotation",
            "Python function",
            "fwdbwd",
            "cuda_runtime",
            "cuda_driver",
        ];
        let names = ["nn.Module: Linear_0", "aten::mm", "[memory]", "cudaLaunchKernel"];
        let mut events = Vec::new();
        for (i, cat) in cats.iter().cycle().take(3 * cats.len() + 7).enumerate() {
            let name = names[i % names.len()];
            let ph = ["X", "i", "s"][i % 3];
            // No category in every eleventh event, a `null` one in every thirteenth.
            let cat = match i {
                _ if i % 11 == 0 => String::new(),
                _ if i % 13 == 0 => r#""cat": null, "#.to_string(),
                _ => format!(r#""cat": "{cat}", "#),
            };
            let rest = format!(
                r#""pid": 1, "tid": 1, "ts": {i}, "dur": 1, "id": 3, "args": {{"External id": {i}, "Bytes": 8, "correlation": {i}}}"#
            );
            // The name before the category in every fifth event.
            events.push(if i % 5 == 0 {
                format!(r#"{{"ph": "{ph}", "name": "{name}", {cat}{rest}}}"#)
            } else {
                format!(r#"{{"ph": "{ph}", {cat}"name": "{name}", {rest}}}"#)
            });
        }
        let (slow, fast, remembered) = read_with_one_memo(&events);
        assert_eq!(format!("{slow:?}"), format!("{fast:?}"));
        // Ops, runtime calls, kernels, flows, annotations, modules and memory events
        // were kept (not only skipped).
        let kept = fast.lens();
        assert!([0, 1, 2, 3, 5, 7, 8].iter().all(|&k| kept[k] > 0), "{kept:?}");
        // The memo filled up (and started over).
        assert_eq!(remembered.cats, MEMO_CATS);
        // A remembered category's bytes behind something other than a quote are not it.
        let first = r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7}"#;
        for bad in [
            r#"{"ph": "X", "cat": xkernel", "name": "k", "pid": 0, "tid": 7}"#,
            r#"{"ph": "X", "cat": 1kernel", "name": "k", "pid": 0, "tid": 7}"#,
        ] {
            assert_eq!(after(first, bad).0, None, "{bad}");
        }
    }

    /// Collectives one after another whose arguments repeat, change, change type (a
    /// number written as a string, a list as an array) or go missing: read with one
    /// memo, each event's arguments are what serde reads.
    #[test]
    fn repeated_collective_arguments_read_from_the_memo_as_serde_reads_them() {
        let args = [
            r#""Collective name": "allreduce", "In msg nelems": 4096, "Group size": 8, "dtype": "Float", "Process Group Ranks": "[0, 1]", "Seq": 1"#,
            r#""Collective name": "allreduce", "In msg nelems": 8192, "Group size": 8, "dtype": "Float", "Process Group Ranks": "[0, 1]", "Seq": 2"#,
            r#""Collective name": "allreduce", "In msg nelems": "4096", "Group size": 8.0, "dtype": "BFloat16", "Process Group Ranks": [0, 1], "Seq": " 3 ""#,
            r#""Collective name": "all\u0072educe", "In msg nelems": 4096, "Group size": 8, "dtype": "Float", "Process Group Ranks": "[0, 1]", "Seq": 1"#,
            r#""Collective name": null, "In msg nelems": -1, "Group size": 4294967296, "dtype": 7, "Seq": "x""#,
            r#""Collective name": "allreduce", "In msg nelems": 4096, "Group size": 8, "dtype": "Float", "Process Group Ranks": "[0, 1]", "Seq": 1"#,
        ];
        let events: Vec<String> = args
            .iter()
            .cycle()
            .take(18)
            .enumerate()
            .map(|(i, a)| {
                format!(
                    r#"{{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 7, "ts": {i}, "dur": 1, "args": {{"correlation": {i}, {a}}}}}"#
                )
            })
            .collect();
        let (slow, fast, _) = read_with_one_memo(&events);
        assert_eq!(fast.gpu.len(), 18);
        assert!(fast.gpu.iter().all(|g| g.comm.is_some()));
        assert_eq!(format!("{slow:?}"), format!("{fast:?}"));
        let first = fast.gpu[0].comm.as_deref().unwrap();
        assert_eq!((first.in_nelems, first.group_size, first.seq), (Some(4096), Some(8), Some(1)));
        let odd = fast.gpu[4].comm.as_deref().unwrap();
        assert_eq!((odd.collective.as_deref(), odd.in_nelems, odd.group_size), (None, None, None));
    }

    #[test]
    fn the_shape_memo_starts_over_when_full() {
        let names: Vec<String> = (0..=MEMO_NAMES).map(|i| format!("op{i}")).collect();
        let mut memo = ShapeMemo::default();
        for (i, n) in names[..MEMO_NAMES].iter().enumerate() {
            assert_eq!(memo.index(n), i);
        }
        // A known name keeps its texts; a new one while full starts the memo over.
        assert_eq!(memo.index(&names[7]), 7);
        assert_eq!(memo.index(&names[MEMO_NAMES]), 0);
        assert_eq!((memo.by_name.len(), memo.recent.len()), (1, 1));
    }

    #[test]
    fn skipped_events_are_validated_as_serde_validates_them() {
        // Python frames that are not modules are skipped after their name: the rest is
        // still checked, `args` keys recognized by their bytes or scanned.
        let head =
            r#"{"ph": "X", "cat": "python_function", "name": "f.py(1): g", "pid": 1, "tid": 1"#;
        // The first is also read first, with one memo, before each of the others: they
        // are then read after an event skipped at the same place (`Scan::follow`).
        let first = format!(
            r#"{head}, "ts": 1, "dur": 2, "args": {{"Python parent id": null, "Python id": 2, "finished": true, "Ev Idx": 3}}}}"#
        );
        for rest in [
            r#", "ts": 1, "dur": 2, "args": {"Python parent id": null, "Python id": 2, "finished": true, "Ev Idx": 3}}"#,
            r#", "ts": 17.25, "dur": 0, "args": {"Python parent id": {"a": [1, "b"]}, "Python id": "x", "finished": true, "Ev Idx": -3}}"#,
            r#", "ts": 1, "dur": 2, "args": {"Python parent id": null, "Python id": 2, "finished": true, "Ev Idx": 3, "e": 1}}"#,
            r#", "ts": 1, "dur": 2, "args": {"Python parent id": null, "Python id": 2, "finished": false, "Ev Idx": 3}}"#,
            r#", "ts": 1, "dur": 2, "args": {"Python parent id": null, "Python id": 2, "finished": true, "Ev Idx": 3} }"#,
            r#", "args": {}, "ts": 1}"#,
            r#", "args": {"Python id": [1, {"x": "y"}], "Other\u0020key": "v", "z": -1.5e3}}"#,
            r#", "args": 5, "dur": 1}"#,
            r#", "ärgs": {"Python id": 1}}"#,
            "}",
        ] {
            let json = format!("{head}{rest}");
            same(&json);
            let (end, fast) = after(&first, &json);
            assert_eq!(end, Some(json.len()), "{json}");
            let (slow, _) = both(&json);
            assert_eq!(format!("{slow:?}"), format!("{fast:?}"), "{json}");
        }
        for bad in [
            r#", "args": {"Python id": 1,}}"#,
            r#", "args": {"Python id" 1}}"#,
            r#", "args": {"Python id": 01}}"#,
            r#", "args": {Python id: 1}}"#,
            r#", "args": {"Python id": 1}"#,
            r#", "args": {"Python id": "a\x"}}"#,
            // The same bytes as the first event's around values that are not JSON.
            r#", "ts": 01, "dur": 2, "args": {"Python parent id": null, "Python id": 2, "finished": true, "Ev Idx": 3}}"#,
            r#", "ts": 1, "dur": 2, "args": {"Python parent id": nul, "Python id": 2, "finished": true, "Ev Idx": 3}}"#,
            ", \"ts\": 1, \"dur\": 2, \"args\": {\"Python parent id\": \"a\u{1}\", \"Python id\": 2, \"finished\": true, \"Ev Idx\": 3}}",
            r#", "ts": 1, "dur": 2, "args": {"Python parent id": null, "Python id": 2, "finished": true, "Ev Idx": 3"#,
            r#", "ts": 1, "dur": 2, "args": {"Python parent id": null, "Python id": 2, "finished": true, "Ev Idx": 3}"#,
        ] {
            let json = format!("{head}{bad}");
            let mut de = serde_json::Deserializer::from_str(&json);
            let mut slow = Partial::default();
            let parsed = serde::de::DeserializeSeed::deserialize(
                super::super::event::EventSeed { sink: &mut slow, offset: 0 },
                &mut de,
            )
            .and_then(|()| de.end());
            assert!(parsed.is_err(), "{json}");
            let b = json.as_bytes();
            let mut fast = Partial::default();
            let end = event(b, 0, 0, Valid::over(b, 0, b.len()), &mut fast);
            assert_eq!(end, None, "{json}");
            let (end, fast) = after(&first, &json);
            assert_eq!((end, fast.events), (None, 0), "{json}");
        }
    }

    /// `second` read by the scanner right after `first`, in one buffer with one memo:
    /// where it ends (relative to its start) and what it pushed.
    fn after(first: &str, second: &str) -> (Option<usize>, Partial) {
        let text = format!("{first},\n{second}");
        let b = text.as_bytes();
        let mut memo = ShapeMemo::default();
        let valid = Valid::over(b, 0, b.len());
        let end = event_with(b, 0, 0, valid, &mut memo, &mut Partial::default());
        assert_eq!(end, Some(first.len()), "{first}");
        let at = first.len() + 2;
        let mut fast = Partial::default();
        let end = event_with(b, at, at, valid, &mut memo, &mut fast);
        (end.map(|e| e - at), fast)
    }

    #[test]
    fn argument_keys_known_by_their_bytes_map_as_their_text_does() {
        use super::super::event::CommKey;
        // Every key the reader names, with what it means, written out by hand (the
        // Kineto and PyTorch names of `output_json.cpp` and `record_param_comms`).
        let keys = [
            ("External id", ArgKey::ExternalId),
            ("external id", ArgKey::ExternalId),
            ("correlation", ArgKey::Correlation),
            ("Ev Idx", ArgKey::EvIdx),
            ("Profiler Event Index", ArgKey::EvIdx),
            ("Record function id", ArgKey::RecordFunctionId),
            ("Sequence number", ArgKey::SequenceNumber),
            ("device", ArgKey::Device),
            ("stream", ArgKey::Stream),
            ("grid", ArgKey::Grid),
            ("block", ArgKey::Block),
            ("shared memory", ArgKey::SharedMemory),
            ("registers per thread", ArgKey::Registers),
            ("bytes", ArgKey::Bytes),
            ("size", ArgKey::Bytes),
            ("Input Dims", ArgKey::InputDims),
            ("Input dims", ArgKey::InputDims),
            ("Input type", ArgKey::InputType),
            ("Input Strides", ArgKey::InputStrides),
            ("Concrete Inputs", ArgKey::ConcreteInputs),
            ("wait_on_stream", ArgKey::WaitOnStream),
            ("wait_on_cuda_event_record_corr_id", ArgKey::WaitOnRecord),
            ("Bytes", ArgKey::MemBytes),
            ("Addr", ArgKey::Addr),
            ("Total Allocated", ArgKey::TotalAllocated),
            ("Total Reserved", ArgKey::TotalReserved),
            ("Device Type", ArgKey::DeviceType),
            ("Device Id", ArgKey::DeviceId),
            ("Collective name", ArgKey::Comm(CommKey::Collective)),
            ("In msg nelems", ArgKey::Comm(CommKey::InNelems)),
            ("Out msg nelems", ArgKey::Comm(CommKey::OutNelems)),
            ("Group size", ArgKey::Comm(CommKey::GroupSize)),
            ("dtype", ArgKey::Comm(CommKey::Dtype)),
            ("Process Group Name", ArgKey::Comm(CommKey::PgName)),
            ("Process Group Description", ArgKey::Comm(CommKey::PgDesc)),
            ("Process Group Ranks", ArgKey::Comm(CommKey::PgRanks)),
            ("In split size", ArgKey::Comm(CommKey::InSplit)),
            ("Out split size", ArgKey::Comm(CommKey::OutSplit)),
            ("Seq", ArgKey::Comm(CommKey::Seq)),
            ("Src Rank", ArgKey::Comm(CommKey::SrcRank)),
            ("Dst Rank", ArgKey::Comm(CommKey::DstRank)),
            ("cid", ArgKey::Other),
            ("cbid", ArgKey::Other),
            ("context", ArgKey::Other),
            ("blocks per SM", ArgKey::Other),
            ("warps per SM", ArgKey::Other),
            ("Python id", ArgKey::Other),
            ("Python parent id", ArgKey::Other),
            ("Python module id", ArgKey::Other),
            ("Fwd thread id", ArgKey::Other),
            ("finished", ArgKey::Other),
            ("kind", ArgKey::Other),
            ("kernel", ArgKey::Other),
            ("queued", ArgKey::Other),
        ];
        for (k, want) in keys {
            assert_eq!(ArgKey::of(k.as_bytes()), want, "{k}");
            let quoted = format!("{k}\": 1");
            assert_eq!(known_arg_key(quoted.as_bytes()), Some((k.len(), want)), "{k}");
            // A longer or shorter key is not this one.
            for near in [format!("{k}x\""), format!("{}\"", &k[..k.len() - 1])] {
                if let Some((n, key)) = known_arg_key(near.as_bytes()) {
                    assert_eq!((n, key), (near.len() - 1, ArgKey::of(&near.as_bytes()[..n])));
                }
            }
        }
        // Anything else is `Other`, and scanned.
        for k in ["est. achieved occupancy %", "Device", "", "External Id"] {
            assert_eq!(ArgKey::of(k.as_bytes()), ArgKey::Other, "{k}");
            assert_eq!(known_arg_key(format!("{k}\"").as_bytes()), None, "{k}");
        }
        // Near misses (a longer or shorter key, a blank) read as serde reads them.
        same(
            r#"{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2,
              "args":{"External idx":5,"External i":6,"Ev Id":3,"device":4,
              "stream ":2,"grid":[1,2,3],"gri":[9],"correlation":11,"correlationx":12,
              "cid":1,"cidx":{"a":[1]},"Seq":"7","Se":1,"Input Dims ":[[2]]}}"#,
        );
        // A key with an escape is serde's, also when it spells a known key.
        for key in [r"devic\u0065", r"Input Dims\n", r"External id\\"] {
            let json = format!(r#"{{"ph":"X","cat":"kernel","name":"k","args":{{"{key}":4}}}}"#);
            let (_, fast) = both(&json);
            assert!(fast.is_none(), "{json}");
        }
        same(
            r#"{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":2,
              "args":{"Input Dims":[[2,3],[3,4]],"Input type":["float","float"],
              "Input Strides":[[3,1],[4,1]],"Concrete Inputs":["",""],"Python id":3,
              "Python parent id":2,"finished":true,"Fwd thread id":0,"Sequence number":9,
              "Record function id":4,"Ev Idx":5,"External id":6}}"#,
        );
    }

    #[test]
    fn unusual_values_go_through_serde_with_the_same_result() {
        same(
            r#"{"ph":"X","cat":7,"name":["x"],"pid":"12","tid":{"a":1},"ts":"1.5","dur":2,
               "args":{"External id":"9","grid":[1,"a"],"block":256,"Input Dims":[[2,3],[[4],[5,6]],null,"x"],
                       "Input type":["float",3,null],"correlation":1.0,"unknown":{"deep":[1,2]}}}"#,
        );
        same(
            r#"{"name":"a\"b","cat":"caf\u00e9","ph":"\u0058","pid":-0,"tid":12345678901234567890}"#,
        );
        same(r#"{"name":"naïve","cat":"kernel","ph":"X","pid":1e2,"tid":-7,"args":null}"#);
        same(r#"{"cat":"python_function","name":"x","ignored":{"k":"ünïcode"}}"#);
        same(
            r#"{"ph":"X","args":{"grid":[1,2,3,4],"block":[0],"Ev Idx":1.5e0,"Sequence number":2.0}}"#,
        );
        same(r#"{"ph":"X","args":{"grid":[],"block":[4294967296,1,1]},"args":{"stream":3}}"#);
        same(r#"{"ph":"X","cat":"cpu_op","name":"n","args":{"Input Dims":"\u00e9"}}"#);
    }

    #[test]
    fn what_serde_refuses_the_scanner_refuses() {
        for bad in [
            r#"{"ph": "X",}"#,
            r#"{"ph" "X"}"#,
            r#"{"ph": "X", "args": {"a": [1,]}}"#,
            r#"{"ph": "X", "args": {"a": 01}}"#,
            r#"{"ph": "X", "args": {"a": 1.}}"#,
            r#"{"ph": "X", "args": {"a": -}}"#,
            r#"{"ph": "X", "args": {"a": 1e}}"#,
            r#"{"ph": "X", "args": {"a": tru}}"#,
            r#"{"ph": "X", "args": {"a": "\x"}}"#,
            r#"{"ph": "X", "args": {"a": "\u12g4"}}"#,
            "{\"ph\": \"X\", \"args\": {\"a\": \"tab\there\"}}",
            r#"{"ph": "X", "args": {1: 2}}"#,
            r#"{"ph": "X", "ts": 1 2}"#,
            r#"{"ph": "X""#,
            r#"{"ph": "X", "args": {"a": [1, 2}}"#,
        ] {
            let mut sink = Partial::default();
            let b = bad.as_bytes();
            assert_eq!(event(b, 0, 0, Valid::over(b, 0, b.len()), &mut sink), None, "{bad}");
            assert_eq!(sink.events, 0);
            let mut de = serde_json::Deserializer::from_str(bad);
            let r = serde::de::DeserializeSeed::deserialize(
                super::super::event::EventSeed { sink: &mut sink, offset: 0 },
                &mut de,
            );
            assert!(r.is_err(), "serde accepts {bad}");
        }
        // Invalid UTF-8 in kept text and raw values.
        for bad in [
            &b"{\"name\": \"\xff\"}"[..],
            b"{\"ts\": \"\xc3\"}",
            b"{\"args\": {\"Input Dims\": [\"\xe2\x82\"]}}",
        ] {
            let mut sink = Partial::default();
            assert_eq!(event(bad, 0, 0, Valid::over(bad, 0, bad.len()), &mut sink), None);
            assert_eq!(event(bad, 0, 0, Valid::default(), &mut sink), None);
        }
    }

    /// Every event of the fixtures with each byte replaced by each of a few bytes that
    /// matter to the grammar: where serde fails the scanner gives up, and where it
    /// succeeds the scanner either gives up or reads the same.
    #[test]
    fn mutated_fixture_events_agree_with_serde() {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/kineto");
        let mut events = Vec::new();
        for rel in
            ["hta_tiny_plain.json", "handmade/nesting_graph.json", "handmade/legacy_2021.json"]
        {
            let v: serde_json::Value =
                serde_json::from_slice(&std::fs::read(root.join(rel)).unwrap()).unwrap();
            for e in v["traceEvents"].as_array().unwrap() {
                events.push(serde_json::to_vec(e).unwrap());
            }
        }
        let mut gave_up = 0;
        let mut checked = 0;
        let mut after_original = 0;
        for ev in &events {
            for i in 0..ev.len() {
                for &c in b"\"\\0 x}],:-.e\x01\xff" {
                    let mut m = ev.clone();
                    m[i] = c;
                    let mut slow = Partial::default();
                    let mut de = serde_json::Deserializer::from_slice(&m);
                    // Where serde's event ends (the caller checks what follows).
                    let serde_end = serde::de::DeserializeSeed::deserialize(
                        super::super::event::EventSeed { sink: &mut slow, offset: 0 },
                        &mut de,
                    )
                    .ok()
                    .map(|()| de.into_iter::<IgnoredAny>().byte_offset());
                    let mut fast = Partial::default();
                    match event(&m, 0, 0, Valid::over(&m, 0, m.len()), &mut fast) {
                        None => gave_up += 1,
                        Some(end) => {
                            let text = String::from_utf8_lossy(&m);
                            assert_eq!(Some(end), serde_end, "{text}");
                            assert_eq!(format!("{slow:?}"), format!("{fast:?}"), "{text}");
                        }
                    }
                    checked += 1;
                    after_original += usize::from(read_after_original(ev, &m, serde_end));
                }
            }
        }
        assert!(checked > 10_000 && gave_up < checked, "{checked} cases, {gave_up} left to serde");
        assert!(
            after_original > checked / 3,
            "{after_original} of {checked} read after theirs ({gave_up} left alone)"
        );
    }

    /// `mutated` read right after `original` with one memo and one sink, as a stretch
    /// reads them: what the memo kept of the original (its category, name, argument
    /// lists, the bytes around a skipped event's values) must not pass the mutated copy
    /// off as it. Whether the scanner read the copy (and it agreed with serde, which
    /// ends it at `serde_end`).
    fn read_after_original(original: &[u8], mutated: &[u8], serde_end: Option<usize>) -> bool {
        let mut both = original.to_vec();
        both.extend_from_slice(b",\n");
        let at = both.len();
        both.extend_from_slice(mutated);
        let valid = Valid::over(&both, 0, both.len());
        let (mut memo, mut fast) = (ShapeMemo::default(), Partial::default());
        fast.texts_fixed(true);
        if event_with(&both, 0, 0, valid, &mut memo, &mut fast) != Some(original.len()) {
            return false;
        }
        let Some(end) = event_with(&both, at, 0, valid, &mut memo, &mut fast) else {
            return false;
        };
        fast.texts_fixed(false);
        let text = String::from_utf8_lossy(mutated);
        assert_eq!(Some(end - at), serde_end, "{text}");
        let mut slow = Partial::default();
        for e in [original, mutated] {
            let mut de = serde_json::Deserializer::from_slice(e);
            serde::de::DeserializeSeed::deserialize(
                super::super::event::EventSeed { sink: &mut slow, offset: 0 },
                &mut de,
            )
            .unwrap();
        }
        // The events and warnings (the launch pool is a set: its order is its own).
        let kept = |p: &Partial| {
            format!(
                "{:?}",
                (&p.ops, &p.runtimes, &p.gpu, &p.flow_starts, &p.flow_ends, &p.annotations),
            ) + &format!("{:?}", (&p.syncs, &p.modules, &p.memory, &p.warnings, p.events))
        };
        assert_eq!(kept(&slow), kept(&fast), "{text}");
        true
    }

    /// The one-pass `ts` reader against the general one, on the text it reads and on
    /// what it leaves (with the byte after the number).
    #[test]
    fn plain_micros_is_decimal_us_to_ns_or_nothing() {
        let mut cases: Vec<String> = [
            "0",
            "0.5",
            "0.0",
            "01",
            "1.",
            "1.2",
            "1.23",
            "1.234",
            "1.2345",
            "999999999999999",
            "999999999999999.999",
            "1000000000000000",
            "1e3",
            "1.5E2",
            "-1",
            "-0.5",
            ".5",
            "00.1",
            "1414456661888.361",
            "2199280223503.288",
            "7.1",
            "12.50",
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect();
        // Every digit count up to 17 with 0 to 4 decimals.
        for int in 1..=17 {
            for dec in 0..=4 {
                let mut t = "9".repeat(int);
                if dec > 0 {
                    t = format!("{t}.{}", "8".repeat(dec));
                }
                cases.push(t);
            }
        }
        let mut read = 0;
        for case in &cases {
            for after in [",", "}", " ", "e", "."] {
                let text = format!("{case}{after}");
                let mut memo = ShapeMemo::default();
                let mut s =
                    Scan { b: text.as_bytes(), p: 0, valid: Valid::default(), memo: &mut memo };
                if let Some(ns) = s.plain_micros() {
                    read += 1;
                    assert_eq!(s.p, case.len(), "{text}");
                    assert_eq!(Ok(ns), decimal_us_to_ns(case.as_bytes()), "{text}");
                    assert!(!matches!(after, "e" | "."), "{text}");
                }
            }
        }
        assert!(read > 100, "{read}");
    }

    /// Ids and times of 1 to 17 digits, with and without decimals or an exponent, parse
    /// as serde parses them (the loops' limits of 15 and 18 digits included).
    #[test]
    fn ids_and_times_of_every_length_read_as_serde_reads_them() {
        for digits in 1..=17usize {
            let int: String = (1..=digits).map(|i| char::from(b'0' + (i % 10) as u8)).collect();
            for frac in ["", ".5", ".25", ".125", ".0625", "e3", ".5e1"] {
                for tail in [",\"x\": 1}", "}"] {
                    let text = format!("{int}{frac}{tail}");
                    let value = &text[..text.len() - tail.len()];
                    let mut s = Scan {
                        b: text.as_bytes(),
                        p: 0,
                        valid: Valid::default(),
                        memo: &mut ShapeMemo::default(),
                    };
                    let got = s.micros().and_then(Result::ok);
                    let want = decimal_us_to_ns(value.as_bytes()).ok();
                    assert_eq!(got, want, "micros {value:?} before {tail:?}");
                    if got.is_some() {
                        assert_eq!(s.p, value.len(), "micros {value:?} ends");
                    }
                    let mut s = Scan {
                        b: text.as_bytes(),
                        p: 0,
                        valid: Valid::default(),
                        memo: &mut ShapeMemo::default(),
                    };
                    let want: Option<i64> = serde_json::from_str::<Lenient<Id>>(value)
                        .ok()
                        .and_then(|l| l.0.map(|i| i.0));
                    assert_eq!(s.id().flatten(), want, "id {value:?} before {tail:?}");
                }
            }
        }
    }

    /// Names one after another in one buffer, each beside names that share its first
    /// 32 bytes, are one byte shorter or longer or differ in the last byte, the same
    /// text escaped or not ASCII, and a name too close to the end to be remembered: with
    /// one memo (names handed back from it), each event is what serde reads.
    #[test]
    fn repeated_names_read_from_the_memo_as_serde_reads_them() {
        let long = "void at::native::vectorized_elementwise_kernel<4, at::native::Add";
        let names = [
            "aten::conv2d".to_string(),
            "aten::conv2d_".to_string(),
            "aten::conv2".to_string(),
            "aten::conv2e".to_string(),
            "aten::conv\\u0032d".to_string(),
            "aten::conv2d\\\"x".to_string(),
            "aten::c\u{f6}nv2d".to_string(),
            String::new(),
            format!("{long}>"),
            format!("{long}>(int)"),
            format!("{long}<float>>"),
            format!("{long}X"),
            "nn.Module: Linear_0".to_string(),
            "nn.Module: Linear_1".to_string(),
            "torch/nn/modules/module.py(1751): _wrapped_call_impl".to_string(),
            "torch/nn/modules/module.py(1762): _call_impl".to_string(),
        ];
        let cats = ["cpu_op", "kernel", "python_function", "cuda_runtime"];
        let mut events = Vec::new();
        for i in 0..3 * names.len() * cats.len() {
            // Every name in every category, three times over.
            let (name, cat) = (&names[i % names.len()], cats[i / names.len() % cats.len()]);
            events.push(format!(
                r#"{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": 1, "tid": 1, "ts": {i}, "dur": 1, "args": {{"External id": {i}, "correlation": {i}, "Input Dims": [[{i}]]}}}}"#
            ));
        }
        // The last name ends within 32 bytes of the buffer's end.
        events.push(r#"{"ph": "X", "cat": "cpu_op", "name": "aten::conv2d"}"#.to_string());
        let (slow, fast, remembered) = read_with_one_memo(&events);
        assert_eq!(format!("{slow:?}"), format!("{fast:?}"));
        let kept = fast.lens();
        // Ops, runtime calls, kernels and modules were kept.
        assert!([0, 1, 2, 7].iter().all(|&k| kept[k] > 0), "{kept:?}");
        // Most names were found in the memo (all but the escaped ones, each name's first
        // event and those sharing their first 32 bytes with the name before them).
        assert!(remembered.name_hits > events.len() / 2, "{remembered:?} of {}", events.len());
    }

    /// `has_prefix` is `starts_with` for needles of 0 to 40 bytes against haystacks
    /// equal to them, differing in one byte, shorter or longer.
    #[test]
    fn prefixes_compared_by_words_are_starts_with() {
        let mut w = 0x2545_f491_4f6c_dd1du64;
        let mut byte = || {
            w = w.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            // Few distinct bytes: random haystacks often share a needle's prefix.
            b"ab\"\\"[(w >> 60) as usize % 4]
        };
        for n in 0..=40usize {
            for _ in 0..200 {
                let needle: Vec<u8> = (0..n).map(|_| byte()).collect();
                let mut hay = needle.clone();
                hay.extend((0..8).map(|_| byte()));
                let cut = usize::from(byte()) % (n + 9);
                let mut hays = vec![hay.clone(), hay[..cut.min(hay.len())].to_vec()];
                for i in 0..n {
                    let mut h = hay.clone();
                    h[i] ^= 1;
                    hays.push(h);
                }
                for h in &hays {
                    assert_eq!(has_prefix(h, &needle), h.starts_with(&needle), "{h:?} {needle:?}");
                }
            }
        }
    }

    /// Phases as the scanner reads them at once (one letter between quotes) and the
    /// others: what serde reads.
    #[test]
    fn phases_read_as_serde_reads_them() {
        for ph in [
            "X", "i", "I", "s", "f", "t", "B", "E", "M", "x", "~", " ", "", "XX", "\\u0058",
            "\u{e9}", "\\\\", "\\\"",
        ] {
            same(&format!(
                r#"{{"ph": "{ph}", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1}}"#
            ));
        }
        // Not strings: a quote alone, a raw control character.
        for bad in [r#"{"ph": """, "cat": "kernel"}"#, "{\"ph\": \"\t\", \"cat\": \"kernel\"}"] {
            let b = bad.as_bytes();
            assert_eq!(
                event(b, 0, 0, Valid::over(b, 0, b.len()), &mut Partial::default()),
                None,
                "{bad}"
            );
        }
    }

    #[test]
    fn non_digits_marks_exactly_the_bytes_that_are_not_digits() {
        for b in 0..=255u8 {
            for pos in 0..8 {
                let mut bytes = *b"01234567";
                bytes[pos] = b;
                let m = non_digits(u64::from_le_bytes(bytes));
                let want = if b.is_ascii_digit() { 0 } else { 0x80u64 << (8 * pos) };
                assert_eq!(m, want, "byte {b:#x} at {pos}");
            }
        }
        // Words of any bytes (a fixed pseudo-random sequence), byte by byte.
        let mut w = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            w = w.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let want = w
                .to_le_bytes()
                .iter()
                .enumerate()
                .filter(|(_, b)| !b.is_ascii_digit())
                .fold(0u64, |m, (i, _)| m | 0x80 << (8 * i));
            assert_eq!(non_digits(w), want, "{w:#018x}");
        }
    }

    /// Runs of 0 to 17 digits (each digit in every position), each followed by every
    /// byte that is not a digit (those below `'0'` borrow when `'0'` is subtracted)
    /// and then by more digits, in buffers cut at every length: the value and length
    /// `str::parse` gives, or `None` where the run is 16 digits or more or the words
    /// run past the buffer.
    #[test]
    fn digit_runs_read_a_word_at_a_time_are_their_decimal_value() {
        let mut checked = 0;
        for len in 0..=17usize {
            for d in 0..10u8 {
                let run: Vec<u8> = (0..len).map(|i| b'0' + ((i as u8 + d) % 10)).collect();
                for stop in (0..=255u8).filter(|b| !b.is_ascii_digit()) {
                    let mut text = run.clone();
                    text.push(stop);
                    text.extend_from_slice(b"999999999999999");
                    for cut in 0..=text.len() {
                        let got = digit_run(&text[..cut], 0);
                        let whole = len < 16 && cut >= if len < 8 { 8 } else { 16 };
                        let want = whole.then(|| {
                            let v = std::str::from_utf8(&run).unwrap().parse().unwrap_or(0u64);
                            (v, len)
                        });
                        assert_eq!(got, want, "{:?} cut at {cut}", &text[..cut]);
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 100_000);
    }

    /// Numbers good and bad, before what may follow one: where the quick skip says a
    /// plain number ends, serde reads the text up to there as one number, and the
    /// byte after it cannot continue it (a digit, an exponent, a first `.`); the usual
    /// Kineto numbers are all taken.
    #[test]
    fn plain_numbers_end_where_serde_ends_them() {
        let heads = [
            "0",
            "-0",
            "7",
            "-7",
            "10",
            "01",
            "-01",
            "00",
            "1.",
            "1.5",
            "-1.5",
            "0.25",
            "00.5",
            ".5",
            "-",
            "-.5",
            "1e3",
            "1.5e3",
            "1E3",
            "2199280222896.406",
            "123456789012345",
            "1234567890123456",
            "12345678.123456789",
            "1.1234567890123456",
            "9007199254740993",
        ];
        let tails =
            ["", ",", "}", "]", " ", "\n", ".", "e", "E", "-", "+", "x", "5", ".5", ",\"a\": 1}"];
        for head in heads {
            for tail in tails {
                // Padded so that both words are there, and cut short so that they are not.
                for pad in ["        ", "         12345678", ""] {
                    let text = format!("{head}{tail}{pad}");
                    let Some(end) = plain_number_end(text.as_bytes(), 0) else { continue };
                    let number = &text[..end];
                    assert!(serde_json::from_str::<serde_json::Number>(number).is_ok(), "{text:?}");
                    // A second `.` ends a number for serde too (and is then refused).
                    let after = text.as_bytes().get(end);
                    let fraction = number.contains('.');
                    assert!(!matches!(after, Some(b'0'..=b'9' | b'e' | b'E')), "{text:?}");
                    assert!(fraction || after != Some(&b'.'), "{text:?}");
                }
            }
        }
        for plain in ["0", "-0", "7", "950", "2199280222896.406", "-1.5", "1538"] {
            let text = format!("{plain}, \"next\": 1}}        ");
            assert_eq!(plain_number_end(text.as_bytes(), 0), Some(plain.len()), "{plain}");
        }
    }

    #[test]
    fn events_cut_short_are_left_to_serde() {
        let full = r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 12.5, "dur": 3, "args": {"grid": [1, 2, 3]}}"#;
        for cut in 0..full.len() {
            let mut sink = Partial::default();
            let b = &full.as_bytes()[..cut];
            assert_eq!(event(b, 0, 0, Valid::over(b, 0, cut), &mut sink), None, "{}", &full[..cut]);
        }
    }
}

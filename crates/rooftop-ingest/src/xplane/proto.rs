//! Protobuf messages of a JAX profile, written by hand as `prost` structs (no `protoc`
//! at build time).
//!
//! - XSpace, XPlane, XLine, XEvent, XStat, XEventMetadata, XStatMetadata: the public
//!   `xplane.proto` (package `tensorflow.profiler`; `tsl/profiler/protobuf/xplane.proto`
//!   in openxla/xla, `tensorflow/core/profiler/protobuf/xplane.proto` in older
//!   TensorFlow), every field with its number. `XSpace.hostnames` (4) and
//!   `XEventMetadata.child_id` (6) are the newer fields.
//! - HloProto and the messages under it: the subset of `xla/service/hlo.proto` and
//!   `xla/xla_data.proto` (openxla/xla) the analysis reads. Field numbers are the
//!   proto's; fields not declared here (literals, shardings, schedules, buffer
//!   assignments, ...) are skipped by the decoder, so newer and older HLO protos decode
//!   alike.
//!
//! Integer types follow the `.proto` (`int64` → `i64`, `uint64` → `u64`); `repeated`
//! scalars accept both packed and unpacked encodings, as protobuf decoders must.

#![allow(missing_docs)]

use std::collections::HashMap;

/// Why encoded bytes did not decode (the reader then finds where with its wire walk).
#[derive(Debug)]
pub enum DecodeFailure {
    Prost(prost::DecodeError),
    /// A field key or length of an `XLine` runs past its end.
    Malformed(&'static str),
}

impl From<prost::DecodeError> for DecodeFailure {
    fn from(e: prost::DecodeError) -> Self {
        DecodeFailure::Prost(e)
    }
}

impl std::fmt::Display for DecodeFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeFailure::Prost(e) => write!(f, "{e}"),
            DecodeFailure::Malformed(m) => f.write_str(m),
        }
    }
}

// ----- xplane.proto ---------------------------------------------------------------------

/// `XSpace` with its planes left encoded (zero-copy slices of the file): the reader
/// decodes one plane, then one line, at a time, so memory holds the file and one line.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XSpaceLazy {
    #[prost(bytes = "bytes", repeated, tag = "1")]
    pub planes: Vec<bytes::Bytes>,
    #[prost(string, repeated, tag = "2")]
    pub errors: Vec<String>,
    #[prost(string, repeated, tag = "3")]
    pub warnings: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    pub hostnames: Vec<String>,
}

/// An `XPlane`'s name alone (everything else skipped while decoding).
#[derive(Clone, PartialEq, prost::Message)]
pub struct XPlaneName {
    #[prost(string, tag = "2")]
    pub name: String,
}

/// `XPlane` with its lines left encoded.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XPlaneLazy {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(bytes = "bytes", repeated, tag = "3")]
    pub lines: Vec<bytes::Bytes>,
    #[prost(map = "int64, message", tag = "4")]
    pub event_metadata: HashMap<i64, XEventMetadata>,
    #[prost(map = "int64, message", tag = "5")]
    pub stat_metadata: HashMap<i64, XStatMetadata>,
    #[prost(message, repeated, tag = "6")]
    pub stats: Vec<XStat>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct XSpace {
    #[prost(message, repeated, tag = "1")]
    pub planes: Vec<XPlane>,
    #[prost(string, repeated, tag = "2")]
    pub errors: Vec<String>,
    #[prost(string, repeated, tag = "3")]
    pub warnings: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    pub hostnames: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct XPlane {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(message, repeated, tag = "3")]
    pub lines: Vec<XLine>,
    #[prost(map = "int64, message", tag = "4")]
    pub event_metadata: HashMap<i64, XEventMetadata>,
    #[prost(map = "int64, message", tag = "5")]
    pub stat_metadata: HashMap<i64, XStatMetadata>,
    #[prost(message, repeated, tag = "6")]
    pub stats: Vec<XStat>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct XLine {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(int64, tag = "10")]
    pub display_id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "11")]
    pub display_name: String,
    /// Start of the line, ns; `XEvent.offset_ps` is relative to it.
    #[prost(int64, tag = "3")]
    pub timestamp_ns: i64,
    #[prost(int64, tag = "9")]
    pub duration_ps: i64,
    #[prost(message, repeated, tag = "4")]
    pub events: Vec<XEvent>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct XEvent {
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    #[prost(oneof = "x_event::Data", tags = "2, 5")]
    pub data: Option<x_event::Data>,
    #[prost(int64, tag = "3")]
    pub duration_ps: i64,
    #[prost(message, repeated, tag = "4")]
    pub stats: Vec<XStat>,
}

pub mod x_event {
    #[derive(Clone, Copy, PartialEq, prost::Oneof)]
    pub enum Data {
        /// Start, ps after the line's `timestamp_ns`.
        #[prost(int64, tag = "2")]
        OffsetPs(i64),
        /// An aggregated event (no time of its own).
        #[prost(int64, tag = "5")]
        NumOccurrences(i64),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct XStat {
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    #[prost(oneof = "x_stat::Value", tags = "2, 3, 4, 5, 6, 7")]
    pub value: Option<x_stat::Value>,
}

pub mod x_stat {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        #[prost(double, tag = "2")]
        DoubleValue(f64),
        #[prost(uint64, tag = "3")]
        Uint64Value(u64),
        #[prost(int64, tag = "4")]
        Int64Value(i64),
        #[prost(string, tag = "5")]
        StrValue(String),
        #[prost(bytes = "vec", tag = "6")]
        BytesValue(Vec<u8>),
        /// A string interned as the name of the `XStatMetadata` with this id.
        #[prost(uint64, tag = "7")]
        RefValue(u64),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct XEventMetadata {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "4")]
    pub display_name: String,
    #[prost(bytes = "vec", tag = "3")]
    pub metadata: Vec<u8>,
    #[prost(message, repeated, tag = "5")]
    pub stats: Vec<XStat>,
    #[prost(int64, repeated, tag = "6")]
    pub child_id: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct XStatMetadata {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub description: String,
}

/// An `XLine` without its events (skipped while decoding); [`line_event_bytes`] decodes them
/// one at a time, so a line of millions of host events never sits in memory at once.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XLineHead {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "11")]
    pub display_name: String,
    #[prost(int64, tag = "3")]
    pub timestamp_ns: i64,
}

impl XLineHead {
    /// `prost`'s `decode` of an encoded `XLine`, without handing each of its events to
    /// `prost`'s field skipper: the line is walked once with the fast reader, its fields
    /// other than the events (4) are gathered in order, and `prost` decodes those, so a
    /// head field decodes or fails as it would. A line the walk cannot follow (a bad key,
    /// a length past the end, a group) goes to `prost` whole, which gives the error.
    pub fn decode_line(line: &bytes::Bytes) -> Result<XLineHead, prost::DecodeError> {
        Self::decode_line_cut(line, usize::MAX).map(|(head, _)| head)
    }

    /// [`XLineHead::decode_line`], and where the line may be cut into pieces whose fields
    /// can be read apart: 0, then each field start at least `piece` bytes past the last
    /// cut (found on the same walk). A line the walk cannot follow has the one cut, 0.
    pub fn decode_line_cut(
        line: &bytes::Bytes,
        piece: usize,
    ) -> Result<(XLineHead, Vec<usize>), prost::DecodeError> {
        let mut r = Reader { buf: line, pos: 0 };
        let mut head = Vec::new();
        let mut cuts = vec![0];
        let mut last = 0;
        while r.pos < line.len() {
            let start = r.pos;
            if start - last >= piece {
                cuts.push(start);
                last = start;
            }
            if let Some(stop) = short_event_at(line, start) {
                r.pos = stop;
                continue;
            }
            let Some(()) = r.key().and_then(|(field, wire)| {
                r.skip(wire)?;
                if field != 4 {
                    head.extend_from_slice(&line[start..r.pos]);
                }
                Some(())
            }) else {
                return prost::Message::decode(line.clone()).map(|head| (head, vec![0]));
            };
        }
        prost::Message::decode(head.as_slice()).map(|head| (head, cuts))
    }

    /// The display name, else the name.
    pub fn label(&self) -> &str {
        if self.display_name.is_empty() {
            &self.name
        } else {
            &self.display_name
        }
    }
}

/// The end of the event at `pos` of an encoded line when it is the usual one: key 0x22
/// (field 4, length-delimited) and a length below 128 (one byte), within the line; `None`
/// for any other field, which the general walk reads.
#[inline]
fn short_event_at(line: &[u8], pos: usize) -> Option<usize> {
    match line.get(pos..pos.checked_add(2)?)? {
        &[0x22, len] if len < 0x80 => Some(pos + 2 + usize::from(len)).filter(|&s| s <= line.len()),
        _ => None,
    }
}

/// Reads a varint at `pos` of `buf`: the value and the position after it.
#[inline]
fn varint_at(buf: &[u8], pos: usize) -> Option<(u64, usize)> {
    let b = *buf.get(pos)?;
    if b < 0x80 {
        return Some((u64::from(b), pos + 1));
    }
    if let Some(w) = buf.get(pos..pos.saturating_add(8)) {
        if let Some((v, len)) = varint8(u64::from_le_bytes(w.try_into().ok()?)) {
            return Some((v, pos + len));
        }
    }
    let mut v: u64 = 0;
    for i in 0..10 {
        let b = *buf.get(pos + i)?;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Some((v, pos + i + 1));
        }
    }
    None
}

/// The encoded `events` (field 4) of an encoded `XLine`, in order, as slices of `line`.
/// Other fields are skipped; malformed bytes end the iteration with an error.
pub fn line_event_bytes(line: &[u8]) -> impl Iterator<Item = Result<&[u8], DecodeFailure>> + '_ {
    let mut pos = 0usize;
    std::iter::from_fn(move || {
        while pos < line.len() {
            if let Some(stop) = short_event_at(line, pos) {
                let body = pos + 2;
                pos = stop;
                return Some(Ok(&line[body..stop]));
            }
            let Some((key, next)) = varint_at(line, pos) else {
                pos = line.len();
                return Some(Err(DecodeFailure::Malformed("XLine: truncated field key")));
            };
            let (field, wire) = (key >> 3, key & 7);
            // The field's value: `[body, stop)`.
            let span = match wire {
                0 => varint_at(line, next).map(|(_, stop)| (next, stop)),
                1 => next.checked_add(8).map(|stop| (next, stop)),
                5 => next.checked_add(4).map(|stop| (next, stop)),
                2 => varint_at(line, next).and_then(|(len, body)| {
                    Some((body, body.checked_add(usize::try_from(len).ok()?)?))
                }),
                _ => None,
            };
            let Some((body, stop)) = span.filter(|&(_, stop)| stop <= line.len()) else {
                pos = line.len();
                return Some(Err(DecodeFailure::Malformed("XLine: a field runs past the end")));
            };
            pos = stop;
            if field == 4 && wire == 2 {
                return Some(Ok(&line[body..stop]));
            }
        }
        None
    })
}

/// A stat value borrowed from the encoded bytes (`XStat.value`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StatValue<'a> {
    Double(f64),
    Uint64(u64),
    Int64(i64),
    Str(&'a str),
    Bytes(&'a [u8]),
    Ref(u64),
}

impl<'a> StatValue<'a> {
    /// The borrowed form of a decoded value.
    pub fn of(v: &'a x_stat::Value) -> StatValue<'a> {
        match v {
            x_stat::Value::DoubleValue(f) => StatValue::Double(*f),
            x_stat::Value::Uint64Value(u) => StatValue::Uint64(*u),
            x_stat::Value::Int64Value(i) => StatValue::Int64(*i),
            x_stat::Value::StrValue(s) => StatValue::Str(s),
            x_stat::Value::BytesValue(b) => StatValue::Bytes(b),
            x_stat::Value::RefValue(r) => StatValue::Ref(*r),
        }
    }
}

/// An `XStat` borrowed from the encoded bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StatRef<'a> {
    pub metadata_id: i64,
    pub value: Option<StatValue<'a>>,
}

/// The scalar fields of an `XEvent`; its stats go to a buffer the caller reuses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EventHead {
    pub metadata_id: i64,
    pub data: Option<x_event::Data>,
    pub duration_ps: i64,
}

impl EventHead {
    /// The head and stats of a decoded event (the decoder's answer for events the fast
    /// path leaves to it).
    pub fn of<'a>(e: &'a XEvent, stats: &mut Vec<StatRef<'a>>) -> EventHead {
        stats.clear();
        stats.extend(e.stats.iter().map(|s| StatRef {
            metadata_id: s.metadata_id,
            value: s.value.as_ref().map(StatValue::of),
        }));
        EventHead { metadata_id: e.metadata_id, data: e.data, duration_ps: e.duration_ps }
    }
}

/// Decodes an encoded `XEvent` without allocating: the scalars, and the stats into
/// `stats` (cleared first), strings borrowed from `buf`. `None` when the bytes hold
/// anything this path does not take (a malformed field, a wrong wire type, a group, a
/// nesting deeper than the limit); the caller then hands the bytes to `prost`, which
/// decides. Every event this accepts decodes to the same values under `prost`: it checks
/// what `prost` checks (varint overflow, keys within `u32`, field number 0, wire types of
/// known fields, lengths, UTF-8), and takes the last value of a repeated scalar or oneof.
pub fn decode_event<'a>(buf: &'a [u8], stats: &mut Vec<StatRef<'a>>) -> Option<EventHead> {
    if buf.len() <= SMALL_EVENT {
        if let Some(head) = decode_small(buf, stats) {
            return Some(head);
        }
    }
    decode_any(buf, stats)
}

/// Events of at most this many bytes (a host event has about 20) are first read by
/// [`decode_small`].
const SMALL_EVENT: usize = 64;

/// [`decode_event`] for a small event in the layout profilers write: one-byte keys of
/// the known fields only, varints of at most eight bytes. The bytes are copied into a
/// zeroed buffer longer than the event by eight, so that every varint is one 8-byte load
/// with no bounds to check; a value that runs into the zeros has its end past the event's,
/// which is refused. `None` for anything else (the general decoder then reads the event,
/// and decides).
fn decode_small<'a>(buf: &'a [u8], stats: &mut Vec<StatRef<'a>>) -> Option<EventHead> {
    let n = buf.len();
    let mut pad = [0u8; SMALL_EVENT + 16];
    pad.get_mut(..n)?.copy_from_slice(buf);
    // `p` is below `n` at every read, so the load stays inside `pad`.
    let varint = |p: &mut usize| -> Option<u64> {
        let w = u64::from_le_bytes(pad.get(*p..*p + 8)?.try_into().ok()?);
        if w & 0x80 == 0 {
            *p += 1;
            return Some(w & 0x7f);
        }
        let (v, len) = varint8(w)?;
        *p += len;
        Some(v)
    };
    // A length-delimited value at `p`: its bounds, within `end`.
    let span = |p: &mut usize, end: usize| -> Option<(usize, usize)> {
        let len = usize::try_from(varint(p)?).ok()?;
        let stop = p.checked_add(len).filter(|&s| s <= end)?;
        Some((std::mem::replace(p, stop), stop))
    };
    stats.clear();
    let mut head = EventHead { metadata_id: 0, data: None, duration_ps: 0 };
    let mut p = 0;
    while p < n {
        let key = pad[p];
        p += 1;
        match key {
            0x08 => head.metadata_id = varint(&mut p)?.cast_signed(),
            0x10 => head.data = Some(x_event::Data::OffsetPs(varint(&mut p)?.cast_signed())),
            0x28 => {
                head.data = Some(x_event::Data::NumOccurrences(varint(&mut p)?.cast_signed()));
            }
            0x18 => head.duration_ps = varint(&mut p)?.cast_signed(),
            0x22 => {
                let (mut q, end) = span(&mut p, n)?;
                let mut stat = StatRef { metadata_id: 0, value: None };
                while q < end {
                    let key = pad[q];
                    q += 1;
                    match key {
                        0x08 => stat.metadata_id = varint(&mut q)?.cast_signed(),
                        0x18 => stat.value = Some(StatValue::Uint64(varint(&mut q)?)),
                        0x20 => stat.value = Some(StatValue::Int64(varint(&mut q)?.cast_signed())),
                        0x38 => stat.value = Some(StatValue::Ref(varint(&mut q)?)),
                        0x11 => {
                            let b = pad.get(q..q + 8)?.try_into().ok()?;
                            stat.value = Some(StatValue::Double(f64::from_le_bytes(b)));
                            q += 8;
                        }
                        0x2a => {
                            let (from, to) = span(&mut q, end)?;
                            stat.value =
                                Some(StatValue::Str(std::str::from_utf8(&buf[from..to]).ok()?));
                        }
                        0x32 => {
                            let (from, to) = span(&mut q, end)?;
                            stat.value = Some(StatValue::Bytes(&buf[from..to]));
                        }
                        _ => return None,
                    }
                }
                if q != end {
                    return None;
                }
                stats.push(stat);
            }
            _ => return None,
        }
    }
    (p == n).then_some(head)
}

/// [`decode_event`] for any event.
fn decode_any<'a>(buf: &'a [u8], stats: &mut Vec<StatRef<'a>>) -> Option<EventHead> {
    stats.clear();
    let mut head = EventHead { metadata_id: 0, data: None, duration_ps: 0 };
    let mut r = Reader { buf, pos: 0 };
    while r.pos < buf.len() {
        let (field, wire) = r.key()?;
        match (field, wire) {
            (1, 0) => head.metadata_id = r.varint()?.cast_signed(),
            (2, 0) => head.data = Some(x_event::Data::OffsetPs(r.varint()?.cast_signed())),
            (5, 0) => head.data = Some(x_event::Data::NumOccurrences(r.varint()?.cast_signed())),
            (3, 0) => head.duration_ps = r.varint()?.cast_signed(),
            (4, 2) => stats.push(decode_stat(r.bytes()?)?),
            (1..=5, _) => return None,
            _ => r.skip(wire)?,
        }
    }
    Some(head)
}

fn decode_stat(buf: &[u8]) -> Option<StatRef<'_>> {
    let mut s = StatRef { metadata_id: 0, value: None };
    let mut r = Reader { buf, pos: 0 };
    while r.pos < buf.len() {
        let (field, wire) = r.key()?;
        s.value = match (field, wire) {
            (1, 0) => {
                s.metadata_id = r.varint()?.cast_signed();
                continue;
            }
            (2, 1) => Some(StatValue::Double(f64::from_le_bytes(r.fixed()?))),
            (3, 0) => Some(StatValue::Uint64(r.varint()?)),
            (4, 0) => Some(StatValue::Int64(r.varint()?.cast_signed())),
            (5, 2) => Some(StatValue::Str(std::str::from_utf8(r.bytes()?).ok()?)),
            (6, 2) => Some(StatValue::Bytes(r.bytes()?)),
            (7, 0) => Some(StatValue::Ref(r.varint()?)),
            (1..=7, _) => return None,
            _ => {
                r.skip(wire)?;
                continue;
            }
        };
    }
    Some(s)
}

/// The varint at the start of `w` (eight bytes, little-endian) when it ends within them:
/// its value and length. The last byte is the first without its high bit; the 7-bit
/// groups below it are packed by three mask-and-shift steps (pairs of bytes into 14 bits,
/// pairs of those into 28, the two halves into 56), with no loop over the bytes.
#[inline]
fn varint8(w: u64) -> Option<(u64, usize)> {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let stops = !w & HIGH;
    if stops == 0 {
        return None;
    }
    // Bits up to and including the last byte's high bit (clear there, by definition).
    let end = stops.trailing_zeros() + 1;
    let len = (end / 8) as usize;
    let x = (w & (u64::MAX >> (64 - end))) & !HIGH;
    let x = ((x & 0x7f00_7f00_7f00_7f00) >> 1) | (x & 0x007f_007f_007f_007f);
    let x = ((x & 0x3fff_0000_3fff_0000) >> 2) | (x & 0x0000_3fff_0000_3fff);
    let x = ((x & 0x0fff_ffff_0000_0000) >> 4) | (x & 0x0000_0000_0fff_ffff);
    Some((x, len))
}

/// A cursor over one encoded message; every read is bounds-checked.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A varint as `prost` reads it: at most 10 bytes, the 10th at most 1. One byte (field
    /// keys, small ids) is read inline; up to eight (times in picoseconds, larger ids)
    /// from one 8-byte load without a loop ([`varint8`]); longer ones byte by byte.
    #[inline]
    fn varint(&mut self) -> Option<u64> {
        let b = *self.buf.get(self.pos)?;
        if b < 0x80 {
            self.pos += 1;
            return Some(u64::from(b));
        }
        if let Some(w) = self.buf.get(self.pos..self.pos + 8) {
            if let Some((v, len)) = varint8(u64::from_le_bytes(w.try_into().ok()?)) {
                self.pos += len;
                return Some(v);
            }
        }
        self.varint_long()
    }

    /// [`Reader::varint`] byte by byte: near the end of the buffer, or past eight bytes.
    #[inline(never)]
    fn varint_long(&mut self) -> Option<u64> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let b = *self.buf.get(self.pos + i)?;
            if i == 9 && b > 1 {
                return None;
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                self.pos += i + 1;
                return Some(v);
            }
        }
        None
    }

    /// A field key: (field number, wire type); `None` for what `prost` refuses.
    fn key(&mut self) -> Option<(u32, u8)> {
        let k = u32::try_from(self.varint()?).ok()?;
        let (field, wire) = (k >> 3, (k & 7) as u8);
        (field != 0 && wire <= 5).then_some((field, wire))
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.varint()?).ok()?;
        let end = self.pos.checked_add(len).filter(|&e| e <= self.buf.len())?;
        let b = &self.buf[self.pos..end];
        self.pos = end;
        Some(b)
    }

    fn fixed(&mut self) -> Option<[u8; 8]> {
        let b: [u8; 8] = self.buf.get(self.pos..self.pos + 8)?.try_into().ok()?;
        self.pos += 8;
        Some(b)
    }

    /// Skips an unknown field's value. Groups are left to `prost`.
    fn skip(&mut self, wire: u8) -> Option<()> {
        match wire {
            0 => {
                self.varint()?;
            }
            1 | 5 => {
                let w = if wire == 1 { 8 } else { 4 };
                self.pos = self.pos.checked_add(w).filter(|&e| e <= self.buf.len())?;
            }
            2 => {
                self.bytes()?;
            }
            _ => return None,
        }
        Some(())
    }
}

// ----- hlo.proto / xla_data.proto (subset) ----------------------------------------------

#[derive(Clone, PartialEq, prost::Message)]
pub struct HloProto {
    #[prost(message, optional, tag = "1")]
    pub hlo_module: Option<HloModuleProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HloModuleProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub entry_computation_name: String,
    #[prost(int64, tag = "6")]
    pub entry_computation_id: i64,
    #[prost(message, repeated, tag = "3")]
    pub computations: Vec<HloComputationProto>,
    #[prost(int64, tag = "5")]
    pub id: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HloComputationProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, repeated, tag = "2")]
    pub instructions: Vec<HloInstructionProto>,
    #[prost(int64, tag = "5")]
    pub id: i64,
    #[prost(int64, tag = "6")]
    pub root_id: i64,
    #[prost(bool, tag = "7")]
    pub is_fusion_computation: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HloInstructionProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub opcode: String,
    #[prost(message, optional, tag = "3")]
    pub shape: Option<ShapeProto>,
    #[prost(message, optional, tag = "7")]
    pub metadata: Option<OpMetadata>,
    #[prost(string, tag = "11")]
    pub fusion_kind: String,
    #[prost(message, optional, tag = "15")]
    pub window: Option<Window>,
    #[prost(message, optional, tag = "16")]
    pub convolution_dimension_numbers: Option<ConvolutionDimensionNumbers>,
    #[prost(int64, tag = "50")]
    pub feature_group_count: i64,
    #[prost(int64, tag = "58")]
    pub batch_group_count: i64,
    #[prost(int64, tag = "26")]
    pub channel_id: i64,
    #[prost(string, tag = "28")]
    pub custom_call_target: String,
    #[prost(message, optional, tag = "30")]
    pub dot_dimension_numbers: Option<DotDimensionNumbers>,
    #[prost(int64, tag = "35")]
    pub id: i64,
    #[prost(int64, repeated, tag = "36")]
    pub operand_ids: Vec<i64>,
    #[prost(int64, repeated, tag = "38")]
    pub called_computation_ids: Vec<i64>,
    #[prost(bytes = "vec", tag = "43")]
    pub backend_config: Vec<u8>,
    #[prost(message, repeated, tag = "49")]
    pub replica_groups: Vec<ReplicaGroup>,
    #[prost(message, optional, tag = "87")]
    pub collective_device_list: Option<CollectiveDeviceListProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ShapeProto {
    /// `PrimitiveType`, kept as its number (new types decode without a schema change).
    #[prost(int32, tag = "2")]
    pub element_type: i32,
    #[prost(int64, repeated, tag = "3")]
    pub dimensions: Vec<i64>,
    #[prost(message, repeated, tag = "4")]
    pub tuple_shapes: Vec<ShapeProto>,
    #[prost(message, optional, tag = "5")]
    pub layout: Option<LayoutProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LayoutProto {
    #[prost(int64, repeated, tag = "1")]
    pub minor_to_major: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct OpMetadata {
    #[prost(string, tag = "1")]
    pub op_type: String,
    #[prost(string, tag = "2")]
    pub op_name: String,
    #[prost(string, tag = "3")]
    pub source_file: String,
    #[prost(int32, tag = "4")]
    pub source_line: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct DotDimensionNumbers {
    #[prost(int64, repeated, tag = "1")]
    pub lhs_contracting_dimensions: Vec<i64>,
    #[prost(int64, repeated, tag = "2")]
    pub rhs_contracting_dimensions: Vec<i64>,
    #[prost(int64, repeated, tag = "3")]
    pub lhs_batch_dimensions: Vec<i64>,
    #[prost(int64, repeated, tag = "4")]
    pub rhs_batch_dimensions: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct WindowDimension {
    #[prost(int64, tag = "1")]
    pub size: i64,
    #[prost(int64, tag = "2")]
    pub stride: i64,
    #[prost(int64, tag = "3")]
    pub padding_low: i64,
    #[prost(int64, tag = "4")]
    pub padding_high: i64,
    #[prost(int64, tag = "5")]
    pub window_dilation: i64,
    #[prost(int64, tag = "6")]
    pub base_dilation: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Window {
    #[prost(message, repeated, tag = "1")]
    pub dimensions: Vec<WindowDimension>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ConvolutionDimensionNumbers {
    #[prost(int64, tag = "7")]
    pub input_batch_dimension: i64,
    #[prost(int64, tag = "8")]
    pub input_feature_dimension: i64,
    #[prost(int64, repeated, tag = "11")]
    pub input_spatial_dimensions: Vec<i64>,
    #[prost(int64, tag = "3")]
    pub kernel_input_feature_dimension: i64,
    #[prost(int64, tag = "4")]
    pub kernel_output_feature_dimension: i64,
    #[prost(int64, repeated, tag = "6")]
    pub kernel_spatial_dimensions: Vec<i64>,
    #[prost(int64, tag = "9")]
    pub output_batch_dimension: i64,
    #[prost(int64, tag = "10")]
    pub output_feature_dimension: i64,
    #[prost(int64, repeated, tag = "12")]
    pub output_spatial_dimensions: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ReplicaGroup {
    #[prost(int64, repeated, tag = "1")]
    pub replica_ids: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct IotaReplicaGroupListProto {
    #[prost(int64, tag = "1")]
    pub num_replica_groups: i64,
    #[prost(int64, tag = "2")]
    pub num_devices_per_group: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CollectiveDeviceListProto {
    #[prost(message, repeated, tag = "1")]
    pub replica_groups: Vec<ReplicaGroup>,
    #[prost(message, optional, tag = "2")]
    pub iota_replica_group_list: Option<IotaReplicaGroupListProto>,
}

/// XLA `PrimitiveType` numbers (`xla/xla_data.proto`) → HLO text names.
pub fn primitive_type_name(t: i32) -> &'static str {
    match t {
        1 => "pred",
        2 => "s8",
        3 => "s16",
        4 => "s32",
        5 => "s64",
        6 => "u8",
        7 => "u16",
        8 => "u32",
        9 => "u64",
        10 => "f16",
        11 => "f32",
        12 => "f64",
        13 => "tuple",
        14 => "opaque",
        15 => "c64",
        16 => "bf16",
        17 => "token",
        18 => "c128",
        19 => "f8e5m2",
        20 => "f8e4m3fn",
        21 => "s4",
        22 => "u4",
        23 => "f8e4m3b11fnuz",
        24 => "f8e5m2fnuz",
        25 => "f8e4m3fnuz",
        26 => "s2",
        27 => "u2",
        28 => "f8e4m3",
        29 => "f8e3m4",
        30 => "s1",
        31 => "u1",
        32 => "f4e2m1fn",
        33 => "f8e8m0fnu",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    /// The fast path's answer, compared with `prost`'s decoding of the same bytes.
    fn agrees(bytes: &[u8]) -> bool {
        let mut stats = Vec::new();
        let fast = decode_event(bytes, &mut stats);
        let slow = XEvent::decode(bytes);
        match (fast, slow) {
            (Some(h), Ok(e)) => {
                let mut want = Vec::new();
                EventHead::of(&e, &mut want) == h && want == stats
            }
            // The fast path may leave an event to `prost`, never accept one it refuses.
            (None, _) => true,
            (Some(_), Err(_)) => false,
        }
    }

    /// Every varint length from 1 to 10 bytes, at the start of buffers long and short
    /// enough for each path (inline, one 8-byte load, byte by byte), read as `prost`
    /// reads it: value, length, and refusal of an 11-byte or overflowing one.
    #[test]
    fn varints_of_every_length_read_as_prost_reads_them() {
        let mut values = vec![0u64, 1, 127, 128, 300, u64::MAX, (1 << 63) + 1];
        for bits in [7u32, 14, 21, 28, 35, 42, 49, 56, 63] {
            values.extend([(1u64 << bits) - 1, 1u64 << bits, (1u64 << bits) + 0x55]);
        }
        for v in values {
            let mut enc = Vec::new();
            prost::encoding::encode_varint(v, &mut enc);
            for tail in [0usize, 3, 7, 12] {
                let mut buf = enc.clone();
                buf.extend(std::iter::repeat_n(0xff, tail));
                let mut r = Reader { buf: &buf, pos: 0 };
                assert_eq!((r.varint(), r.pos), (Some(v), enc.len()), "{v} + {tail} bytes");
                assert_eq!(varint_at(&buf, 0), Some((v, enc.len())), "{v} + {tail} bytes");
                let want = prost::encoding::decode_varint(&mut buf.as_slice()).ok();
                assert_eq!(want, Some(v));
            }
        }
        // Eight bytes of continuation: the 8-byte load leaves it to the byte loop.
        assert_eq!(varint8(0x8080_8080_8080_8080), None);
        assert_eq!(varint8(0x0000_0000_0000_0000), Some((0, 1)));
        assert_eq!(varint8(0x7f80_8080_8080_8080), Some((0x7f << 49, 8)));
        // Eleven bytes, or a tenth byte above 1, is refused as `prost` refuses it.
        for bad in
            [&[0xffu8; 11][..], &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]]
        {
            let mut r = Reader { buf: bad, pos: 0 };
            assert_eq!(r.varint(), None);
            assert!(prost::encoding::decode_varint(&mut &bad[..]).is_err());
        }
        // A truncated one: its bytes end with their high bit set.
        let mut r = Reader { buf: &[0x80, 0x80], pos: 0 };
        assert_eq!(r.varint(), None);
    }

    /// The head of a line with events between its fields, decoded by the walk and by
    /// `prost`: the same head, or both refuse, for the line, every truncation of it and
    /// every byte changed to a few telling values.
    #[test]
    fn line_heads_decode_as_prost_decodes_them() {
        let line: Vec<u8> = [
            &[0x08, 0x07][..],               // id 7
            &[0x12, 0x03, b'a', b'b', b'c'], // name "abc"
            &[0x22, 0x02, 0x08, 0x01],       // an event
            &[0x18, 0x96, 0x01],             // timestamp_ns 150
            &[0x22, 0x03, 0x08, 0x81, 0x01], // another event
            &[0x5a, 0x01, b'x'],             // display_name "x"
            &[0x20, 0x05],                   // field 4 as a varint: skipped as well
        ]
        .concat();
        let agrees = |b: &[u8]| {
            let fast = XLineHead::decode_line(&bytes::Bytes::copy_from_slice(b));
            let slow = XLineHead::decode(b);
            match (fast, slow) {
                (Ok(f), Ok(s)) => f == s,
                (Err(_), Err(_)) => true,
                _ => false,
            }
        };
        let h = XLineHead::decode_line(&bytes::Bytes::copy_from_slice(&line)).unwrap();
        assert_eq!((h.id, h.name.as_str(), h.timestamp_ns, h.label()), (7, "abc", 150, "x"));
        for cut in 0..=line.len() {
            assert!(agrees(&line[..cut]), "cut at {cut}");
        }
        for i in 0..line.len() {
            for v in [0x00, 0x01, 0x02, 0x07, 0x0b, 0x0c, 0x22, 0x7f, 0x80, 0xff] {
                let mut m = line.clone();
                m[i] = v;
                assert!(agrees(&m), "byte {i} = {v:#x}");
            }
        }
    }

    /// A host event as JAX writes them: metadata id, offset, duration, a reference and
    /// an integer stat (20 bytes).
    fn host_event() -> XEvent {
        XEvent {
            metadata_id: 300,
            data: Some(x_event::Data::OffsetPs(1_234_567_890)),
            duration_ps: 2_960_000,
            stats: vec![
                XStat { metadata_id: 4, value: Some(x_stat::Value::RefValue(17)) },
                XStat { metadata_id: 9, value: Some(x_stat::Value::Int64Value(123_456)) },
            ],
        }
    }

    /// The small-event path reads the usual layout itself (it does not leave it to the
    /// general decoder), gives `prost`'s values, and refuses every truncation and every
    /// changed byte `prost` refuses.
    #[test]
    fn small_events_decode_as_prost_decodes_them() {
        let good = host_event().encode_to_vec();
        assert!(good.len() <= SMALL_EVENT);
        let mut stats = Vec::new();
        let h = decode_small(&good, &mut stats).expect("the usual layout is read in place");
        assert_eq!(
            (h.metadata_id, h.data, h.duration_ps),
            (300, Some(x_event::Data::OffsetPs(1_234_567_890)), 2_960_000)
        );
        assert_eq!(stats[0], StatRef { metadata_id: 4, value: Some(StatValue::Ref(17)) });
        assert_eq!(stats[1].value, Some(StatValue::Int64(123_456)));
        let small_agrees = |b: &[u8]| {
            let mut stats = Vec::new();
            match (decode_small(b, &mut stats), XEvent::decode(b)) {
                (Some(h), Ok(e)) => {
                    let mut want = Vec::new();
                    EventHead::of(&e, &mut want) == h && want == stats
                }
                (None, _) => true,
                (Some(_), Err(_)) => false,
            }
        };
        for cut in 0..good.len() {
            assert!(small_agrees(&good[..cut]) && agrees(&good[..cut]), "cut at {cut}");
        }
        for i in 0..good.len() {
            for v in [0x00, 0x01, 0x02, 0x07, 0x0b, 0x0c, 0x11, 0x22, 0x2a, 0x7f, 0x80, 0xff] {
                let mut m = good.clone();
                m[i] = v;
                assert!(small_agrees(&m) && agrees(&m), "byte {i} = {v:#x}");
            }
        }
    }

    proptest::proptest! {
        /// Random small events (every stat kind, values of every varint length, negative
        /// ones among them) and random corruptions of them: the small-event path reads
        /// what `prost` reads whenever it answers, and answers for every event whose
        /// varints fit in eight bytes.
        #[test]
        fn random_small_events_decode_as_prost_decodes_them(
            id in 0i64..(1 << 40),
            offset in proptest::prop_oneof![0i64..(1 << 45), proptest::prelude::any::<i64>()],
            occurrences in proptest::prelude::any::<bool>(),
            duration in 0i64..(1 << 50),
            raw_stats in proptest::collection::vec((0i64..1000, 0u8..7, proptest::prelude::any::<i64>(), "[a-z.é]{0,6}"), 0..4),
            flip in proptest::prelude::any::<(usize, u8)>(),
        ) {
            let stats: Vec<XStat> = raw_stats
                .iter()
                .map(|(m, kind, v, text)| XStat {
                    metadata_id: *m,
                    value: match kind {
                        0 => Some(x_stat::Value::DoubleValue(*v as f64 / 7.0)),
                        1 => Some(x_stat::Value::Uint64Value(v.unsigned_abs() >> 8)),
                        2 => Some(x_stat::Value::Int64Value(*v >> 8)),
                        3 => Some(x_stat::Value::StrValue(text.clone())),
                        4 => Some(x_stat::Value::BytesValue(text.as_bytes().to_vec())),
                        5 => Some(x_stat::Value::RefValue(v.unsigned_abs() >> 8)),
                        _ => None,
                    },
                })
                .collect();
            let data = if occurrences {
                x_event::Data::NumOccurrences(offset)
            } else {
                x_event::Data::OffsetPs(offset)
            };
            let e = XEvent { metadata_id: id, data: Some(data), duration_ps: duration, stats };
            let bytes = e.encode_to_vec();
            proptest::prop_assert!(agrees(&bytes));
            let mut got = Vec::new();
            // Varints of at most 8 bytes: values below 2^56, none negative.
            let short = |v: i64| (0..1 << 56).contains(&v);
            let fits = short(offset)
                && e.stats.iter().all(|s| match &s.value {
                    Some(x_stat::Value::Int64Value(v)) => short(*v),
                    Some(x_stat::Value::Uint64Value(v) | x_stat::Value::RefValue(v)) => *v < 1 << 56,
                    _ => true,
                });
            if bytes.len() <= SMALL_EVENT && fits {
                proptest::prop_assert!(decode_small(&bytes, &mut got).is_some());
            }
            let mut m = bytes.clone();
            if !m.is_empty() {
                let i = flip.0 % m.len();
                m[i] = flip.1;
                proptest::prop_assert!(agrees(&m));
                proptest::prop_assert!(agrees(&m[..i]));
            }
        }
    }

    #[test]
    fn fast_event_decoding_agrees_with_prost() {
        let e = XEvent {
            metadata_id: 7,
            data: Some(x_event::Data::OffsetPs(-5)),
            duration_ps: 1 << 40,
            stats: vec![
                XStat { metadata_id: 1, value: Some(x_stat::Value::StrValue("fusion.3".into())) },
                XStat { metadata_id: 2, value: Some(x_stat::Value::Int64Value(-1)) },
                XStat { metadata_id: 3, value: Some(x_stat::Value::DoubleValue(2.5)) },
                XStat { metadata_id: 4, value: Some(x_stat::Value::Uint64Value(u64::MAX)) },
                XStat { metadata_id: 5, value: Some(x_stat::Value::BytesValue(vec![0xff, 0])) },
                XStat { metadata_id: 6, value: Some(x_stat::Value::RefValue(9)) },
                XStat { metadata_id: 8, value: None },
            ],
        };
        let good = e.encode_to_vec();
        let mut stats = Vec::new();
        let h = decode_event(&good, &mut stats).unwrap();
        assert_eq!(
            (h.metadata_id, h.data, h.duration_ps),
            (7, Some(x_event::Data::OffsetPs(-5)), 1 << 40)
        );
        assert_eq!(stats[0].value, Some(StatValue::Str("fusion.3")));
        assert_eq!(stats[1].value, Some(StatValue::Int64(-1)));
        assert_eq!(stats[6], StatRef { metadata_id: 8, value: None });
        assert!(agrees(&good));
        // Every truncation, and every byte changed to a few telling values: the fast path
        // never accepts what `prost` refuses and reads the same values when both accept.
        for cut in 0..good.len() {
            assert!(agrees(&good[..cut]), "cut at {cut}");
        }
        for i in 0..good.len() {
            for v in [0x00, 0x01, 0x02, 0x07, 0x0b, 0x0c, 0x7f, 0x80, 0xff] {
                let mut m = good.clone();
                m[i] = v;
                assert!(agrees(&m), "byte {i} = {v:#x}");
            }
        }
        // An unknown field of each wire type is skipped; a group is left to `prost`.
        let mut extra = good.clone();
        extra.extend_from_slice(&[0x48, 0x05, 0x51, 0, 0, 0, 0, 0, 0, 0, 0, 0x5d, 0, 0, 0, 0]);
        extra.extend_from_slice(&[0x62, 0x01, 0x00]);
        assert!(decode_event(&extra, &mut stats).is_some() && agrees(&extra));
        let group = [0x08, 0x01, 0x6b, 0x08, 0x01, 0x6c];
        assert!(decode_event(&group, &mut stats).is_none());
        assert!(XEvent::decode(group.as_slice()).is_ok());
        // A string that is not UTF-8, a key beyond 32 bits, a varint of 11 bytes.
        assert!(decode_event(&[0x22, 0x03, 0x2a, 0x01, 0xff], &mut stats).is_none());
        assert!(decode_event(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x00], &mut stats).is_none());
        assert!(decode_event(
            &[0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
            &mut stats
        )
        .is_none());
    }
}

//! Locating bad bytes in a protobuf that does not decode as an XSpace: a walk over the
//! wire format (protobuf encoding guide: varint keys `field << 3 | wire type`; wire
//! types 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32) that follows the
//! `xplane.proto` schema, so the error can name the byte offset and the field path
//! (`planes[1].lines[0].events[17].stats[2]`).
//!
//! The decoder itself is `prost`'s; this walk runs only after it failed, to say where.
//! It checks what `prost` checks: well-formed keys and lengths, the wire type of every
//! known field, UTF-8 in string fields, and nests into known sub-messages.

/// What a field of a message holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Field {
    /// An integer (varint; `repeated` ones may be packed).
    Varint {
        repeated: bool,
    },
    Fixed64,
    Str,
    Bytes,
    Message(Msg),
}

/// The messages of `xplane.proto` (map fields are their entry messages).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Msg {
    Space,
    Plane,
    EventMetadataEntry,
    StatMetadataEntry,
    Line,
    Event,
    Stat,
    EventMetadata,
    StatMetadata,
}

impl Msg {
    fn name(self) -> &'static str {
        match self {
            Msg::Space => "XSpace",
            Msg::Plane => "XPlane",
            Msg::EventMetadataEntry => "XPlane.event_metadata entry",
            Msg::StatMetadataEntry => "XPlane.stat_metadata entry",
            Msg::Line => "XLine",
            Msg::Event => "XEvent",
            Msg::Stat => "XStat",
            Msg::EventMetadata => "XEventMetadata",
            Msg::StatMetadata => "XStatMetadata",
        }
    }

    /// `(name, kind)` of a field number, `None` for fields the schema does not know. One
    /// arm per (message, field), as `xplane.proto` lists them.
    #[allow(clippy::match_same_arms)]
    fn field(self, n: u64) -> Option<(&'static str, Field)> {
        let v = Field::Varint { repeated: false };
        let f = match (self, n) {
            (Msg::Space, 1) => ("planes", Field::Message(Msg::Plane)),
            (Msg::Space, 2) => ("errors", Field::Str),
            (Msg::Space, 3) => ("warnings", Field::Str),
            (Msg::Space, 4) => ("hostnames", Field::Str),
            (Msg::Plane, 1) => ("id", v),
            (Msg::Plane, 2) => ("name", Field::Str),
            (Msg::Plane, 3) => ("lines", Field::Message(Msg::Line)),
            (Msg::Plane, 4) => ("event_metadata", Field::Message(Msg::EventMetadataEntry)),
            (Msg::Plane, 5) => ("stat_metadata", Field::Message(Msg::StatMetadataEntry)),
            (Msg::Plane, 6) => ("stats", Field::Message(Msg::Stat)),
            (Msg::EventMetadataEntry | Msg::StatMetadataEntry, 1) => ("key", v),
            (Msg::EventMetadataEntry, 2) => ("value", Field::Message(Msg::EventMetadata)),
            (Msg::StatMetadataEntry, 2) => ("value", Field::Message(Msg::StatMetadata)),
            (Msg::Line, 1) => ("id", v),
            (Msg::Line, 10) => ("display_id", v),
            (Msg::Line, 2) => ("name", Field::Str),
            (Msg::Line, 11) => ("display_name", Field::Str),
            (Msg::Line, 3) => ("timestamp_ns", v),
            (Msg::Line, 9) => ("duration_ps", v),
            (Msg::Line, 4) => ("events", Field::Message(Msg::Event)),
            (Msg::Event, 1) => ("metadata_id", v),
            (Msg::Event, 2) => ("offset_ps", v),
            (Msg::Event, 5) => ("num_occurrences", v),
            (Msg::Event, 3) => ("duration_ps", v),
            (Msg::Event, 4) => ("stats", Field::Message(Msg::Stat)),
            (Msg::Stat, 1) => ("metadata_id", v),
            (Msg::Stat, 2) => ("double_value", Field::Fixed64),
            (Msg::Stat, 3) => ("uint64_value", v),
            (Msg::Stat, 4) => ("int64_value", v),
            (Msg::Stat, 5) => ("str_value", Field::Str),
            (Msg::Stat, 6) => ("bytes_value", Field::Bytes),
            (Msg::Stat, 7) => ("ref_value", v),
            (Msg::EventMetadata, 1) => ("id", v),
            (Msg::EventMetadata, 2) => ("name", Field::Str),
            (Msg::EventMetadata, 4) => ("display_name", Field::Str),
            (Msg::EventMetadata, 3) => ("metadata", Field::Bytes),
            (Msg::EventMetadata, 5) => ("stats", Field::Message(Msg::Stat)),
            (Msg::EventMetadata, 6) => ("child_id", Field::Varint { repeated: true }),
            (Msg::StatMetadata, 1) => ("id", v),
            (Msg::StatMetadata, 2) => ("name", Field::Str),
            (Msg::StatMetadata, 3) => ("description", Field::Str),
            _ => return None,
        };
        Some(f)
    }
}

/// Where and why the bytes are not an XSpace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub offset: usize,
    /// `XSpace.planes[1].lines[0]` style path of the field being read.
    pub field: String,
    pub message: String,
}

/// Reads a varint at `pos`; `None` when it runs past `end` or over 10 bytes.
fn varint(buf: &[u8], pos: usize, end: usize) -> Option<(u64, usize)> {
    let mut v: u64 = 0;
    for i in 0..10 {
        let b = *buf.get(pos + i).filter(|_| pos + i < end)?;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Some((v, pos + i + 1));
        }
    }
    None
}

fn wire_name(wt: u64) -> &'static str {
    match wt {
        0 => "varint",
        1 => "fixed64",
        2 => "length-delimited",
        3 => "start-group",
        4 => "end-group",
        5 => "fixed32",
        _ => "invalid",
    }
}

/// Finds the first place where `buf` is not an XSpace; `None` when the walk finds none.
pub fn locate(buf: &[u8]) -> Option<Located> {
    walk(buf, 0, buf.len(), Msg::Space, "XSpace").err()
}

fn walk(buf: &[u8], start: usize, end: usize, msg: Msg, path: &str) -> Result<(), Located> {
    let mut pos = start;
    let mut counts: Vec<(u64, usize)> = Vec::new();
    while pos < end {
        let at = pos;
        let err = |field: String, message: String| Located { offset: at, field, message };
        let (key, next) = varint(buf, pos, end).ok_or_else(|| {
            err(
                path.to_string(),
                format!(
                    "a field key runs past the end of the {} ({} bytes left)",
                    msg.name(),
                    end - pos
                ),
            )
        })?;
        pos = next;
        let (n, wt) = (key >> 3, key & 7);
        if n == 0 {
            return Err(err(
                path.to_string(),
                format!("field number 0 (key byte 0x{key:02x}) is not valid protobuf"),
            ));
        }
        let known = msg.field(n);
        let idx = if let Some((_, c)) = counts.iter_mut().find(|(f, _)| *f == n) {
            *c += 1;
            *c - 1
        } else {
            counts.push((n, 1));
            0
        };
        let fpath = match known {
            Some((name, Field::Message(_))) => format!("{path}.{name}[{idx}]"),
            Some((name, _)) => format!("{path}.{name}"),
            None => format!("{path}.<field {n}>"),
        };
        let expect = |want: &str| {
            err(
                fpath.clone(),
                format!("field {n} has wire type {} ({wt}), expected {want}", wire_name(wt)),
            )
        };
        match wt {
            0 => {
                if let Some((_, f)) = known {
                    if !matches!(f, Field::Varint { .. }) {
                        return Err(expect(kind_name(f)));
                    }
                }
                pos = varint(buf, pos, end)
                    .ok_or_else(|| {
                        err(fpath.clone(), "a varint value runs past the end".to_string())
                    })?
                    .1;
            }
            1 | 5 => {
                let w = if wt == 1 { 8 } else { 4 };
                if let Some((_, f)) = known {
                    if !(wt == 1 && f == Field::Fixed64) {
                        return Err(expect(kind_name(f)));
                    }
                }
                if end - pos < w {
                    return Err(err(
                        fpath,
                        format!("a {w}-byte value runs past the end ({} bytes left)", end - pos),
                    ));
                }
                pos += w;
            }
            2 => {
                let (len, body) = varint(buf, pos, end)
                    .ok_or_else(|| err(fpath.clone(), "a length runs past the end".to_string()))?;
                let left = end - body;
                let len_usize =
                    usize::try_from(len).ok().filter(|&l| l <= left).ok_or_else(|| {
                        err(
                            fpath.clone(),
                            format!(
                                "length {len} runs past the end of the {} ({left} bytes left)",
                                msg.name()
                            ),
                        )
                    })?;
                let stop = body + len_usize;
                match known {
                    Some((_, Field::Message(sub))) => walk(buf, body, stop, sub, &fpath)?,
                    Some((_, Field::Str)) => {
                        if let Err(e) = std::str::from_utf8(&buf[body..stop]) {
                            return Err(Located {
                                offset: body + e.valid_up_to(),
                                field: fpath,
                                message: "a string field is not valid UTF-8".to_string(),
                            });
                        }
                    }
                    Some((_, Field::Bytes | Field::Varint { repeated: true })) | None => {}
                    Some((_, f)) => return Err(expect(kind_name(f))),
                }
                pos = stop;
            }
            _ => {
                return Err(err(
                    fpath,
                    format!(
                        "wire type {wt} ({}) is not used by xplane.proto (key 0x{key:x})",
                        wire_name(wt)
                    ),
                ))
            }
        }
    }
    Ok(())
}

fn kind_name(f: Field) -> &'static str {
    match f {
        Field::Varint { .. } => "an integer (varint)",
        Field::Fixed64 => "a double (fixed64)",
        Field::Str => "a string (length-delimited)",
        Field::Bytes => "bytes (length-delimited)",
        Field::Message(_) => "a message (length-delimited)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_offset_and_field() {
        // XSpace { planes: XPlane { name: "ab" } } with the plane's length one too long.
        let good = [0x0a, 0x04, 0x12, 0x02, b'a', b'b'];
        assert_eq!(locate(&good), None);
        let long = [0x0a, 0x05, 0x12, 0x02, b'a', b'b'];
        let e = locate(&long).unwrap();
        assert_eq!(e.offset, 0);
        assert_eq!(e.field, "XSpace.planes[0]");
        assert!(e.message.contains("length 5"), "{}", e.message);
        // The plane's name has the wrong wire type (varint).
        let wrong = [0x0a, 0x02, 0x10, 0x01];
        let e = locate(&wrong).unwrap();
        assert_eq!((e.offset, e.field.as_str()), (2, "XSpace.planes[0].name"));
        assert!(e.message.contains("expected a string"), "{}", e.message);
        // Truncated key.
        let e = locate(&[0x0a, 0x01, 0x80]).unwrap();
        assert_eq!(e.offset, 2);
        // Invalid UTF-8 in a name.
        let e = locate(&[0x0a, 0x03, 0x12, 0x01, 0xff]).unwrap();
        assert_eq!((e.offset, e.message.contains("UTF-8")), (4, true));
        // Group wire types and field 0.
        assert!(locate(&[0x0b]).unwrap().message.contains("start-group"));
        assert!(locate(&[0x00]).unwrap().message.contains("field number 0"));
    }
}

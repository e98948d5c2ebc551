//! JSON output: the stable analysis record (`docs/json-schema.md`) and device specs.

use crate::devices::DeviceRow;
use rooftop_core::analysis::Analysis;
use rooftop_core::device::DeviceSpec;
use rooftop_core::schema::analysis::AnalysisRecord;
use serde_json::ser::Formatter;
use std::io::{self, Write};

/// serde_json's pretty layout (`to_string_pretty`: two-space indent, `": "` after a
/// key, an empty array or object as `[]` / `{}`), byte for byte, with each line break
/// and its indent written at once: serde_json's own formatter makes one write for the
/// line break and one per level of indent, and a large report has millions of lines.
#[derive(Debug, Default)]
pub struct Pretty {
    level: usize,
    has_value: bool,
}

/// `,` then a line break and the indent of [`INDENT_AT_ONCE`] levels.
const BREAK: [u8; 2 + 2 * INDENT_AT_ONCE] = {
    let mut b = [b' '; 2 + 2 * INDENT_AT_ONCE];
    b[0] = b',';
    b[1] = b'\n';
    b
};
/// Levels of nesting whose indent is one write; deeper ones are written a level at a
/// time.
const INDENT_AT_ONCE: usize = 32;

impl Pretty {
    /// A line break (after a comma unless `first`) and the current indent.
    #[inline]
    fn line<W: ?Sized + Write>(&self, w: &mut W, first: bool) -> io::Result<()> {
        let from = usize::from(first);
        if self.level <= INDENT_AT_ONCE {
            return w.write_all(&BREAK[from..2 + 2 * self.level]);
        }
        w.write_all(&BREAK[from..2])?;
        (0..self.level).try_for_each(|_| w.write_all(b"  "))
    }

    #[inline]
    fn open<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(bracket)
    }

    #[inline]
    fn close<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.line(w, true)?;
        }
        w.write_all(bracket)
    }
}

impl Formatter for Pretty {
    #[inline]
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[")
    }

    #[inline]
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]")
    }

    #[inline]
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.line(w, first)
    }

    #[inline]
    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    #[inline]
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{")
    }

    #[inline]
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}")
    }

    #[inline]
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.line(w, first)
    }

    #[inline]
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    #[inline]
    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

impl Pretty {
    /// The formatter for a value written as a member at depth `level` (`0`: the whole
    /// document; `1`: a member of the top-level object or array).
    pub(crate) fn at(level: usize) -> Pretty {
        Pretty { level, has_value: false }
    }
}

/// An object written member by member in [`Pretty`]'s layout, byte for byte
/// what serde writes for the same value, for values whose serde path costs more than
/// their bytes (the critical path's events: most of a report's text). A member is a
/// value serialised through serde at its depth ([`Members::field`]) or written by the
/// caller after [`Members::key`].
pub(crate) struct Members<'w, W: ?Sized> {
    w: &'w mut W,
    /// The depth of the members (the container's own plus one).
    level: usize,
    first: bool,
}

impl<'w, W: ?Sized + Write> Members<'w, W> {
    /// Writes `{`; `level`: the depth the object itself is at.
    pub(crate) fn object(w: &'w mut W, level: usize) -> io::Result<Self> {
        w.write_all(b"{")?;
        Ok(Members { w, level: level + 1, first: true })
    }

    /// The depth of the members.
    pub(crate) fn level(&self) -> usize {
        self.level
    }

    /// The next member's line break and indent.
    fn element(&mut self) -> io::Result<&mut W> {
        Pretty::at(self.level).line(self.w, self.first)?;
        self.first = false;
        Ok(self.w)
    }

    /// The next member's line break, indent and `"key": `; the caller writes the value.
    /// `key` is one of our own field names: plain ASCII, nothing to escape.
    pub(crate) fn key(&mut self, key: &str) -> io::Result<&mut W> {
        debug_assert!(key.bytes().all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\'));
        self.element()?;
        self.w.write_all(b"\"")?;
        self.w.write_all(key.as_bytes())?;
        self.w.write_all(b"\": ")?;
        Ok(self.w)
    }

    /// A member whose value serde writes.
    pub(crate) fn field<T: serde::Serialize + ?Sized>(
        &mut self,
        key: &str,
        v: &T,
    ) -> io::Result<()> {
        let level = self.level;
        let w = self.key(key)?;
        v.serialize(&mut serde_json::Serializer::with_formatter(w, Pretty::at(level)))?;
        Ok(())
    }

    /// A member whose value is the string `s` ([`write_str`]).
    pub(crate) fn str_field(&mut self, key: &str, s: &str) -> io::Result<()> {
        write_str(self.key(key)?, s)
    }

    /// A member whose value is the string `s`, or `null`.
    pub(crate) fn opt_str_field(&mut self, key: &str, s: Option<&str>) -> io::Result<()> {
        match s {
            Some(s) => self.str_field(key, s),
            None => self.key(key)?.write_all(b"null"),
        }
    }

    /// Writes the closing brace (on a line of its own unless the object is empty).
    pub(crate) fn end(self) -> io::Result<()> {
        if !self.first {
            Pretty::at(self.level - 1).line(self.w, true)?;
        }
        self.w.write_all(b"}")
    }
}

/// `s` as a JSON string, byte for byte what serde writes (which escapes the control
/// characters, `"` and `\`, nothing else): a string without any of them, as nearly
/// every one is, is written as it is after one pass over its bytes that the compiler
/// vectorises, where serde looks each byte up in its escape table; any other through
/// serde.
pub(crate) fn write_str<W: ?Sized + Write>(w: &mut W, s: &str) -> io::Result<()> {
    // Branch-free, so that the pass is vectorised.
    let escapes = s
        .bytes()
        .fold(0u8, |n, b| n | u8::from(b < 0x20) | u8::from(b == b'"') | u8::from(b == b'\\'));
    let plain = escapes == 0;
    if plain {
        w.write_all(b"\"")?;
        w.write_all(s.as_bytes())?;
        w.write_all(b"\"")
    } else {
        serde::Serialize::serialize(s, &mut serde_json::Serializer::new(w))?;
        Ok(())
    }
}

/// `items` as an array value at depth `level` in [`Pretty`]'s layout, each element
/// written by `write(item, w, at)` at depth `at`: what [`array_on_pool`] writes, in
/// line (for the short arrays inside one record).
pub(crate) fn array<'a, T: 'a, W: ?Sized + Write>(
    w: &mut W,
    level: usize,
    items: &'a [T],
    write: impl Fn(&'a T, &mut W, usize) -> io::Result<()>,
) -> io::Result<()> {
    if items.is_empty() {
        return w.write_all(b"[]");
    }
    w.write_all(b"[")?;
    let element = Pretty::at(level + 1);
    for (i, item) in items.iter().enumerate() {
        element.line(w, i == 0)?;
        write(item, w, level + 1)?;
    }
    Pretty::at(level).line(w, true)?;
    w.write_all(b"]")
}

/// Elements rendered per task at most by [`array_on_pool`].
const ELEMENTS_PER_TASK: usize = 512;

/// `items` as an array value at depth `level` in [`Pretty`]'s layout, each element
/// written by `write(item, out, at)`: its own text at depth `at` (what serde writes for
/// it there), appended to `out`. Byte for byte what serde writes for the whole array
/// when each element is. Runs of elements are rendered on the thread pool (idle while a
/// report is written), at most [`ELEMENTS_PER_TASK`] per task, and written in order:
/// what is held at once is a run per thread, not the array's text.
pub(crate) fn array_on_pool<'a, T, W>(
    w: &mut W,
    level: usize,
    items: &'a [T],
    write: impl Fn(&'a T, &mut Vec<u8>, usize) -> io::Result<()> + Sync,
) -> io::Result<()>
where
    T: Sync,
    W: Write + ?Sized,
{
    if items.is_empty() {
        return w.write_all(b"[]");
    }
    w.write_all(b"[")?;
    let element = Pretty::at(level + 1);
    let render = |start: usize, run: &'a [T], out: &mut Vec<u8>| {
        for (j, item) in run.iter().enumerate() {
            element.line(out, start + j == 0)?;
            write(item, out, level + 1)?;
        }
        Ok(())
    };
    runs_on_pool(items, ELEMENTS_PER_TASK, render, |part| w.write_all(part))?;
    Pretty::at(level).line(w, true)?;
    w.write_all(b"]")
}

/// `items` rendered in runs on the thread pool (idle while a report is written) and
/// handed to `emit` in their order: `render(start, run, out)` appends the text of `run`,
/// the items from index `start` on, at most `most` of them, to `out`. What is held at
/// once is a run per thread, not the whole text.
pub(crate) fn runs_on_pool<'a, T: Sync>(
    items: &'a [T],
    most: usize,
    render: impl Fn(usize, &'a [T], &mut Vec<u8>) -> io::Result<()> + Sync,
    mut emit: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<()> {
    use rayon::prelude::*;
    let threads = rayon::current_num_threads().max(1);
    // One run per thread, of at most `most` items.
    let per_task = items.len().div_ceil(threads).clamp(1, most.max(1));
    let group = per_task * threads;
    for (g, items) in items.chunks(group).enumerate() {
        let parts: Vec<io::Result<Vec<u8>>> = items
            .par_chunks(per_task)
            .enumerate()
            .map(|(i, run)| {
                let mut out = Vec::new();
                render(g * group + i * per_task, run, &mut out)?;
                Ok(out)
            })
            .collect();
        for part in parts {
            emit(&part?)?;
        }
    }
    Ok(())
}

/// Writes `v` as pretty JSON ([`Pretty`]) and a final line break to `w`.
pub fn write_pretty<T: serde::Serialize + ?Sized, W: Write>(v: &T, mut w: W) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(&mut w, Pretty::default());
    v.serialize(&mut ser)?;
    w.write_all(b"\n")
}

/// `v` as pretty JSON ([`write_pretty`]), ending with a line break.
pub fn pretty<T: serde::Serialize + ?Sized>(v: &T) -> String {
    written(|out| write_pretty(v, out))
}

/// What `write` writes to memory, as text.
pub(crate) fn written(write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
    let mut out = Vec::new();
    // Serialising our own plain structs cannot fail (no maps with non-string keys, no
    // non-finite floats: those are mapped to null before), nor can writing to memory.
    if let Err(e) = write(&mut out) {
        return format!("{{\"error\":\"{e}\"}}\n");
    }
    // serde_json writes UTF-8 only.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// One analysis as an object, several as an array.
pub fn analyses(items: &[Analysis]) -> String {
    let records: Vec<AnalysisRecord> = items.iter().map(AnalysisRecord::from_analysis).collect();
    match records.as_slice() {
        [one] => pretty(one),
        many => pretty(&many),
    }
}

/// The device list.
pub fn devices(devs: &[DeviceSpec]) -> String {
    let rows: Vec<DeviceRow> = devs.iter().map(DeviceRow::of).collect();
    pretty(&rows)
}

/// One device with every figure and its source: the whole spec, plus `figures`, the
/// lines `rooftop devices ID` prints, each with its own source, confidence and provenance.
pub fn device(d: &DeviceSpec) -> String {
    #[derive(serde::Serialize)]
    struct Detail<'a> {
        #[serde(flatten)]
        spec: &'a DeviceSpec,
        figures: Vec<crate::rows::DeviceFigure>,
    }
    pretty(&Detail { spec: d, figures: crate::rows::device_figures(d) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A string written here is serde's: every ASCII character (the control characters,
    /// the quote, the backslash, DEL) and a few beyond, alone, inside text and doubled.
    #[test]
    fn strings_written_here_are_serdes() {
        let chars = (0u8..0x80).map(char::from).chain(['é', '\u{85}', '\u{2028}', '😀']);
        for c in chars {
            for s in [c.to_string(), format!("a{c}b"), format!("{c}{c}"), String::new()] {
                let mut got = Vec::new();
                write_str(&mut got, &s).unwrap();
                assert_eq!(String::from_utf8(got).unwrap(), serde_json::to_string(&s).unwrap());
            }
        }
    }

    /// Byte for byte what serde_json's own pretty printer writes: empty and nested
    /// containers, strings that need escapes, numbers, and nesting deeper than the
    /// indent written at once.
    #[test]
    fn pretty_writes_what_serde_json_writes() {
        let mut deep = json!([1, {"a": []}]);
        for i in 0..(INDENT_AT_ONCE + 5) {
            deep = if i % 2 == 0 { json!([deep, {}]) } else { json!({ "k": deep, "e": [] }) };
        }
        let values = [
            json!(null),
            json!([]),
            json!({}),
            json!([[], {}, [[]], {"x": {}}]),
            json!({"name": "a\"b\\c\n\u{1}é", "ts": 9_716_533.018, "n": -3, "ok": true}),
            json!([1.5e300, 0.1, -0.0, 12_345_678_901_234_567_u64]),
            deep,
        ];
        for v in &values {
            let want = serde_json::to_string_pretty(v).unwrap() + "\n";
            assert_eq!(pretty(v), want);
            let mut streamed = Vec::new();
            write_pretty(v, &mut streamed).unwrap();
            assert_eq!(String::from_utf8(streamed).unwrap(), want);
        }
    }
}

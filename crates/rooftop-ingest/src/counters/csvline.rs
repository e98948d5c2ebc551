//! CSV line splitting and number parsing shared by the Nsight Compute and Nsight Systems
//! CSV readers: RFC 4180 quoting, digit grouping accepted only in its regular form.

use std::borrow::Cow;

/// Splits one CSV line (RFC 4180 quoting, `""` inside quotes). `None` when a quote is
/// left open. A quote may open or close anywhere in a field (`a"b,c"d` is `ab,cd`), as
/// the readers have always taken it. A field that is one stretch of the line (plain, or
/// all of it inside one pair of quotes: what every tool writes) is borrowed from it;
/// only a field with `""` in it, or quotes inside it, is built anew.
pub(crate) fn split_csv_line(line: &str) -> Option<Vec<Cow<'_, str>>> {
    let mut fields = Vec::new();
    let mut at = 0;
    loop {
        let (field, next) = match simple_field(line, at) {
            Some(found) => found,
            None => field_by_bytes(line, at)?,
        };
        fields.push(field);
        match next {
            Some(n) => at = n,
            None => return Some(fields),
        }
    }
}

/// The field of `line` that starts at byte `at` when it is the common kind: plain up to a
/// comma or the end, or all of it inside one pair of quotes with a comma or the end
/// after them. With where the next field starts (`None`: this was the last); `None` for
/// any other field, which [`field_by_bytes`] takes.
#[inline]
fn simple_field(line: &str, at: usize) -> Option<(Cow<'_, str>, Option<usize>)> {
    let b = line.as_bytes();
    let ends_at = |i: usize| match b.get(i) {
        None => Some(None),
        Some(b',') => Some(Some(i + 1)),
        Some(_) => None,
    };
    if b.get(at) == Some(&b'"') {
        let close = at + 1 + memchr::memchr(b'"', b.get(at + 1..)?)?;
        let next = ends_at(close + 1)?;
        Some((Cow::Borrowed(line.get(at + 1..close)?), next))
    } else {
        let rest = b.get(at..)?;
        match memchr::memchr2(b',', b'"', rest) {
            None => Some((Cow::Borrowed(line.get(at..)?), None)),
            Some(i) if rest[i] == b',' => {
                Some((Cow::Borrowed(line.get(at..at + i)?), Some(at + i + 1)))
            }
            Some(_) => None,
        }
    }
}

/// The field of `line` that starts at byte `at`, a byte at a time: quotes may open or
/// close anywhere in it, and `""` inside quotes is one quote. With where the next field
/// starts (`None`: this was the last); `None` when a quote is left open.
fn field_by_bytes(line: &str, at: usize) -> Option<(Cow<'_, str>, Option<usize>)> {
    let b = line.as_bytes();
    let mut field = Field::default();
    let mut quoted = false;
    // Start of the stretch of the line not yet added to `field`.
    let mut seg = at;
    let mut i = at;
    while let Some(&c) = b.get(i) {
        match c {
            b'"' if quoted && b.get(i + 1) == Some(&b'"') => {
                // `""`: one quote, the first of the two.
                field.add(line.get(seg..=i));
                i += 2;
                seg = i;
                continue;
            }
            b'"' => {
                field.add(line.get(seg..i));
                quoted = !quoted;
                seg = i + 1;
            }
            b',' if !quoted => {
                field.add(line.get(seg..i));
                return Some((field.take(), Some(i + 1)));
            }
            _ => {}
        }
        i += 1;
    }
    if quoted {
        return None;
    }
    field.add(line.get(seg..));
    Some((field.take(), None))
}

/// One field of [`split_csv_line`] as it is assembled: the first stretch of the line it
/// holds, borrowed, and a copy only when a second stretch follows.
#[derive(Default)]
struct Field<'a> {
    first: Option<&'a str>,
    joined: Option<String>,
}

impl<'a> Field<'a> {
    /// Appends a stretch (the splitter cuts only at ASCII bytes, so `Some` always).
    fn add(&mut self, part: Option<&'a str>) {
        let Some(part) = part.filter(|p| !p.is_empty()) else { return };
        match (&mut self.joined, self.first) {
            (Some(joined), _) => joined.push_str(part),
            (None, None) => self.first = Some(part),
            (None, Some(first)) => self.joined = Some([first, part].concat()),
        }
    }

    fn take(&mut self) -> Cow<'a, str> {
        let f = std::mem::take(self);
        match f.joined {
            Some(joined) => Cow::Owned(joined),
            None => Cow::Borrowed(f.first.unwrap_or_default()),
        }
    }
}

/// `s.trim()`, without its Unicode tables when `s` starts and ends with a printable
/// ASCII byte (as nearly every field does): whitespace, Unicode's included, is either
/// ASCII at or below the space or a character of more than one byte.
#[inline]
pub(crate) fn trim(s: &str) -> &str {
    let printable = |b: Option<&u8>| b.is_some_and(|b| (b'!'..=b'~').contains(b));
    let b = s.as_bytes();
    if printable(b.first()) && printable(b.last()) {
        s
    } else {
        s.trim()
    }
}

/// Parses a finite number, accepting digit grouping with commas (`"1,215,000.50"`) only
/// in its regular form (groups of exactly three digits), so that a decimal comma
/// (`"93,83"`) is refused rather than misread.
pub(crate) fn parse_number(s: &str) -> Option<f64> {
    let s = trim(s);
    if s.is_empty() {
        return None;
    }
    let owned;
    let plain = if s.bytes().all(plain_byte) {
        // No comma either: the number as written.
        s
    } else if s.contains(',') {
        let (sign, body) = match s.strip_prefix('-') {
            Some(b) => ("-", b),
            None => ("", s.strip_prefix('+').unwrap_or(s)),
        };
        let (int, frac) = match body.split_once('.') {
            Some((i, f)) => (i, Some(f)),
            None => (body, None),
        };
        let mut groups = int.split(',');
        let head = groups.next()?;
        let ok_head = (1..=3).contains(&head.len()) && head.bytes().all(|b| b.is_ascii_digit());
        let mut rest = String::new();
        for g in groups {
            if g.len() != 3 || !g.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            rest.push_str(g);
        }
        if !ok_head {
            return None;
        }
        owned = match frac {
            Some(f) => format!("{sign}{head}{rest}.{f}"),
            None => format!("{sign}{head}{rest}"),
        };
        if !owned.bytes().all(plain_byte) {
            return None;
        }
        owned.as_str()
    } else {
        return None;
    };
    plain.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// A byte of plain decimal notation (Rust's parser would also accept "inf" and "NaN").
fn plain_byte(b: u8) -> bool {
    b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E')
}

/// Parses a non-negative integer (digit grouping allowed).
pub(crate) fn parse_u64(s: &str) -> Option<u64> {
    let v = parse_number(s)?;
    (v >= 0.0 && v.fract() == 0.0 && v < 1.8e19).then_some(v as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_with_grouping() {
        assert_eq!(parse_number("4,096"), Some(4096.0));
        assert_eq!(parse_number("1,215,000,000.00"), Some(1_215_000_000.0));
        assert_eq!(parse_number("-1,000"), Some(-1000.0));
        assert_eq!(parse_number("93.83"), Some(93.83));
        assert_eq!(parse_number("93,83"), None);
        assert_eq!(parse_number("1,0000"), None);
        assert_eq!(parse_number("inf"), None);
        assert_eq!(parse_number("NaN"), None);
        assert_eq!(parse_number(""), None);
        assert_eq!(parse_number("1e3"), Some(1000.0));
    }

    /// The splitter as it was before fields were borrowed (a character at a time, every
    /// field a new `String`): the oracle the borrowing one is checked against.
    fn split_by_chars(line: &str) -> Option<Vec<String>> {
        let mut fields = Vec::new();
        let mut cur = String::new();
        let mut quoted = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if quoted {
                if c == '"' {
                    if chars.peek() == Some(&'"') {
                        cur.push('"');
                        chars.next();
                    } else {
                        quoted = false;
                    }
                } else {
                    cur.push(c);
                }
            } else if c == '"' {
                quoted = true;
            } else if c == ',' {
                fields.push(std::mem::take(&mut cur));
            } else {
                cur.push(c);
            }
        }
        if quoted {
            return None;
        }
        fields.push(cur);
        Some(fields)
    }

    proptest::proptest! {
        #[test]
        fn borrowed_fields_are_the_characters_split(line in "[a\\\",é ]{0,24}") {
            let new = split_csv_line(&line).map(|f| f.into_iter().map(Cow::into_owned).collect());
            proptest::prop_assert_eq!(new, split_by_chars(&line));
        }

        /// The fast trim is `str::trim` on any text: ASCII and Unicode whitespace (the
        /// vertical tab, NEL, no-break and ideographic spaces) at either end or none,
        /// printable ASCII and DEL, a multi-byte letter at an end.
        #[test]
        fn trim_is_strs_trim(s in "[ \t\n\x0b\x0c\r\x7f!~1,é\u{85}\u{a0}\u{2003}\u{3000}]{0,6}") {
            proptest::prop_assert_eq!(trim(&s), s.trim());
        }
    }

    #[test]
    fn plain_and_quoted_fields_are_borrowed() {
        let line = r#"1,"sm__cycles.sum","a ""b""",x"y"z,"#;
        let f = split_csv_line(line).unwrap();
        assert_eq!(f, vec!["1", "sm__cycles.sum", "a \"b\"", "xyz", ""]);
        let borrowed: Vec<bool> = f.iter().map(|c| matches!(c, Cow::Borrowed(_))).collect();
        assert_eq!(borrowed, [true, true, false, false, true]);
    }

    #[test]
    fn csv_lines() {
        assert_eq!(split_csv_line(r#""a","b, c","d""e""#).unwrap(), vec!["a", "b, c", "d\"e"]);
        assert_eq!(split_csv_line("a,,b").unwrap(), vec!["a", "", "b"]);
        assert!(split_csv_line(r#""open"#).is_none());
    }
}

//! CSV line splitting and number parsing shared by the Nsight Compute and Nsight Systems
//! CSV readers: RFC 4180 quoting, digit grouping accepted only in its regular form.

/// Splits one CSV line (RFC 4180 quoting, `""` inside quotes). `None` when a quote is
/// left open.
pub(crate) fn split_csv_line(line: &str) -> Option<Vec<String>> {
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

/// Parses a finite number, accepting digit grouping with commas (`"1,215,000.50"`) only
/// in its regular form (groups of exactly three digits), so that a decimal comma
/// (`"93,83"`) is refused rather than misread.
pub(crate) fn parse_number(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let owned;
    let plain = if s.contains(',') {
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
        owned.as_str()
    } else {
        s
    };
    // Only plain decimal notation: Rust would also accept "inf" and "NaN".
    if !plain.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E')) {
        return None;
    }
    plain.parse::<f64>().ok().filter(|v| v.is_finite())
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

    #[test]
    fn csv_lines() {
        assert_eq!(split_csv_line(r#""a","b, c","d""e""#).unwrap(), vec!["a", "b, c", "d\"e"]);
        assert_eq!(split_csv_line("a,,b").unwrap(), vec!["a", "", "b"]);
        assert!(split_csv_line(r#""open"#).is_none());
    }
}
